"""`starter.py demo --model local` (`make demo-llm`) as users run it: a real subprocess on the real local
model, its runs accounted for, everything it started stopped — at its end or on SIGTERM/SIGHUP."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from duragent._ops.devstack import modelserver
from duragent._ops.devstack.devserver import free_port
from duragent._ops.devstack.modelserver import ModelServer
from duragent._stores.ledger import EffectsLedger
from tests.conftest import dev_settings
from tests.ops.test_cli import assert_one_clear_line, starter
from tests.temporal.test_shutdown import Command, stopped_cleanly

# Processes of its own: the demo, its server and worker.
pytestmark = pytest.mark.system


async def test_the_demo_on_the_local_model_runs_end_to_end_and_exits_zero(
    dev_env, task_queue: str, tmp_path: Path, local_model_server: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a model server answering at AGENT_LOCAL_MODEL_URL the demo uses it (as it uses the Temporal
    server that answers): three runs, each answered by the model, their tools called on its arguments."""
    settings = dev_settings(dev_env, task_queue, tmp_path)
    monkeypatch.setenv("AGENT_LOCAL_MODEL_URL", local_model_server.base_url)
    monkeypatch.setenv("AGENT_DATA_DIR", str(tmp_path))

    code, out, err = await starter("demo", "--model", "local", "--json", settings=settings, timeout=600)

    assert code == 0, err
    billing, refund, crash = json.loads(out)["runs"]
    ledger = EffectsLedger(settings.ledger_path)
    for run, tool in ((billing, "charge"), (refund, "refund"), (crash, "charge")):
        assert (run["stop"], run["trajectory"], run["effects"]) == ("answered", [tool], 1)
        assert run["output_tokens"] > 0 and run["cost"] == 0.0
        assert "/workflows/demo-llm-" in run["url"]
        [effect] = ledger.effects(run["run_id"])
        assert effect.tool == tool
    assert refund["audit"][0]["approver"] == "demo-approver"
    # The worker was killed during the answer's generation: that model call ran again, on another worker. (Once
    # more, usually; on a machine loaded far past its cores the new worker can miss the demo's 3-s heartbeat and
    # the call runs a third time: the charge is still made once, asserted above.)
    (first, killed), (attempt, replacement) = crash["model_attempts"]
    assert first == 1 and attempt >= 2 and killed != replacement
    assert "killed mid-generation" in crash["note"]


async def test_a_model_url_that_is_not_local_and_not_answering_is_one_line(
    dev_env, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = dev_settings(dev_env, task_queue, tmp_path)
    url = "http://192.0.2.1:8088/v1"  # TEST-NET-1: never routed
    monkeypatch.setenv("AGENT_LOCAL_MODEL_URL", url)

    code, _, err = await starter("demo", "--model", "local", settings=settings, timeout=120)

    assert code == 1
    assert_one_clear_line(err, f"no model server answers at AGENT_LOCAL_MODEL_URL={url}")


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[Command]:
    """`demo --model local` with a Temporal server and a model server of its own, on free ports."""
    if (reason := modelserver.missing()) is not None:
        pytest.skip(reason)
    env = {
        "TEMPORAL_ADDRESS": f"127.0.0.1:{free_port()}",
        "AGENT_LOCAL_MODEL_URL": f"http://127.0.0.1:{free_port()}/v1",
        "AGENT_DATA_DIR": str(tmp_path / "data"),
    }
    command = Command(["starter.py", "demo", "--model", "local"], env)
    yield command
    command.cleanup()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_the_demo_stops_the_model_server_it_started(demo: Command, sig: int) -> None:
    started = demo.wait_for("Model server pid")
    demo.wait_for("[billing]")  # the worker is up and a run on the model has started
    pid = int(started.split("Model server pid ", 1)[1].split()[0])
    assert pid in demo.seen

    stopped_cleanly(demo, sig)  # exit 130, nothing left: the model server, the worker, the Temporal server
