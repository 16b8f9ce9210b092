"""`python -m bench peers`: ours, pydantic-ai's `TemporalAgent` and the OpenAI Agents SDK on Temporal, running
the same script (bench/peers/script.py) on one dev server — the tuned one and the one as it comes, each with
the three stacks' workers on it — the stacks taking turns in an order drawn afresh each repetition
(bench/turns.py).

    python -m bench peers                                  # all rows, both server profiles
    python -m bench peers --steps 3 --long-steps 5 --reps 1 --concurrent 5 --server-profile tuned   # a smoke run

Rows, per stack and server profile:
- per step: the median interval between two model activities' scheduling (server clock) in a run of
  `--steps` tool calls, each repetition's ratio to ours on the same server; the median of those ratios;
- runs/s with `--concurrent` runs started at once (first start to last result), and the CPU the stack's
  worker process and the server used during that batch, per run;
- history events and bytes of one run at `--steps` and at `--long-steps` tool calls;
- a SIGKILL of the stack's worker in the middle of a mutating tool call (after its effect, before its result
  reached the server), a new worker, and the provider's count: effects (de-duplicated on the key the stack
  gives its tools) and executions (what a provider without a key would have done);
- a tool held for a human decision with a deadline, across a worker restart, and one approval's round trip
  (the decision sent → the run's result): ours only measures it; the peers have no such built-in (see
  docs/benchmarks.md, "Side by side with the peers").

Each stack's worker is a process of its own with the same worker settings (sticky cache 1,000, our sticky
timeout). The results go to results/peers.json and a markdown table to results/peers.md.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from temporalio.client import WorkflowHistory

from bench.cli import Command, register
from bench.machine import cpu_seconds
from bench.peers import missing
from bench.peers.report import OPENAI, OURS, PYDANTIC, STACKS, PeersConfig, table
from bench.peers.script import PROVIDER_ENV, Provider, task
from bench.stack import Stack, our_worker, temporal_stack
from bench.stats import ratio
from bench.temporal_runs import event_seconds, history_bytes
from bench.turns import turns
from duragent._client import AgentClient
from duragent._config.settings import ROOT
from duragent._ops.devstack.server_profile import PROFILES
from duragent._ops.devstack.worker_process import WorkerProcess
from duragent._workflows.inputs import Timeouts

# The module of each peer's worker (`python -m ...`) and its workflow's name.
PEER_WORKERS = {PYDANTIC: "bench.peers.pydantic_stack", OPENAI: "bench.peers.openai_stack"}
PEER_WORKFLOWS = {PYDANTIC: "PeersPydanticWorkflow", OPENAI: "PeersOpenAIWorkflow"}
# How each stack's model activity is named: a step is the interval between two of them being scheduled.
MODEL_ACTIVITY = {OURS: "call_model", PYDANTIC: "model_request", OPENAI: "invoke_model_activity"}
TIMEOUTS = Timeouts(heartbeat_seconds=2.0)  # as the peers' activities: a dead worker's call is noticed in 2 s


@dataclass
class Peers:
    """One server with the three stacks' workers on it."""

    stack: Stack
    provider: Provider
    queues: dict[str, str]
    workers: dict[str, WorkerProcess]
    ours: AgentClient

    def start_worker(self, name: str, log_name: str) -> WorkerProcess:
        settings = replace(self.stack.settings, task_queue=self.queues[name])
        log = self.stack.workdir / f"{log_name}.log"
        env = {PROVIDER_ENV: str(self.provider.path)}
        if name == OURS:
            worker = our_worker(settings, log, {**env, "AGENT_MODULES": "bench.peers.ours"})
        else:
            command = [sys.executable, "-m", PEER_WORKERS[name]]
            worker = WorkerProcess(settings, log=log, command=command, extra_env=env)
        self.workers[name] = worker.wait_ready()
        return worker

    async def run(self, name: str, run_id: str, text: str) -> WorkflowHistory:
        """One run of the script, started and awaited as the stack's users would; its history."""
        if name == OURS:
            from bench.peers.ours import agent

            handle = await self.ours.start(agent, text, run_id=run_id, timeouts=TIMEOUTS)
            await handle.result()
            return await handle.workflow.fetch_history()
        started = await self.stack.client.start_workflow(
            PEER_WORKFLOWS[name], text, id=run_id, task_queue=self.queues[name]
        )
        await started.result()
        return await started.fetch_history()


@asynccontextmanager
async def peers_on(workdir: Path, profile: str) -> AsyncIterator[Peers]:
    async with temporal_stack(workdir, floor=False, profile=PROFILES[profile]) as stack:
        queue = stack.settings.task_queue
        peers = Peers(
            stack,
            Provider(workdir / "provider.db"),
            {name: f"{queue}-{name}" for name in STACKS},
            {},
            AgentClient(stack.client, task_queue=f"{queue}-{OURS}"),
        )
        try:
            for name in STACKS:
                peers.start_worker(name, f"worker-{name}")
            yield peers
        finally:
            for worker in peers.workers.values():
                worker.stop()


def model_steps(name: str, history: WorkflowHistory) -> list[float]:
    marks = [
        event_seconds(event)
        for event in history.events
        if event.HasField("activity_task_scheduled_event_attributes")
        and MODEL_ACTIVITY[name] in event.activity_task_scheduled_event_attributes.activity_type.name
    ]
    return [b - a for a, b in itertools.pairwise(marks)]


def run_id(name: str, what: str) -> str:
    return f"peers-{what}-{name}-{uuid.uuid4().hex[:8]}"


async def per_step(peers: Peers, steps: int, reps: int, say: Any) -> dict[str, Any]:
    medians: dict[str, list[float]] = {name: [] for name in STACKS}
    ratios: dict[str, list[float]] = {name: [] for name in STACKS}
    sizes: dict[str, tuple[int, int]] = {}
    for name in STACKS:  # warm: a fresh worker's first run imports what later ones reuse
        await peers.run(name, run_id(name, "warm"), task(2))
    for rep, order in turns(STACKS, reps):
        this_rep: dict[str, float] = {}
        for name in order:
            history = await peers.run(name, run_id(name, "step"), task(steps))
            this_rep[name] = statistics.median(model_steps(name, history))
            sizes[name] = (len(history.events), history_bytes(history))
        for name in STACKS:
            medians[name].append(this_rep[name])
            ratios[name].append(ratio(this_rep[name], this_rep[OURS]) or 0.0)
        say(f"    rep {rep + 1}/{reps}: " + ", ".join(f"{n} {this_rep[n] * 1000:.1f} ms" for n in STACKS))
    return {
        name: {
            "step_ms": statistics.median(medians[name]) * 1000,
            "x_ours": statistics.median(ratios[name]),
            "x_ours_reps": ratios[name],
            "events": sizes[name][0],
            "bytes": sizes[name][1],
        }
        for name in STACKS
    }


async def long_history(peers: Peers, steps: int) -> dict[str, Any]:
    out = {}
    for _, order in turns(STACKS, 1, seed=1):
        for name in order:
            history = await peers.run(name, run_id(name, "long"), task(steps))
            out[name] = {"events": len(history.events), "bytes": history_bytes(history)}
    return out


async def batch(peers: Peers, name: str, n: int, steps: int) -> None:
    gate = asyncio.Semaphore(200)  # start requests in flight, as bench/throughput.py

    async def one(i: int) -> None:
        async with gate:
            await peers.run(name, run_id(name, f"tp{i}"), task(steps))

    await asyncio.gather(*(one(i) for i in range(n)))


async def throughput(peers: Peers, n: int, steps: int, reps: int, say: Any) -> dict[str, Any]:
    server_pid = peers.stack.server.process.pid
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in STACKS}
    for _, order in turns(STACKS, reps, seed=2):
        for name in order:
            worker_pid = peers.workers[name].pid
            before = (cpu_seconds(worker_pid) or 0.0, cpu_seconds(server_pid) or 0.0)
            started = time.perf_counter()
            await batch(peers, name, n, steps)
            wall = time.perf_counter() - started
            await asyncio.sleep(2.0)  # what the batch left the server to do (visibility, timers)
            worker_cpu = (cpu_seconds(worker_pid) or 0.0) - before[0]
            server_cpu = (cpu_seconds(server_pid) or 0.0) - before[1]
            rows[name].append(
                {"runs_per_s": n / wall, "worker_cpu_ms": 1000 * worker_cpu / n, "server_cpu_ms": 1000 * server_cpu / n}
            )
            say(f"    {name}: {n / wall:.1f} runs/s")
    return {name: {key: statistics.median(row[key] for row in rows[name]) for key in rows[name][0]} for name in STACKS}


async def kill_mid_tool(peers: Peers, steps: int, timeout: float) -> dict[str, Any]:
    """SIGKILL each stack's worker while its tool call `pause_at` dawdles after its effect; a new worker."""
    pause_at = (steps + 1) // 2
    out = {}
    for name in STACKS:
        rid = run_id(name, "kill")
        running = asyncio.create_task(peers.run(name, rid, task(steps, pause_at)))
        deadline = time.monotonic() + timeout
        while not peers.provider.executed(rid, pause_at):
            if time.monotonic() > deadline or running.done():
                raise RuntimeError(f"{name}: call {pause_at} of run {rid} never ran")
            await asyncio.sleep(0.05)
        peers.workers[name].kill()
        killed = time.monotonic()
        peers.start_worker(name, f"worker-{name}-after-kill")
        await asyncio.wait_for(running, timeout)
        effects, executions = peers.provider.counts(rid)
        out[name] = {
            "steps": steps,
            "effects": effects,
            "executions": executions,
            "done_after_kill_s": time.monotonic() - killed,
        }
    return out


async def approval(peers: Peers, timeout: float) -> dict[str, Any]:
    """Ours: a gated call waits for a human with a deadline. One approval's round trip (the decision sent ->
    the run's result) on a live worker; then a run held across a worker restart, and its round trip."""
    live, live_ms, _ = await _approved(peers, timeout, restart=False)
    held, held_ms, effects = await _approved(peers, timeout, restart=True)
    held = held and live
    return {
        OURS: {
            "held_across_restart": held,
            "round_trip_ms": live_ms,
            "round_trip_after_restart_ms": held_ms,
            "effects": effects,
        },
        PYDANTIC: {
            "held_across_restart": None,
            "note": "no built-in: deferred tools end the run (your workflow waits)",
        },
        OPENAI: {"held_across_restart": None, "note": "no built-in: a tool's approval interrupts the run"},
    }


async def _approved(peers: Peers, timeout: float, *, restart: bool) -> tuple[bool, float, int]:
    from bench.peers.ours import approval_agent

    handle = await peers.ours.start(approval_agent, "Make one approved step.", run_id=run_id(OURS, "approval"))
    [waiting] = await handle.wait_for_approval(timeout=timeout)
    held = True
    if restart:
        peers.workers[OURS].kill()
        peers.start_worker(OURS, f"worker-{OURS}-{handle.run_id}")
        [still] = await handle.wait_for_approval(timeout=timeout)
        held = (still.call_id, still.deadline) == (waiting.call_id, waiting.deadline) and waiting.deadline is not None
    started = time.perf_counter()
    await handle.approve(waiting.call_id, by="bench", arguments_hash=waiting.arguments_hash)
    result = await handle.result()
    round_trip = 1000 * (time.perf_counter() - started)
    effects, _ = peers.provider.counts(handle.run_id)
    return held and result.status == "completed" and effects == 1, round_trip, effects


async def measure(profiles: Sequence[str], config: PeersConfig, workdir: Path, say: Any) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for profile in profiles:
        say(f"  server profile {profile}")
        async with peers_on(workdir / profile, profile) as peers:
            row: dict[str, Any] = {"server_version": peers.stack.server_version}
            row["per_step"] = await per_step(peers, config.steps, config.reps, say)
            row["long"] = await long_history(peers, config.long_steps)
            say(f"    history at {config.long_steps} tool calls: done")
            row["throughput"] = await throughput(peers, config.concurrent, 2, config.throughput_reps, say)
            row["kill"] = await kill_mid_tool(peers, config.kill_steps, config.timeout)
            say("    kill mid-tool: done")
            row["approval"] = await approval(peers, config.timeout)
            results[profile] = row
    return results


def configure(parser: argparse.ArgumentParser) -> None:
    defaults = PeersConfig()
    parser.add_argument("--steps", type=int, default=defaults.steps, help="tool calls per run for the step rows")
    parser.add_argument("--long-steps", type=int, default=defaults.long_steps, help="tool calls of the long run")
    parser.add_argument("--reps", type=int, default=defaults.reps, help="repetitions of the per-step runs")
    parser.add_argument("--concurrent", type=int, default=defaults.concurrent, help="runs at once for runs/s")
    parser.add_argument("--throughput-reps", type=int, default=defaults.throughput_reps)
    parser.add_argument("--kill-steps", type=int, default=defaults.kill_steps, help="tool calls of the killed run")
    parser.add_argument("--server-profile", choices=[*PROFILES, "both"], default="both")
    parser.add_argument("--out", type=Path, default=ROOT / "results", help="where peers.json and peers.md go")


def run(args: argparse.Namespace) -> int:
    absent = missing()
    if absent:
        print(f"bench peers: {', '.join(absent)} not installed (make peers installs requirements-peers.lock)")
        return 2
    config = PeersConfig(
        steps=args.steps,
        long_steps=args.long_steps,
        reps=args.reps,
        concurrent=args.concurrent,
        throughput_reps=args.throughput_reps,
        kill_steps=args.kill_steps,
    )
    profiles = list(PROFILES) if args.server_profile == "both" else [args.server_profile]
    print(f"bench peers: {', '.join(STACKS)} on the {' and '.join(profiles)} server", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as scratch:
        results = asyncio.run(measure(profiles, config, Path(scratch), lambda line: print(line, flush=True)))
    markdown = table(results, config)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "peers.json").write_text(json.dumps({"config": config.__dict__, "results": results}, indent=1))
    (args.out / "peers.md").write_text(markdown + "\n")
    print(markdown)
    return 0


register(
    Command(
        "peers", "ours, pydantic-ai's TemporalAgent and the OpenAI Agents SDK on Temporal, side by side", configure, run
    )
)
