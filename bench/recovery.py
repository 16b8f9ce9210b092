"""Recovery latency: SIGKILL the process executing a run in the middle of a step, start a new one, and
time from the kill to the interrupted step's completion on the new process, and to the following step's.

Both engines run `migration` (one mutating step per record, `step_delay` seconds of work inside each) and
the kill lands at a random point within the work of step `kill_after + 1`.

Temporal: the worker subprocess is SIGKILLed and a new one started at once (as a supervisor would). The
history says when the interrupted tool activity's retry started and completed, and whether the following
workflow task first waited on the dead worker's sticky queue (a `WorkflowTaskTimedOut`). The kill is
noticed by the heartbeat timeout; the retry then waits the retry policy's first interval.

Baseline: the `job run` subprocess is SIGKILLed; the driver starts `job resume` as soon as the run's lease
has expired (as a `job recover` loop would, with no polling delay). The store says when the interrupted
step, re-executed under its key, and the following one were completed.
"""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType

from bench.served import JOB_AGENTS
from bench.stack import Stack
from bench.stats import summarize
from bench.temporal_runs import event_seconds
from duragent._baseline.store import Store
from duragent._config.settings import ROOT, STICKY_TIMEOUT, Settings
from duragent._stores.ledger import EffectsLedger
from duragent._workflows.inputs import Timeouts
from duragent._workflows.policies import TOOL_RETRY
from examples import migration

# The wait of the run's next workflow task on the dead worker's sticky queue (`STICKY_TIMEOUT`): none when the
# new worker released the run first (duragent/_sticky.py).
STICKY_WAIT = "sticky queue of the dead worker (next workflow task)"


@dataclass(frozen=True)
class RecoveryConfig:
    reps: int = 3
    records: int = 4
    kill_after: int = 1  # effects landed before the kill; the kill lands inside the next step's work
    step_delay: float = 1.0
    detect_seconds: float = 2.0  # Temporal heartbeat timeout, baseline lease length
    seed: int = 11


def _wait(check: Callable[[], bool], timeout: float, what: str, interval: float = 0.02) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(interval)


async def temporal_once(stack: Stack, config: RecoveryConfig, rng: random.Random, rep: int) -> dict[str, Any]:
    ledger = EffectsLedger(stack.settings.ledger_path)
    run_id = f"rec-t-{rep}-{uuid.uuid4().hex[:8]}"
    run = await stack.agents.start(
        migration.agent,
        run_id=run_id,
        options={"records": config.records, "step_delay": config.step_delay},
        timeouts=Timeouts(heartbeat_seconds=config.detect_seconds),
    )
    await asyncio.to_thread(
        _wait, lambda: len(ledger.effects(run_id)) >= config.kill_after, 60, f"{config.kill_after} effects"
    )
    await asyncio.sleep(rng.uniform(0.3, 0.7) * config.step_delay)
    killed_at = time.time()
    stack.worker.kill()
    await asyncio.to_thread(stack.new_worker, f"worker-rec-{rep}")
    ready = time.time() - killed_at
    result = await asyncio.wait_for(run.result(), 180)
    history = await run.workflow.fetch_history()
    effects = ledger.effects(run_id)
    if result.status != "completed" or len(effects) != config.records:
        raise RuntimeError(f"{run_id} ended {result.status} with {len(effects)} effects")
    return {"run_id": run_id, "worker_ready_s": ready, **temporal_timings(history.events, killed_at)}


def temporal_timings(events: Any, killed_at: float) -> dict[str, Any]:
    """From a history: when the tool activity interrupted by the kill was retried and completed, and when
    the next one completed; workflow tasks that timed out after the kill (the dead worker's sticky queue)."""
    tools: dict[int, dict[str, Any]] = {}
    order: list[int] = []
    sticky_wait = 0.0
    timed_out = 0
    scheduled_wft: dict[int, float] = {}
    for e in events:
        if e.HasField("activity_task_scheduled_event_attributes"):
            if e.activity_task_scheduled_event_attributes.activity_type.name == "run_tool":
                tools[e.event_id] = {"scheduled": event_seconds(e)}
                order.append(e.event_id)
        elif e.HasField("activity_task_started_event_attributes"):
            attrs = e.activity_task_started_event_attributes
            if attrs.scheduled_event_id in tools:
                tools[attrs.scheduled_event_id] |= {"started": event_seconds(e), "attempt": attrs.attempt}
        elif e.HasField("activity_task_completed_event_attributes"):
            attrs = e.activity_task_completed_event_attributes
            if attrs.scheduled_event_id in tools:
                tools[attrs.scheduled_event_id]["completed"] = event_seconds(e)
        elif e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
            scheduled_wft[e.event_id] = event_seconds(e)
        elif e.HasField("workflow_task_timed_out_event_attributes"):
            attrs = e.workflow_task_timed_out_event_attributes
            if event_seconds(e) > killed_at:
                timed_out += 1
                sticky_wait += event_seconds(e) - scheduled_wft.get(attrs.scheduled_event_id, event_seconds(e))
    after = [tools[i] for i in order if tools[i].get("completed", 0) > killed_at]
    if len(after) < 2:
        raise RuntimeError("the kill did not land before the last two steps")
    interrupted, following = after[0], after[1]
    return {
        "interrupted_attempt": interrupted.get("attempt"),
        "retry_started_s": interrupted["started"] - killed_at,
        "resumed_step_done_s": interrupted["completed"] - killed_at,
        "next_step_done_s": following["completed"] - killed_at,
        "step_work_s": interrupted["completed"] - interrupted["started"],
        "workflow_task_timeouts": timed_out,
        "sticky_wait_s": sticky_wait,
        "next_step_s": following["completed"] - interrupted["completed"] - sticky_wait,
    }


def baseline_once(workdir: Path, config: RecoveryConfig, rng: random.Random, rep: int) -> dict[str, Any]:
    directory = workdir / f"rec-b-{rep}-{uuid.uuid4().hex[:6]}"
    directory.mkdir(parents=True)
    db, ledger_path = directory / "baseline.db", directory / "ledger.db"
    run_id = f"rec-b-{rep}"
    common = [*JOB_AGENTS, "--db", str(db), "--ledger", str(ledger_path)]
    job = [sys.executable, "-m", "duragent._ops.cli.job"]
    first = subprocess.Popen(
        [
            *job,
            *("run", "--id", run_id, "--agent", migration.agent.label, "--option", f"records={config.records}"),
            *("--option", f"step_delay={config.step_delay}", "--lease-seconds", str(config.detect_seconds)),
            *("--max-attempts", "50", *common),
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait(lambda: ledger_path.exists(), 60, "the ledger")
        ledger = EffectsLedger(ledger_path)
        _wait(lambda: len(ledger.effects(run_id)) >= config.kill_after, 60, f"{config.kill_after} effects")
        time.sleep(rng.uniform(0.3, 0.7) * config.step_delay)
        killed_at = time.time()
        first.kill()
    finally:
        first.kill()  # a no-op after the planned kill; when interrupted before it, the job must not outlive us
        first.wait()
    store = Store(db)
    try:
        _wait(lambda: store.require(run_id).lease_expires <= time.time(), 60, "the lease to expire")
        expired = time.time() - killed_at
        resumed = subprocess.run([*job, "resume", "--id", run_id, *common], cwd=ROOT, capture_output=True, text=True)
        if resumed.returncode != 0:
            raise RuntimeError(f"job resume failed: {resumed.stderr.strip()}")
        steps = [s for s in store.steps(run_id) if s.step_name == "tool:migrate_record"]
    finally:
        store.close()
    done = [(_epoch(s.finished_at), s.attempts) for s in steps if s.finished_at and _epoch(s.finished_at) > killed_at]
    if len(done) < 2:
        raise RuntimeError("the kill did not land before the last two steps")
    (interrupted, attempts), (following, _) = done[0], done[1]
    return {
        "run_id": run_id,
        "lease_expired_s": expired,
        "interrupted_attempts": attempts,
        "resumed_step_done_s": interrupted - killed_at,
        "next_step_done_s": following - killed_at,
        "restart_and_replay_s": interrupted - killed_at - expired - config.step_delay,
    }


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


async def measure(stack: Stack, workdir: Path, config: RecoveryConfig, say: Callable[[str], None]) -> dict[str, Any]:
    rng = random.Random(config.seed)
    temporal: list[dict[str, Any]] = []
    baseline: list[dict[str, Any]] = []
    for rep in range(config.reps):
        temporal.append(await temporal_once(stack, config, rng, rep))
        baseline.append(await asyncio.to_thread(baseline_once, workdir, config, rng, rep))
        say(
            f"  recovery rep {rep + 1}/{config.reps}: temporal {temporal[-1]['resumed_step_done_s']:.2f}s"
            f" / {temporal[-1]['next_step_done_s']:.2f}s, baseline {baseline[-1]['resumed_step_done_s']:.2f}s"
            f" / {baseline[-1]['next_step_done_s']:.2f}s"
        )
    retry_interval = TOOL_RETRY.initial_interval.total_seconds() if TOOL_RETRY.initial_interval else 0.0

    def col(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
        return summarize([r[key] for r in rows])

    t = {k: col(temporal, k) for k in ("retry_started_s", "resumed_step_done_s", "next_step_done_s", "sticky_wait_s")}
    b = {k: col(baseline, k) for k in ("lease_expired_s", "resumed_step_done_s", "next_step_done_s")}
    b["restart_and_replay_s"] = col(baseline, "restart_and_replay_s")
    t["worker_ready_s"] = col(temporal, "worker_ready_s")
    t["next_step_s"] = col(temporal, "next_step_s")
    components_t = {
        f"heartbeat timeout ({config.detect_seconds:g}s) + retry interval ({retry_interval:g}s) + dispatch": t[
            "retry_started_s"
        ]["median"],
        f"the step's own work ({config.step_delay:g}s)": config.step_delay,
        STICKY_WAIT: t["sticky_wait_s"]["median"],
        "the next step's model call, its workflow tasks (the run replayed on the new worker) and its work": t[
            "next_step_s"
        ]["median"],
    }
    components_b = {
        f"lease expiry ({config.detect_seconds:g}s lease)": b["lease_expired_s"]["median"],
        "process start + replay": b["restart_and_replay_s"]["median"],
        f"the step's own work ({config.step_delay:g}s)": config.step_delay,
    }
    return {
        "config": {
            "records": config.records,
            "kill_after": config.kill_after,
            "step_delay": config.step_delay,
            "detect_seconds": config.detect_seconds,
            "retry_interval": retry_interval,
            "reps": config.reps,
            # The worker settings the Temporal side ran with (the levers of recovery after a crash): as shipped,
            # unless the environment said otherwise.
            "sticky_timeout_s": STICKY_TIMEOUT.total_seconds(),
            "release_sticky_runs": Settings().release_sticky_runs,
        },
        "temporal": {"summary": t, "components": components_t, "dominant": _largest(components_t), "runs": temporal},
        "baseline": {"summary": b, "components": components_b, "dominant": _largest(components_b), "runs": baseline},
    }


def _largest(components: dict[str, float | None]) -> str:
    return max(components, key=lambda name: components[name] or 0.0)
