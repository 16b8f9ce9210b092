"""The workers' own keys (`AGENT_WORKER_KEYS` / `_FILE`, duragent/_config/worker_keys.py): the first signs, every one
verifies; a seal binds what is scheduled, by which run and execution, for what, with which input; a bad key is
one clear error that never contains key material, and the worker refuses to start with it."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

import pytest

from duragent._config.settings import ROOT, Settings
from duragent._config.worker_keys import WorkerKeyError, WorkerKeys, load_worker_keys, sealed_text

OLD, NEW = os.urandom(32), os.urandom(32)
TEXT = sealed_text("activity", "run_tool", "run-1", "exec-1", "", [{"call": {"name": "refund"}}])


def b64(key: bytes) -> str:
    return base64.b64encode(key).decode()


def test_the_first_key_signs_and_every_key_verifies():
    old_seal = WorkerKeys((OLD,)).seal(TEXT)
    rotated = WorkerKeys((NEW, OLD))
    assert rotated.seal(TEXT) != old_seal  # the new key seals from the rotation on
    assert rotated.verifies(old_seal, TEXT)  # what the old key sealed still opens, while it is listed
    assert not WorkerKeys((NEW,)).verifies(old_seal, TEXT)  # dropped: refused
    assert not rotated.verifies(None, TEXT) and not rotated.verifies("", TEXT)


@pytest.mark.parametrize(
    "changed",
    [
        ("child", "run_tool", "run-1", "exec-1", "", [{"call": {"name": "refund"}}]),
        ("activity", "compensate", "run-1", "exec-1", "", [{"call": {"name": "refund"}}]),
        ("activity", "run_tool", "run-2", "exec-1", "", [{"call": {"name": "refund"}}]),
        ("activity", "run_tool", "run-1", "exec-2", "", [{"call": {"name": "refund"}}]),
        ("activity", "run_tool", "run-1", "exec-1", "child-1", [{"call": {"name": "refund"}}]),
        ("activity", "run_tool", "run-1", "exec-1", "", [{"call": {"name": "refund", "arguments": {}}}]),
    ],
    ids=["what", "name", "run", "execution", "target", "input"],
)
def test_a_seal_opens_only_what_it_was_made_for(changed):
    keys = WorkerKeys((OLD,))
    assert keys.verifies(keys.seal(TEXT), TEXT)
    assert not keys.verifies(keys.seal(TEXT), sealed_text(*changed))


def test_keys_come_from_the_variable_or_its_file_the_signing_key_first(tmp_path: Path):
    assert load_worker_keys(Settings(worker_keys=None, worker_keys_file=None)) is None  # unset: no sealing
    assert load_worker_keys(Settings(worker_keys=f"{b64(NEW)}, {b64(OLD)}")) == WorkerKeys((NEW, OLD))
    keys = tmp_path / "worker_keys"
    keys.write_text(f"# the signing key first\n{b64(NEW)}\n{b64(OLD)}\n")
    assert load_worker_keys(Settings(worker_keys=None, worker_keys_file=keys)) == WorkerKeys((NEW, OLD))


@pytest.mark.parametrize(
    ("value", "file_text", "message"),
    [
        ("c2hvcnQ=", None, "worker key 1 is 5 bytes; at least 32 are needed"),
        ("not base64!", None, "worker key entry 1 is not base64"),
        (b64(OLD), b64(NEW), "set AGENT_WORKER_KEYS or AGENT_WORKER_KEYS_FILE, not both"),
        (None, "# nothing yet\n", "holds no worker key"),
    ],
    ids=["short", "not-base64", "both", "empty-file"],
)
def test_a_bad_key_is_one_clear_error_without_key_material(tmp_path: Path, value, file_text, message):
    path = None
    if file_text is not None:
        path = tmp_path / "worker_keys"
        path.write_text(file_text)
    with pytest.raises(WorkerKeyError, match=message) as bad:
        load_worker_keys(Settings(worker_keys=value, worker_keys_file=path))
    assert b64(OLD) not in str(bad.value) and b64(NEW) not in str(bad.value)


def test_keys_never_show_in_a_repr():
    keys = WorkerKeys((NEW, OLD))
    assert repr(keys) == "WorkerKeys(2 keys)"
    settings = Settings(worker_keys=b64(NEW))
    assert b64(NEW) not in repr(settings)


@pytest.mark.system  # starts worker.py
def test_the_worker_refuses_to_start_with_a_bad_key():
    environment = {**os.environ, "AGENT_WORKER_KEYS": "c2hvcnQ=", "TEMPORAL_ADDRESS": "127.0.0.1:1"}
    done = subprocess.run(
        [sys.executable, str(ROOT / "worker.py")], env=environment, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.strip() == "error: AGENT_WORKER_KEYS: worker key 1 is 5 bytes; at least 32 are needed"


# What a stranger who schedules a task may put in its `agent-seal` header: any bytes.
MALFORMED = [
    b"\xff\xfe".decode(errors="replace"),  # non-ASCII, as the header's bytes are read
    "v1:" + "é" * 64,
    "\udcff" * 67,  # a lone surrogate
    "v1:abc",
    "v2:" + "0" * 64,
    "v1:" + "A" * 64,  # upper-case hex: not what a worker writes
    "v1:" + "0" * 64 + "\n",
    b"v1:" + b"0" * 64,  # bytes, not text
    12345,
]


@pytest.mark.parametrize("seal", MALFORMED, ids=range(len(MALFORMED)))
def test_a_malformed_seal_is_refused_never_raised(seal):
    keys = WorkerKeys((NEW, OLD))
    assert keys.verifies(seal, TEXT) is False
    genuine = keys.seal(TEXT)
    assert keys.verifies(genuine, TEXT) is True and keys.verifies(genuine.upper(), TEXT) is False


async def test_an_activity_whose_seal_header_is_not_ascii_is_refused_for_good_not_retried():
    """The review's case: a schedule whose `agent-seal` header holds non-ASCII bytes made the check raise
    TypeError, a retryable failure (retried under the stranger's own policy); it is the non-retryable refusal."""
    from temporalio.api.common.v1 import Payload
    from temporalio.exceptions import ApplicationError
    from temporalio.testing import ActivityEnvironment
    from temporalio.worker import ExecuteActivityInput

    from duragent._sealing import HEADER, Sealing

    acted: list[str] = []

    class Next:
        async def execute_activity(self, input: ExecuteActivityInput) -> str:
            acted.append("acted")
            return "done"

    verifying = Sealing(WorkerKeys((NEW,))).intercept_activity(Next())  # type: ignore[arg-type]
    forged = {HEADER: Payload(metadata={"encoding": b"binary/plain"}, data=b"v1:\xff\xfe" + b"0" * 62)}
    task = ExecuteActivityInput(fn=lambda: None, args=[], executor=None, headers=forged)

    with pytest.raises(ApplicationError) as refused:
        await ActivityEnvironment().run(verifying.execute_activity, task)
    assert refused.value.type == "CallerRefused" and refused.value.non_retryable
    assert acted == []
