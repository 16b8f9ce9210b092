"""Random bytes and JSON at the command lines (`job`, `starter.py`), in-process: every invocation ends with a
clear one-line error and a non-zero exit (or does what it was validly asked), never a traceback or an
"unexpected"/"internal" error, and never changes a run it was not validly asked to change.

The same property at the HTTP API (random paths, methods, headers and bodies: a 4xx, no changed run), over
real HTTP for both engines: tests/ops/test_properties_http.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import uuid
from typing import Any
from unittest import mock

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import starter
from duragent._baseline.store import Store
from duragent._ops.cli import job as job_cli
from duragent._stores.ledger import EffectsLedger
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput
from tests.conftest import TEST_AGENTS
from tests.support.baseline_helpers import ROOT, eventually
from tests.support.scripted_runs import temporal_in_background

# Processes of its own: the command lines.
pytestmark = pytest.mark.system

# Hostile values: control characters, shell and SQL metacharacters, paths, huge strings, JSON of every shape.
junk_text = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", "-", "--", "'; DROP TABLE runs;--", "../../etc/passwd", "\x1b[2J", "\x00", "%s%n", "{"]),
    st.binary(max_size=30).map(lambda b: b.decode("latin-1")),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=10),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
        max_leaves=8,
    ).map(lambda v: json.dumps(v, allow_nan=True)),
    st.integers(1000, 20_000).map(lambda n: "x" * n),
)


def _argv(command: str, run_id: str, flags: list[str]) -> Any:
    """The command, then the run id or junk, then flags each followed (usually) by junk."""
    pair = st.tuples(st.sampled_from(flags), st.one_of(junk_text, st.none()))
    return st.tuples(st.one_of(st.just(run_id), junk_text), st.lists(pair, max_size=5)).map(
        lambda drawn: [
            command,
            drawn[0],
            *(token for flag, value in drawn[1] for token in ([flag] if value is None else [flag, value])),
        ]
    )


def _decision(command: str, run_id: str, *extra: str) -> Any:
    """A decision that gets past the parser: the run, a name, a hash or call of junk."""
    return st.tuples(junk_text, junk_text, junk_text).map(
        lambda v: [command, run_id, "--by", v[0] or "x", "--hash", v[1] or "0", "--call", v[2] or "1.1", *extra]
    )


def _quiet(call: Any) -> tuple[int, str]:
    """Run `call()` capturing stdout and stderr; argparse's exits count as exit codes."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = int(call())
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
    return code, err.getvalue()


def _clear(code: int, err: str) -> None:
    event(f"exit {code}")
    assert "Traceback" not in err, err
    assert "internal error" not in err and "unexpected " not in err, err  # the boundary's catch-all: a bug
    if code != 0:
        assert err.strip(), "a failure says why"


# -- job -----------------------------------------------------------------------------------------------------

JOB_FLAGS = ["--call", "--by", "--hash", "--reason", "--json", "--agents", "--interval", "--id", "--task", "--option"]


@pytest.fixture(scope="module")
def job_store(tmp_path_factory: pytest.TempPathFactory):
    """A finished run and a run waiting for an approval (a real `job run` process), in one store."""
    tmp = tmp_path_factory.mktemp("job-fuzz")
    common = ["--db", str(tmp / "baseline.db"), "--ledger", str(tmp / "ledger.db")]
    assert job_cli.main(["run", "--agent", "billing", "--id", "done", *common]) == 0
    waiting = subprocess.Popen(
        [sys.executable, "-m", "duragent._ops.cli.job", "run", "--agent", "refund", "--id", "waits", *common],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    store = Store(tmp / "baseline.db")
    try:
        eventually(lambda: store.query("SELECT 1 FROM approvals WHERE run_id = 'waits'"), 60, "the approval")
        yield tmp, common, store
    finally:
        waiting.kill()
        waiting.wait(10)
        store.close()


def _snapshot(store: Store) -> Any:
    return (
        [dict(r) for r in store.query("SELECT * FROM runs WHERE run_id = 'done'")],
        [dict(r) for r in store.query("SELECT run_id, step, status, output_ref FROM steps ORDER BY run_id, step")],
        [dict(r) for r in store.query("SELECT * FROM approvals")],
        [r[0] for r in store.query("SELECT event FROM approval_audit WHERE event != 'rejected'")],
    )


@given(
    argv=st.one_of(
        _decision("approve", "waits"),
        _decision("deny", "waits"),
        _argv("approve", "waits", [*JOB_FLAGS]),
        _argv("deny", "waits", JOB_FLAGS),
        _argv("status", "done", JOB_FLAGS),
        _argv("effects", "done", JOB_FLAGS),
        _argv("resume", "done", JOB_FLAGS),
        st.lists(junk_text, max_size=4),
    )
)
def test_job_answers_junk_with_a_clear_error_and_changes_no_run(job_store, argv) -> None:
    _, common, store = job_store
    before = _snapshot(store)
    with mock.patch.dict(os.environ, {"BASELINE_DEBUG": ""}):
        code, err = _quiet(lambda: job_cli.main([*argv, *common]))
    _clear(code, err)
    if argv[:1] in (["approve"], ["deny"], ["resume"]):
        assert code != 0  # nothing here is a decision a person reviewed, nor a resumable run
    assert _snapshot(store) == before


# -- starter.py ------------------------------------------------------------------------------------------------

STARTER_FLAGS = ["--call", "--by", "--hash", "--reason", "--json", "--key-file", "--option", "--task", "--interval"]


@pytest.fixture(scope="module")
def waiting_run(tmp_path_factory: pytest.TempPathFactory):
    """A run waiting for an approval on a time-skipping server of this module's own (the CLI makes its own
    event loops, so it cannot share the session's)."""
    ledger = EffectsLedger(tmp_path_factory.mktemp("starter-fuzz") / "ledger.db")
    with temporal_in_background(ledger, "starter-fuzz", TEST_AGENTS) as (loop, env):
        handle = loop.run(
            env.client.start_workflow(
                AgentWorkflow.run,
                AgentInput(agent="refund"),
                id=f"fuzz-{uuid.uuid4().hex[:8]}",
                task_queue="starter-fuzz",
            )
        )

        async def pending() -> Any:
            return (await handle.query(AgentWorkflow.approvals)).pending

        eventually(lambda: loop.run(pending()), 60, "the approval request")
        try:
            yield loop, env, handle, ledger
        finally:
            loop.run(handle.terminate())


@settings(max_examples=60 if os.environ.get("HYPOTHESIS_PROFILE") == "deep" else 12)
@given(data=st.data())
def test_starter_answers_junk_with_a_clear_error_and_changes_no_run(waiting_run, data) -> None:
    loop, env, handle, ledger = waiting_run
    argv = data.draw(
        st.one_of(
            _decision("approve", handle.id),
            _decision("deny", handle.id),
            _argv("approve", handle.id, STARTER_FLAGS),
            _argv("deny", handle.id, STARTER_FLAGS),
            _argv("status", handle.id, STARTER_FLAGS),
            _argv("run", "billing", STARTER_FLAGS),
            st.lists(junk_text, max_size=4),
        )
    )
    environment = {
        "TEMPORAL_ADDRESS": env.client.service_client.config.target_host,
        "TEMPORAL_TASK_QUEUE": "starter-fuzz",
        "AGENT_CODEC_KEYS": "",
    }
    with mock.patch.dict(os.environ, environment):
        code, err = _quiet(lambda: starter.main(argv))
    _clear(code, err)
    view = loop.run(handle.query(AgentWorkflow.approvals))
    assert [e.event for e in view.audit if e.event != "rejected"] == []  # nobody approved or denied
    assert len(view.pending) == 1 and ledger.effects(handle.id) == []
