"""`starter.py watch RUN_ID`: a real subprocess against the real dev server — JSON lines, plain lines, and the
redrawn bar on a terminal (a pseudo-terminal), through a run's steps, an approval wait and its end."""

from __future__ import annotations

import asyncio
import fcntl
import itertools
import json
import os
import pty
import re
import struct
import sys
import termios
from typing import Any

from agentic.approvals import ApprovalPolicy, Decision
from duragent._client import AgentClient
from duragent._config.settings import ROOT, Settings
from duragent._ops.devstack.devserver import free_port
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput
from tests.conftest import dev_settings, new_worker

TIMEOUT = 40.0


def child_env(settings: Settings) -> dict[str, str]:
    return dict(os.environ) | {
        "TEMPORAL_ADDRESS": settings.address,
        "TEMPORAL_NAMESPACE": settings.namespace,
        "TEMPORAL_TASK_QUEUE": settings.task_queue,
        "AGENT_LEDGER": str(settings.ledger_path),
    }


async def spawn_watch(settings: Settings, *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(ROOT / "starter.py"),
        "watch",
        *args,
        env=child_env(settings),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def watch(settings: Settings, *args: str) -> tuple[int, str, str]:
    process = await spawn_watch(settings, *args)
    out, err = await asyncio.wait_for(process.communicate(), TIMEOUT)
    return process.returncode or 0, out.decode(), err.decode()


async def read_until(process: asyncio.subprocess.Process, seen: list[str], wanted: str) -> None:
    """Collect lines into `seen` until one contains `wanted`."""
    assert process.stdout is not None
    while True:
        raw = await asyncio.wait_for(process.stdout.readline(), TIMEOUT)
        assert raw, f"watch ended before printing {wanted!r}:\n" + "".join(seen)
        seen.append(raw.decode())
        if wanted in seen[-1]:
            return


async def start(settings: Settings, client: Any, run_id: str, scenario: str, **fields: Any) -> None:
    agents = AgentClient(client, task_queue=settings.task_queue)
    await agents._start_input(AgentInput(agent=scenario, **fields), run_id=run_id)  # engine knobs: not public


async def test_watch_json_lines_follow_a_migration_to_its_answer(dev_env, task_queue, tmp_path, ledger):
    settings = dev_settings(dev_env, task_queue, tmp_path)
    run_id = f"watch-mig-{task_queue}"
    async with new_worker(dev_env.client, task_queue, type(ledger)(settings.ledger_path)):
        # 8 s of steps: seen moving however late `watch` starts on a loaded machine (4 s were not always).
        await start(settings, dev_env.client, run_id, "migration", options=dict(step_delay=0.5, records=16))
        code, out, err = await watch(settings, run_id, "--json")
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    *progress, result = lines
    assert {p["type"] for p in progress} == {"progress"} and result["type"] == "result"
    assert (result["stop"], result["status"], result["output"]) == ("answered", "completed", "Migrated 16 records.")
    assert result["trajectory"] == ["migrate_record"] * 16

    # One object per change, and the run is seen moving: steps only go up, through several values.
    assert all(a != b for a, b in itertools.pairwise(progress))
    steps = [p["step"] for p in progress]
    assert steps == sorted(steps) and len(set(steps)) >= 3, steps
    assert [p["output_tokens"] for p in progress] == sorted(p["output_tokens"] for p in progress)
    assert any(p["label"].startswith("migrate_record(record=rec-") for p in progress)
    assert all(p["run_id"] == run_id and p["max_steps"] == 200 for p in progress)
    last = progress[-1]
    assert (last["status"], last["stop"], last["step"]) == ("completed", "answered", result["steps"])
    assert (last["input_tokens"], last["output_tokens"]) == (result["input_tokens"], result["output_tokens"])


async def test_watch_shows_an_approval_wait_then_the_decision(dev_env, task_queue, tmp_path, ledger):
    """Two watchers of one refund, JSON and plain lines: both show the wait (tool, time left), both end with
    the approved result once a person decides."""
    settings = dev_settings(dev_env, task_queue, tmp_path)
    run_id = f"watch-refund-{task_queue}"
    async with new_worker(dev_env.client, task_queue, type(ledger)(settings.ledger_path)):
        await start(settings, dev_env.client, run_id, "refund", approvals=ApprovalPolicy(timeout_seconds=600))
        as_json = await spawn_watch(settings, run_id, "--json")
        as_text = await spawn_watch(settings, run_id)
        json_lines: list[str] = []
        text_lines: list[str] = []
        await asyncio.gather(
            read_until(as_json, json_lines, '"awaiting_approval"'),
            read_until(as_text, text_lines, "awaiting_approval"),
        )
        waiting = json.loads(json_lines[-1])
        assert (waiting["type"], waiting["status"], waiting["step"]) == ("progress", "awaiting_approval", 1)
        [pending] = waiting["pending_approvals"]
        assert (pending["tool"], pending["arguments"]) == ("refund", {"order_id": "4471"})
        assert 500 < pending["seconds_left"] <= 600
        line = text_lines[-1]
        assert "awaiting_approval" in line and "approve refund(order_id=4471)" in line
        assert "m" in line.split("approve refund(order_id=4471), ")[1].split(" left")[0]  # e.g. 9m58s
        assert "(deadline " in line and "\r" not in line
        hash = pending["arguments_hash"][:12]
        assert f"starter.py approve {run_id} --call {pending['call_id']} --by NAME --hash {hash}" in line

        decision = Decision(
            call_id=pending["call_id"], approve=True, approver="maria", arguments_hash=pending["arguments_hash"]
        )
        await dev_env.client.get_workflow_handle(run_id).execute_update(AgentWorkflow.decide, decision)
        json_out, json_err = await asyncio.wait_for(as_json.communicate(), TIMEOUT)
        text_out, text_err = await asyncio.wait_for(as_text.communicate(), TIMEOUT)
    assert as_json.returncode == 0, json_err.decode()
    assert as_text.returncode == 0, text_err.decode()
    result = json.loads(json_out.decode().splitlines()[-1])
    assert (result["type"], result["output"]) == ("result", "Refunded order 4471.")
    assert [(a["event"], a["approver"]) for a in result["audit"]] == [("approved", "maria")]
    assert text_out.decode().splitlines()[-1] == f"{run_id}: completed (answered) — Refunded order 4471."


async def test_watch_on_a_terminal_redraws_one_line(dev_env, task_queue, tmp_path, ledger):
    settings = dev_settings(dev_env, task_queue, tmp_path)
    run_id = f"watch-tty-{task_queue}"
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 200, 0, 0))
    async with new_worker(dev_env.client, task_queue, type(ledger)(settings.ledger_path)):
        # 12 s of steps: `watch` may take seconds to start on a loaded machine (7.5 s were not always enough).
        await start(settings, dev_env.client, run_id, "migration", options=dict(step_delay=1.5, records=8))
        env = child_env(settings)
        env.pop("COLUMNS", None)
        process = await asyncio.create_subprocess_exec(
            sys.executable, str(ROOT / "starter.py"), "watch", run_id, env=env, cwd=ROOT, stdout=slave, stderr=slave
        )
        os.close(slave)

        def read_all() -> bytes:
            chunks = []
            while True:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # EIO: the child closed the terminal
                    return b"".join(chunks)
                if not chunk:
                    return b"".join(chunks)
                chunks.append(chunk)

        # The terminal turns each "\n" into "\r\n"; undo that to see the program's own carriage returns.
        screen = (await asyncio.wait_for(asyncio.to_thread(read_all), TIMEOUT)).decode().replace("\r\n", "\n")
        await asyncio.wait_for(process.wait(), TIMEOUT)
    os.close(master)
    assert process.returncode == 0, screen
    # The bar is redrawn in place ~2/s: many carriage returns, each clearing the rest of the line, on one line.
    bar, _, rest = screen.partition("\n")
    assert bar.count("\r") >= 4 and bar.count("\x1b[K") == bar.count("\r"), repr(screen)
    frames = [frame.removesuffix("\x1b[K") for frame in bar.split("\r") if frame]
    # The bar counts actions against the agent's estimate (8 records: 9 model calls and 8 tool calls), rising.
    assert all(re.match(r"\[[.#]{20}\] \d+/17 ", frame) for frame in frames[:-1]), frames
    counts = [int(re.match(r"\[[.#]{20}\] (\d+)/", frame)[1]) for frame in frames[:-1]]  # type: ignore[index]
    assert counts == sorted(counts) and len(set(counts)) >= 3, frames
    assert any("migrate_record(record=rec-" in frame for frame in frames), frames
    # A finished run's bar is full, in the same unit: the 17 actions it took.
    assert frames[-1].startswith("[####################] 17/17  completed  finished: answered  tokens "), frames
    assert rest.strip() == f"{run_id}: completed (answered) — Migrated 8 records."


async def test_watch_of_a_closed_run_needs_no_worker(dev_env, task_queue, tmp_path, ledger):
    settings = dev_settings(dev_env, task_queue, tmp_path)
    run_id = f"watch-done-{task_queue}"
    async with new_worker(dev_env.client, task_queue, type(ledger)(settings.ledger_path)):
        await start(settings, dev_env.client, run_id, "billing")
        await dev_env.client.get_workflow_handle(run_id).result()
    code, out, err = await watch(settings, run_id)  # the worker is gone: a progress query would time out
    assert code == 0, err
    progress, result = out.splitlines()
    assert progress.startswith("[####################] 3/3  completed  finished: answered  tokens "), out
    assert result == f"{run_id}: completed (answered) — Invoice inv-9 is settled."


async def test_watch_unknown_run_and_unreachable_server_are_one_line(dev_env, task_queue, tmp_path):
    code, out, err = await watch(dev_settings(dev_env, task_queue, tmp_path), "never-started", "--json")
    assert (code, out) == (1, "")
    assert err.strip().splitlines() == ["error: no run with id 'never-started' in namespace default"]

    nowhere = Settings(address=f"127.0.0.1:{free_port()}", ledger_path=tmp_path / "l.db")
    code, out, err = await watch(nowhere, "some-run")
    assert (code, out) == (1, "")
    lines = err.strip().splitlines()
    assert len(lines) == 1 and f"cannot reach Temporal at {nowhere.address}" in lines[0], err
