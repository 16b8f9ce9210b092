"""A newcomer's frictions, one by one, as a user meets
each one: the real commands as subprocesses, against a real Temporal server. Bad input that needs no server
is in tests/ops/test_cli_bad_input.py."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from agentic.saga import SagaPolicy
from duragent._client import AgentClient
from duragent._config.models import declared_models
from duragent._config.settings import ROOT, Settings, ui_record
from duragent._ops.devstack import devserver
from duragent._ops.devstack.devserver import free_port
from duragent._ops.devstack.worker_process import WorkerProcess
from tests.conftest import dev_settings, eventually, new_worker
from tests.ops.test_cli import assert_one_clear_line, starter

# Processes of its own: the command lines, servers and workers.
pytestmark = pytest.mark.system


def stderr_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.strip()]


async def terminate(env, run_id: str) -> None:
    await env.client.get_workflow_handle(run_id).terminate("test cleanup")


async def test_waits_without_a_worker_print_the_id_first_say_what_they_wait_for_and_time_out(
    dev_env, task_queue, tmp_path
):
    """With no worker up, `run --wait` and `result` hung in silence and Ctrl-C lost the id."""
    settings = dev_settings(dev_env, task_queue, tmp_path)
    run_id = f"nw-{task_queue}"
    code, out, err = await starter("run", "billing", "--id", run_id, "--wait", "--timeout", "6", settings=settings)
    assert code == 1
    assert out.splitlines()[0].startswith(f"started {run_id}; waiting for its result")
    waiting = f"waiting for a worker on task queue '{task_queue}': none has picked up run {run_id}"
    [said, error] = stderr_lines(err)
    assert said.startswith(waiting) and "Traceback" not in err
    assert error.startswith(f"error: timed out after 6 s waiting for run {run_id}")
    assert "the run goes on" in error

    code, _, err = await starter("result", run_id, "--timeout", "4", settings=settings)
    assert code == 1 and stderr_lines(err)[-1].startswith(f"error: timed out after 4 s waiting for run {run_id}")

    code, out, err = await starter("status", run_id, "--json", settings=settings)
    assert code == 0, err
    status = json.loads(out)
    assert status["status"] == "running" and status["waiting_for"].startswith(waiting)
    await terminate(dev_env, run_id)


async def test_a_model_that_keeps_failing_is_named_while_waiting(dev_env, task_queue, tmp_path, ledger):
    """A model endpoint that refuses connections looked like a silent hang (`step 0, model call 1`)."""
    settings = dev_settings(dev_env, task_queue, tmp_path)
    run_id = f"model-{task_queue}"
    nowhere = Settings(local_model_url=f"http://127.0.0.1:{free_port()}/v1")
    worker = new_worker(dev_env.client, task_queue, type(ledger)(settings.ledger_path), models=declared_models(nowhere))
    async with worker:
        code, _, err = await starter(
            "run", "billing", "--id", run_id, "--model", "local", "--wait", "--timeout", "12", settings=settings
        )
        assert code == 1
        assert any(line.startswith("waiting for the model: attempt ") for line in stderr_lines(err)), err
        code, out, _ = await starter("status", run_id, "--json", settings=settings)
        assert json.loads(out)["waiting_for"].startswith("waiting for the model: attempt ")
        await terminate(dev_env, run_id)


async def test_conflicting_decisions_with_no_worker_up_the_second_is_told_the_first_is_queued(
    dev_env, task_queue, tmp_path, ledger
):
    """With no worker (and for a run that ended), approve then deny were both told they "apply when
    a worker picks up" the run; the deny was then rejected without anyone being told."""
    settings = dev_settings(dev_env, task_queue, tmp_path)
    run_id = f"refund-{task_queue}"
    run_ledger = type(ledger)(settings.ledger_path)
    agents = AgentClient(dev_env.client, task_queue=task_queue, ui_url=settings.ui_url)
    async with new_worker(dev_env.client, task_queue, run_ledger):
        handle = await agents.start("refund", run_id=run_id)
        [waiting] = await handle.wait_for_approval()
    # The worker is gone: the decision is queued as a signal, and the pause before that is said.
    code, out, err = await starter("approve", run_id, "--by", "maria", "--yes", settings=settings)
    assert code == 0, err
    assert "queued (approve): refund(order_id=4471)" in out
    assert "waiting up to 10 s for a worker to apply it" in err
    code, _, err = await starter("deny", run_id, "--by", "bob", settings=settings)
    assert code == 1 and "Traceback" not in err
    [notice, error] = stderr_lines(err)
    assert notice.startswith("waiting up to 10 s for a worker")
    assert error.startswith(f"error: rejected: another decision for call {waiting.call_id} is already queued")
    assert "(approve by maria)" in error and "Nothing was sent" in error

    async with new_worker(dev_env.client, task_queue, run_ledger):
        result = await handle.result()
        assert result.output == "Refunded order 4471."
        assert [(a.event, a.approver) for a in result.audit] == [("approved", "maria")]
    code, _, err = await starter("approve", run_id, "--by", "late", "--yes", settings=settings)
    assert code == 1
    assert_one_clear_line(err, f"run {run_id} has already ended (completed)")


async def test_ended_runs_cancel_alike_in_both_clis_and_a_failed_run_says_why(dev_env, task_queue, tmp_path, ledger):
    """`cancel` of an ended run said "effects will be compensated" and
    exited 0; `run trip --wait` printed `— None`; `status` of a failed run printed `step None`."""
    settings = dev_settings(dev_env, task_queue, tmp_path)
    async with new_worker(dev_env.client, task_queue, type(ledger)(settings.ledger_path)):
        run_id = f"bill-{task_queue}"
        code, out, err = await starter("run", "--agent", "billing", "--id", run_id, "--wait", settings=settings)
        assert code == 0, err
        code, _, err = await starter("cancel", run_id, settings=settings)
        assert code == 1
        assert_one_clear_line(err, f"run {run_id} has already ended (completed); nothing to cancel")

        code, out, err = await starter(
            "run", "--scenario", "trip", "--id", f"trip-{task_queue}", "--wait", settings=settings
        )
        assert code == 0, err
        assert "compensated (tool_failed)" in out and "undone, newest first: book_hotel, book_flight" in out
        assert "None" not in out

        failed = f"failed-{task_queue}"
        agents = AgentClient(dev_env.client, task_queue=task_queue, ui_url=settings.ui_url)
        await agents.start("no-such-agent", "x", run_id=failed)
        await eventually(lambda: _closed(dev_env, failed), what="the run to fail")
        code, out, err = await starter("status", failed, settings=settings)
        assert code == 0, err
        assert out.startswith(f"{failed}: failed — run {failed} failed") and "None" not in out

    db, job_ledger = tmp_path / "b.db", tmp_path / "job-ledger.db"
    job = [sys.executable, "-m", "duragent._ops.cli.job"]
    common = ["--db", str(db), "--ledger", str(job_ledger)]
    assert subprocess.run([*job, "run", "--agent", "billing", "--id", "j1", *common], cwd=ROOT).returncode == 0
    cancelled = subprocess.run([*job, "cancel", "j1", *common], cwd=ROOT, capture_output=True, text=True)
    assert cancelled.returncode == 1
    assert_one_clear_line(cancelled.stderr, "run j1 has already ended (completed); nothing to cancel")


async def test_approving_a_run_cancelled_while_it_waited_is_one_line(dev_env, task_queue, tmp_path, ledger):
    """The sequence: `run refund`, `cancel` while it waits for the approval, then `approve`
    — once a 3-part traceback (the memo still listed the approval; the update and the signal both failed)."""
    settings = dev_settings(dev_env, task_queue, tmp_path)
    run_id = f"refund-zero-{task_queue}"
    async with new_worker(dev_env.client, task_queue, type(ledger)(settings.ledger_path)):
        code, _, err = await starter("run", "refund", "--id", run_id, settings=settings)
        assert code == 0, err
        await (
            AgentClient(dev_env.client, task_queue=task_queue, ui_url=settings.ui_url)
            .handle(run_id)
            .wait_for_approval()
        )
        code, _, err = await starter("cancel", run_id, settings=settings)
        assert code == 0, err
        await eventually(lambda: _closed(dev_env, run_id), what="the cancelled run to close")
        code, out, err = await starter("approve", run_id, "--by", "maria", "--yes", settings=settings)
    assert code == 1 and out == ""
    assert_one_clear_line(err, f"run {run_id} has already ended")
    assert "Traceback" not in err and "RPCError" not in err
    assert ledger.__class__(settings.ledger_path).effects(run_id) == []  # nothing was refunded


async def test_a_second_approval_of_a_call_says_who_decided_it(dev_env, task_queue, tmp_path, ledger):
    """Approving a call already approved, while the run waits on its next one, said only "no pending
    approval"; it names the first decision, as `job` does, and changes nothing."""
    settings = dev_settings(dev_env, task_queue, tmp_path)
    run_id = f"pay-{task_queue}"
    async with new_worker(dev_env.client, task_queue, type(ledger)(settings.ledger_path)):
        agents = AgentClient(dev_env.client, task_queue=task_queue, ui_url=settings.ui_url)
        run = await agents.start("t-pay-sequence", run_id=run_id)
        [first] = await run.wait_for_approval()
        code, _, err = await starter("approve", run_id, "--by", "maria", "--yes", settings=settings)
        assert code == 0, err

        async def next_one() -> bool:
            return [p.call_id for p in await run.pending()] not in ([], [first.call_id])

        await eventually(next_one, what="the second payment's approval")
        code, out, err = await starter("approve", run_id, "--call", first.call_id, "--by", "jo", settings=settings)
        assert code == 1 and out == ""
        assert_one_clear_line(err, f"call {first.call_id} was already approved by maria")
        assert len(await run.pending()) == 1  # the second call still waits, undecided
        await run.cancel()
    assert [e.tool for e in ledger.__class__(settings.ledger_path).effects(run_id) if not e.compensates] == ["pay"]


async def test_a_run_whose_undo_keeps_failing_says_compensation_failed_and_what_is_left(
    dev_env, task_queue, tmp_path, ledger
):
    """`run trip --option compensation_failures=100 --wait` ended `failed: CompensationRetry: ... (attempt 5)`,
    the innermost activity error; it says the run's own state and what remains to undo."""
    settings = dev_settings(dev_env, task_queue, tmp_path)
    run_id = f"trip-cf-{task_queue}"
    async with new_worker(dev_env.client, task_queue, type(ledger)(settings.ledger_path)):
        agents = AgentClient(dev_env.client, task_queue=task_queue, ui_url=settings.ui_url)
        await agents.start(
            "trip",
            run_id=run_id,
            options={"compensation_failures": 100},
            saga=SagaPolicy(max_attempts=2, initial_interval_seconds=0.2),
        )
        code, out, err = await starter("result", run_id, settings=settings)
    assert code == 1 and out == "", (out, err)
    assert_one_clear_line(err, "compensation_failed")
    line = err.strip()
    assert line.startswith(f"error: run {run_id} ended compensation_failed: CompensationFailed:"), line
    assert line.endswith("not undone: ['book_hotel', 'book_flight']"), line  # what is left, newest first


async def _closed(env, run_id: str) -> bool:
    return (await env.client.get_workflow_handle(run_id).describe()).close_time is not None


async def test_an_unknown_namespace_is_one_line_for_the_commands_and_the_worker(dev_env, task_queue, tmp_path):
    """Tracebacks ending `Namespace nope is not found`, and `status` blaming the run id."""
    settings = dev_settings(dev_env, task_queue, tmp_path)
    nope = Settings(address=settings.address, namespace="nope", task_queue=task_queue, ledger_path=tmp_path / "l.db")
    expected = f"namespace 'nope' does not exist on {settings.address}"
    for command in (["run", "billing"], ["status", "x"], ["pending"]):
        code, _, err = await starter(*command, settings=nope)
        assert code == 1
        assert_one_clear_line(err, expected)
    worker = WorkerProcess(nope)
    assert worker.process.wait(60) == 1
    assert [line.strip() for line in worker.output if line.strip()] == [f"error: {expected} (TEMPORAL_NAMESPACE)"]


async def test_web_ui_links_follow_the_server_in_use(tmp_path):
    """Links always named port 8233; the server's banner ignored --json; ids were not escaped."""
    port, ui_port = free_port(), free_port()
    env = os.environ | {"AGENT_DATA_DIR": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1"}
    env.pop("TEMPORAL_UI_URL", None)
    server = subprocess.Popen(
        [
            sys.executable,
            "starter.py",
            "server",
            "--json",
            "--port",
            str(port),
            "--ui-port",
            str(ui_port),
            "--db",
            str(tmp_path / "dev.db"),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        banner = json.loads(server.stdout.readline())
        assert banner["ui_url"] == f"http://localhost:{ui_port}" and banner["address"] == f"127.0.0.1:{port}"
        assert ui_record(port, tmp_path / "data").exists()
        run = [sys.executable, "starter.py", "run", "billing", "--id", "a/b c?d"]
        started = subprocess.run(
            run, cwd=ROOT, env=env | {"TEMPORAL_ADDRESS": f"127.0.0.1:{port}"}, capture_output=True, text=True
        )
        assert started.returncode == 0, started.stderr
        url = f"http://localhost:{ui_port}/namespaces/default/workflows/a%2Fb%20c%3Fd"
        assert started.stdout.splitlines() == ["started a/b c?d", f"  {url}"]
        chosen = Settings(address=f"127.0.0.1:{port}", data_dir=tmp_path / "data")
        assert chosen.ui_url == f"http://localhost:{ui_port}"
        os.environ["TEMPORAL_UI_URL"] = "http://ui.example:9/"
        try:
            assert Settings(address=f"127.0.0.1:{port}", data_dir=tmp_path / "data").ui_url == "http://ui.example:9"
        finally:
            del os.environ["TEMPORAL_UI_URL"]
    finally:
        server.terminate()
        assert server.wait(60) == 0
    assert not ui_record(port, tmp_path / "data").exists()  # a stopped server's UI is no longer linked
    assert Settings(address=f"127.0.0.1:{port}", data_dir=tmp_path / "data").ui_url == "http://localhost:8233"


async def test_when_the_server_goes_away_watch_says_so_and_the_worker_log_stays_json(tmp_path):
    """The SDK core's Rust retry warnings were printed over `watch`'s bar, which then blamed the
    worker and ended in a traceback; the same warnings, coloured, were mixed into the worker's JSON log."""
    server = devserver.start_on_free_ports(tmp_path / "dev.db", log=tmp_path / "server.log")
    settings = Settings(
        address=server.address, task_queue="gone", ledger_path=tmp_path / "ledger.db", data_dir=tmp_path
    )
    worker = WorkerProcess(settings)
    watching: asyncio.subprocess.Process | None = None
    try:
        await devserver.wait_until_serving(server.address)
        worker.wait_ready()
        agents = await AgentClient.connect(settings)
        await agents.start("migration", run_id="mig-gone", options={"step_delay": 2.0, "records": 20})
        env = os.environ | {"TEMPORAL_ADDRESS": server.address, "TEMPORAL_TASK_QUEUE": "gone"}
        watching = await asyncio.create_subprocess_exec(
            sys.executable, "starter.py", "watch", "mig-gone", cwd=ROOT, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert watching.stdout is not None
        first = await asyncio.wait_for(watching.stdout.readline(), 60)
        assert b"running" in first
        server.stop()
        out, err = await asyncio.wait_for(watching.communicate(), 120)
        assert watching.returncode == 1
        assert_one_clear_line(err.decode(), f"error: lost the Temporal server at {server.address}")
        assert b"WARN" not in out + err and b"retried" not in out + err

        def core_lines() -> list[str]:
            return [line for line in worker.output if "temporalio.core" in line]

        await eventually(lambda: core_lines(), timeout=90, what="the SDK core's retry warnings in the worker log")
    finally:
        if watching is not None and watching.returncode is None:
            watching.kill()
        worker.stop()
        server.kill()
    logged = [
        line for line in worker.output if line.strip() and not line.startswith(("worker ready", "worker stopped"))
    ]
    for line in logged:
        assert isinstance(json.loads(line), dict), line  # every line, the core's included, is one JSON object
        assert "\x1b[" not in line
    assert any(json.loads(line)["level"] == "warning" for line in core_lines())


def test_job_takes_run_ids_positionally_prints_them_first_and_serve_says_where(tmp_path: Path):
    """`job status --messages` printed no transcript without --json, `job serve`
    printed nothing (and exited 3 on a busy port), `job run` never printed the run id it generated."""
    job = [sys.executable, "-m", "duragent._ops.cli.job"]
    common = ["--db", str(tmp_path / "b.db"), "--ledger", str(tmp_path / "l.db")]
    ran = subprocess.run([*job, "run", "--agent", "billing", *common], cwd=ROOT, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    run_id = ran.stdout.splitlines()[0].removeprefix("started ")
    assert run_id.startswith("billing-")

    shown = subprocess.run([*job, "status", run_id, "--messages", *common], cwd=ROOT, capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    assert "  [user] " in shown.stdout and "  [assistant] " in shown.stdout and "charge(" in shown.stdout
    by_flag = subprocess.run([*job, "effects", "--id", run_id, *common, "--json"], cwd=ROOT, capture_output=True)
    by_position = subprocess.run([*job, "effects", run_id, *common, "--json"], cwd=ROOT, capture_output=True)
    assert by_flag.stdout == by_position.stdout and json.loads(by_flag.stdout)[0]["tool"] == "charge"

    port = free_port()
    serve = [*job, "serve", "--insecure-no-auth", "--port", str(port), *common]
    env = os.environ | {"PYTHONUNBUFFERED": "1"}
    serving = subprocess.Popen(serve, cwd=ROOT, stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert serving.stdout is not None
        assert serving.stdout.readline().startswith(f"job serve: listening on http://127.0.0.1:{port} (")
        assert httpx.get(f"http://127.0.0.1:{port}/runs/{run_id}").json()["status"] == "completed"
        busy = subprocess.run(
            [*job, "serve", "--insecure-no-auth", "--port", str(port), *common],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        assert busy.returncode == 1
        assert_one_clear_line(busy.stderr, f"cannot listen on 127.0.0.1:{port}")
    finally:
        serving.terminate()
        serving.wait(30)
