"""`starter.py` as users run it, against the real dev server: the client commands' `main` in this process (see
`starter`), the commands that serve or start servers, and a few others on purpose, as real subprocesses."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from duragent._config.settings import ROOT, Settings
from duragent._ops.devstack.devserver import free_port
from starter import main as starter_main
from tests.conftest import dev_settings, eventually, new_worker
from tests.support.in_process import run_main
from tests.support.processes import run_to_end_async

# Processes of its own: the command lines.
pytestmark = pytest.mark.system


# The commands a test may run in its own process (tests/support/in_process.py): clients of a server or of the
# stores, which start nothing and install no signal handler. Those that serve, start servers or stop on signals
# (`server`, `serve`, `demo`, `model-server`, `codec-server`) always run as processes.
IN_PROCESS = frozenset(
    {"run", "status", "result", "effects", "pending", "approve", "deny", "cancel", "facts", "prune", "archive"}
)


async def starter(
    *args: str,
    settings: Settings | None = None,
    timeout: float = 120,
    env: dict[str, str] | None = None,
    process: bool = False,
) -> tuple[int, str, str]:
    """`starter.py ARGS`: (exit code, stdout, stderr). `env`: its whole environment (default ours, with
    `settings` on top). A client command (`IN_PROCESS`) runs its `main` in this process, in a thread (it runs
    its own event loop), unless `process` asks for the real subprocess: a test that kills it, one told to
    SIGKILL itself, or one checking what only a process shows. The others always run as `python starter.py`;
    interrupted or past `timeout`, they get time to stop what they started (the demo's server and worker):
    tests/support/processes.py."""
    env = dict(os.environ) if env is None else env
    if settings is not None:
        env |= {
            "TEMPORAL_ADDRESS": settings.address,
            "TEMPORAL_NAMESPACE": settings.namespace,
            "TEMPORAL_TASK_QUEUE": settings.task_queue,
            "AGENT_LEDGER": str(settings.ledger_path),
        }
    if args and args[0] in IN_PROCESS and not process:
        return await asyncio.to_thread(run_main, starter_main, args, env)
    return await run_to_end_async([sys.executable, str(ROOT / "starter.py"), *args], timeout=timeout, env=env)


def assert_one_clear_line(err: str, expected: str) -> None:
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert expected in lines[0]


async def test_unknown_agent_is_one_line_and_exit_2():
    code, _, err = await starter("run", "no-such-agent", process=True)  # the exit code of a real process
    assert code == 2
    assert_one_clear_line(
        err, "unknown agent 'no-such-agent'; known: billing, billing-desk, courier, migration, refund, support, trip"
    )


async def test_unreachable_server_is_one_line_and_nonzero(tmp_path):
    settings = Settings(address=f"127.0.0.1:{free_port()}", ledger_path=tmp_path / "l.db")
    code, _, err = await starter("status", "some-run", settings=settings)
    assert code == 1
    assert_one_clear_line(err, f"cannot reach Temporal at {settings.address}")


async def test_run_status_result_effects_end_to_end(dev_env, task_queue, tmp_path, ledger):
    settings = dev_settings(dev_env, task_queue, tmp_path)
    async with new_worker(dev_env.client, task_queue, type(ledger)(settings.ledger_path)):
        code, out, err = await starter(
            "run", "billing", "--id", f"cli-{task_queue}", "--wait", "--json", settings=settings
        )
        assert code == 0, err
        ran = json.loads(out)
        assert ran["stop"] == "answered"
        assert ran["trajectory"] == ["charge"]
        assert ran["url"].endswith(f"/namespaces/default/workflows/cli-{task_queue}")

        code, out, err = await starter("status", f"cli-{task_queue}", "--json", settings=settings)
        assert code == 0, err
        status = json.loads(out)
        for key in ("run_id", "status", "step", "stop", "trajectory", "input_tokens", "output_tokens", "cost"):
            assert key in status
        assert (status["status"], status["step"], status["stop"]) == ("completed", 2, "answered")

        code, out, _ = await starter("result", f"cli-{task_queue}", "--json", settings=settings)
        assert code == 0
        assert json.loads(out)["output"] == "Invoice inv-9 is settled."

        code, out, _ = await starter("effects", "--run", f"cli-{task_queue}", "--json", settings=settings)
        assert code == 0
        rows = json.loads(out)
        assert [(r["tool"], r["run_id"]) for r in rows] == [("charge", f"cli-{task_queue}")]
        assert {"key", "tool", "run_id", "at"} <= set(rows[0])

        code, _, err = await starter("run", "billing", "--id", f"cli-{task_queue}", settings=settings)
        assert code == 1
        assert_one_clear_line(err, "already exists")


async def test_unknown_run_id_is_one_line(dev_env, task_queue, tmp_path):
    settings = dev_settings(dev_env, task_queue, tmp_path)
    for command in ("status", "result"):
        code, _, err = await starter(command, "never-started", settings=settings)
        assert code == 1
        assert_one_clear_line(err, "no run with id 'never-started'")


async def test_status_of_a_running_run_comes_from_the_query(dev_env, task_queue, tmp_path, ledger):
    settings = dev_settings(dev_env, task_queue, tmp_path)
    async with new_worker(dev_env.client, task_queue, type(ledger)(settings.ledger_path)):
        code, out, _ = await starter(
            # 60 steps of a second: still running however long a loaded machine takes to ask (5 steps were not).
            "run", "migration", "--option", "step_delay=1", "--option", "records=60", "--id", f"st-{task_queue}",
            "--json", settings=settings,
        )  # fmt: skip
        assert code == 0
        assert json.loads(out)["run_id"] == f"st-{task_queue}"
        status: dict = {}

        async def working() -> bool:  # wait for the condition itself: the run has started a step
            nonlocal status
            code, out, err = await starter("status", f"st-{task_queue}", "--json", settings=settings)
            assert code == 0, err
            status = json.loads(out)
            return status["step"] >= 1

        await eventually(working, what="the run to be working on a step")
        assert status["status"] == "running"
        assert status["max_steps"] == 200
        assert status["label"].startswith(("migrate_record(record=rec-", "model call"))
        await dev_env.client.get_workflow_handle(f"st-{task_queue}").terminate("seen running: that was the test")


async def test_demo_runs_end_to_end_and_exits_zero(dev_env, task_queue, tmp_path):
    """The README's main job, non-interactive: it uses the server that answers, starts and kills its own
    worker processes, and exits 0 with every run accounted for."""
    settings = dev_settings(dev_env, task_queue, tmp_path)
    code, out, err = await starter("demo", "--json", settings=settings, timeout=240)
    assert code == 0, err
    runs = {r["agent"]: r for r in json.loads(out)["runs"]}
    assert runs["billing"]["stop"] == "answered" and runs["billing"]["effects"] == 1
    assert runs["migration"]["stop"] == "answered" and runs["migration"]["effects"] == 5
    assert "killed" in runs["migration"]["note"]
    assert runs["refund"]["output"] == "Refunded order 4471." and runs["refund"]["effects"] == 1
    assert runs["refund"]["audit"][0]["approver"] == "demo-approver"
    assert (runs["trip"]["status"], runs["trip"]["stop"], runs["trip"]["effects"]) == ("compensated", "tool_failed", 4)
    assert runs["support"]["output"].startswith("Ticket opened; the billing desk says: Refunded order 4471")
    assert runs["support"]["note"] == f"delegated to billing-desk: run {runs['support']['run_id']}~2.1"
    # The application's last act: OrderRefund on worker.py, its agent step approved, then the customer told.
    refund = runs["orders"]
    assert (refund["workflow"], refund["refunded"], refund["customer_notified"]) == ("OrderRefund", True, True)
    assert refund["agent_run"] == f"{refund['run_id']}~orders-1" and refund["answer"].startswith("Done: refunded A-1")
    assert Path(settings.ledger_path).exists()


async def test_pending_approve_deny_through_the_cli(dev_env, task_queue, tmp_path, ledger):
    """`pending` finds exactly the waiting runs through visibility; `approve`/`deny` decide them."""
    settings = dev_settings(dev_env, task_queue, tmp_path)
    ids = [f"refund-a-{task_queue}", f"refund-b-{task_queue}"]
    async with new_worker(dev_env.client, task_queue, type(ledger)(settings.ledger_path)):
        for run_id in ids:
            code, _, err = await starter("run", "refund", "--id", run_id, settings=settings)
            assert code == 0, err
        code, _, _ = await starter("run", "billing", "--id", f"done-{task_queue}", "--wait", settings=settings)
        assert code == 0

        async def listed() -> list[dict]:
            code, out, _ = await starter("pending", "--json", settings=settings)
            assert code == 0
            return [row for row in json.loads(out) if row["run_id"].endswith(task_queue)]

        async def both_listed() -> bool:
            return len(await listed()) == 2

        await eventually(both_listed, what="both refunds in visibility")
        rows = await listed()
        assert sorted(r["run_id"] for r in rows) == sorted(ids)
        assert all(r["tool"] == "refund" and r["arguments"] == {"order_id": "4471"} for r in rows)
        assert all(len(r["arguments_hash"]) == 64 and r["deadline"] for r in rows)

        # Visibility answers "which runs await approval" exactly, for the Web UI's filter too.
        query = f'AgentStatus = "awaiting_approval" AND TaskQueue = "{task_queue}"'
        found = sorted([w.id async for w in dev_env.client.list_workflows(query)])
        assert found == sorted(ids)

        # Approving needs the hash the approver saw: without it, nothing is approved
        # and the call is shown with the hash to confirm; a wrong hash is refused.
        code, _, err = await starter("approve", ids[0], "--by", "maria", settings=settings)
        assert code == 2
        assert_one_clear_line(err, f"refund(order_id=4471), hash {rows[0]['arguments_hash'][:12]}")
        code, _, err = await starter("approve", ids[0], "--by", "maria", "--hash", "0123456789ab", settings=settings)
        assert code == 1
        assert_one_clear_line(err, "nothing was decided")
        seen = next(r["arguments_hash"] for r in rows if r["run_id"] == ids[0])[:12]
        code, out, err = await starter(
            "approve", ids[0], "--by", "maria", "--reason", "ok", "--hash", seen, "--json", settings=settings
        )
        assert code == 0, err
        assert json.loads(out)["decision"] == "approved" and json.loads(out)["via"] == "update"
        code, out, err = await starter("deny", ids[1], "--by", "tom", "--reason", "duplicate", settings=settings)
        assert code == 0, err
        assert out.startswith("declined: refund")

        code, out, _ = await starter("result", ids[0], "--json", settings=settings)
        assert json.loads(out)["output"] == "Refunded order 4471."
        code, out, _ = await starter("result", ids[1], "--json", settings=settings)
        declined = json.loads(out)
        assert declined["output"] == "The refund of order 4471 was declined; nothing was refunded."
        assert [(a["event"], a["approver"], a["reason"]) for a in declined["audit"]] == [
            ("declined", "tom", "duplicate")
        ]
        # A decision for a run that has ended: one line, nothing sent (no traceback).
        code, _, err = await starter("approve", ids[1], "--by", "late", "--yes", settings=settings)
        assert code == 1
        assert_one_clear_line(err, f"run {ids[1]} has already ended (completed)")
    ledger_rows = type(ledger)(settings.ledger_path).effects()
    assert [(e.run_id, e.tool) for e in ledger_rows if e.run_id in ids] == [(ids[0], "refund")]


async def test_cancel_through_the_cli_compensates(dev_env, task_queue, tmp_path, ledger):
    settings = dev_settings(dev_env, task_queue, tmp_path)
    run_id = f"trip-{task_queue}"
    trip_ledger = type(ledger)(settings.ledger_path)
    async with new_worker(dev_env.client, task_queue, trip_ledger):
        code, _, err = await starter(
            "run",
            "trip",
            "--id",
            run_id,
            "--option",
            "fail_at=none",
            "--option",
            "step_delay=2",
            "--heartbeat-timeout",
            "2",
            settings=settings,
        )
        assert code == 0, err
        await eventually(lambda: len(trip_ledger.effects(run_id)) >= 1, what="the flight booking")
    # No worker now: the run cannot finish before the cancel lands, however long the command takes to start.
    code, out, err = await starter("cancel", run_id, "--reason", "customer called", settings=settings)
    assert code == 0, err
    async with new_worker(dev_env.client, task_queue, trip_ledger):
        code, out, err = await starter("result", run_id, "--json", settings=settings)
    assert code == 0, err
    result = json.loads(out)
    assert (result["stop"], result["status"], result["stop_detail"]) == ("cancelled", "compensated", "customer called")
    forward = [e for e in trip_ledger.effects(run_id) if e.compensates is None]
    undone = [e for e in trip_ledger.effects(run_id) if e.compensates is not None]
    assert [e.compensates for e in undone] == [e.key for e in reversed(forward)]
