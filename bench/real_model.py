"""`python -m bench real-model`: what durability costs next to a real model. One run measures the local
model's latency per step (SmolLM2-135M on llama-cpp-python, duragent/_ops/devstack/modelserver.py) and, on the same
agent and
the same server, each runner's own per-step cost — the in-process `Agent.run`, the checkpoint runner
(`duragent._baseline.jobs`) and Temporal (a worker and `AgentClient.start(..., model="local")`) — as a percentage of it.

The agent is a small calculator: step 1 is a forced `add` call (grammar-constrained arguments), step 2 an
answer of at most `max_tokens`. Every runner takes the model by name (`local`) from one `ModelCatalog` whose
model times each `Model.complete` (HTTP and parsing included, as every runner pays them) on one clock: the
Temporal worker runs in this process for that reason. A runner's overhead per step is a run's wall time
(start to result, as its caller sees it) minus the time inside its model calls, divided by its model calls.
Engines take turns rep by rep (`bench.turns`), so background load hits them alike; within a rep each
gets the same task (the same prompts: the server's prompt cache treats them alike), and the task varies per
rep so the cache only ever holds what a real agent's would: the shared system prompt and tools.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from temporalio.client import Client

from agentic import Agent, Budget, Message, ModelReply, ModelSettings, Registry, Stop, ToolSchema, tool
from agentic.agent_set import AgentSet
from agentic.models.catalog import ModelCatalog
from agentic.models.local import local_model
from bench import machine
from bench.cli import Command, register
from bench.stats import ratio, summarize
from bench.turns import turns
from duragent._baseline import jobs
from duragent._baseline.options import RunOptions
from duragent._baseline.store import Store
from duragent._client import AgentClient
from duragent._config.settings import LOCAL_MODEL_N_CTX, Settings
from duragent._connection import connect
from duragent._ops.devstack import devserver, modelserver
from duragent._ops.devstack.devserver import free_port
from duragent._stores.transcripts import SqliteTranscriptStore, Transcripts
from duragent._worker import build_worker

NAME = "bench-real-model"
MODEL = "local"
SYSTEM = "You are a calculator. Use the add tool, then state the sum."
ENGINES = ("in-process", "checkpoint", "temporal")


@tool("Add two integers and return their sum.", a="the first integer", b="the second integer")
def add(a: int, b: int) -> int:
    return a + b


@dataclass
class TimedModel:
    """A model whose every call is timed, by kind: a tool call or an answer."""

    model: Any
    calls: list[tuple[str, float, int]] = field(default_factory=list)  # (kind, seconds, output tokens)

    @property
    def name(self) -> str:
        return str(self.model.name)

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSchema] = (),
        *,
        call_index: int | None = None,
        settings: ModelSettings | None = None,
    ) -> ModelReply:
        started = time.perf_counter()
        reply: ModelReply = self.model.complete(messages, tools, call_index=call_index, settings=settings)
        kind = "tool_call" if reply.message.tool_calls else "answer"
        self.calls.append((kind, time.perf_counter() - started, reply.output_tokens))
        return reply


@dataclass
class Sample:
    """One run: its wall time and the model calls it made."""

    engine: str
    wall: float
    calls: list[tuple[str, float, int]]

    @property
    def model_seconds(self) -> float:
        return sum(seconds for _, seconds, _ in self.calls)

    @property
    def overhead_per_step(self) -> float:
        return (self.wall - self.model_seconds) / len(self.calls)


def calculator(model: TimedModel, max_tokens: int) -> Agent:
    settings = ModelSettings(first_tool_choice="add", tool_choice="none", temperature=0.0, max_tokens=max_tokens)
    return Agent(model, Registry([add]), system=SYSTEM, budget=Budget(max_steps=3), name=NAME, model_settings=settings)


class Runners:
    """The three runners on one agent and one timed model; `run` returns one run's sample."""

    def __init__(self, agent: Agent, timed: TimedModel, workdir: Path, client: Client) -> None:
        self.agent, self.timed = agent, timed
        models = ModelCatalog({MODEL: timed})
        self.agents = AgentSet([agent], None, models, where="in the bench")
        self.store = Store(workdir / "checkpoints.db")
        self.task_queue = f"bench-real-model-{uuid.uuid4().hex[:8]}"
        self.client = AgentClient(client, task_queue=self.task_queue)
        self.worker = build_worker(
            client,
            task_queue=self.task_queue,
            agents=[agent],
            models=models,
            transcripts=Transcripts(SqliteTranscriptStore(workdir / "transcripts.db")),
        )

    async def run(self, engine: str, task: str) -> Sample:
        self.timed.calls.clear()
        started = time.perf_counter()
        if engine == "in-process":
            stop = (await asyncio.to_thread(self.agent.run, task)).stop
        elif engine == "checkpoint":
            options = RunOptions(task=task, model=MODEL)
            row = await asyncio.to_thread(jobs.start, self.store, self.agents, f"rm-{uuid.uuid4().hex}", NAME, options)
            stop = Stop(row.stop) if row.stop else None
        else:
            handle = await self.client.start(self.agent, task, model=MODEL)
            stop = (await handle.result()).stop
        wall = time.perf_counter() - started
        if stop is not Stop.ANSWERED:
            raise RuntimeError(f"{engine}: the run stopped with {stop}, not an answer")
        return Sample(engine, wall, list(self.timed.calls))


async def measure_runners(
    base_url: str, client: Client, workdir: Path, *, reps: int = 10, warmup: int = 1, max_tokens: int = 16
) -> dict[str, Any]:
    """`reps` runs per engine after `warmup` unmeasured rounds, against a model server and a Temporal server."""
    timed = TimedModel(local_model(base_url))
    runners = Runners(calculator(timed, max_tokens), timed, workdir, client)
    samples: list[Sample] = []
    try:
        async with runners.worker:
            for rep, order in turns(ENGINES, warmup + reps):
                for engine in order:
                    sample = await runners.run(engine, f"What is {rep} plus {rep + 7}?")
                    if rep >= warmup:
                        samples.append(sample)
    finally:
        runners.store.close()
    return summary(samples, reps=reps, max_tokens=max_tokens)


def summary(samples: list[Sample], *, reps: int, max_tokens: int) -> dict[str, Any]:
    calls = [call for s in samples for call in s.calls]
    per_step = summarize([seconds for _, seconds, _ in calls])
    result: dict[str, Any] = {
        "reps": reps,
        "max_tokens": max_tokens,
        "model": {
            "per_step": per_step,
            "tool_call": summarize([seconds for kind, seconds, _ in calls if kind == "tool_call"]),
            "answer": summarize([seconds for kind, seconds, _ in calls if kind == "answer"]),
            "output_tokens": summarize([float(tokens) for _, _, tokens in calls]),
        },
        "engines": {},
    }
    for engine in ENGINES:
        mine = [s for s in samples if s.engine == engine]
        overhead = summarize([s.overhead_per_step for s in mine])
        result["engines"][engine] = {
            "overhead_per_step": overhead,
            "wall_per_step": summarize([s.wall / len(s.calls) for s in mine]),
            "percent_of_model": None
            if overhead["median"] is None
            else 100 * (ratio(overhead["median"], per_step["median"]) or 0.0),
        }
    return result


async def measure(
    base_url: str | None = None,
    *,
    reps: int = 10,
    warmup: int = 1,
    max_tokens: int = 16,
    n_ctx: int = LOCAL_MODEL_N_CTX,
    threads: int = modelserver.DEFAULT_THREADS,
) -> dict[str, Any]:
    """Against `base_url`, or a model server of our own; always a Temporal dev server of our own (tuned, as
    we ship it: duragent/_ops/devstack/server_profile.py), on a persistent SQLite database in a scratch directory.
    Both are
    stopped by pid at the end, on Ctrl-C, SIGTERM or SIGHUP."""
    load_before = machine.load()
    with tempfile.TemporaryDirectory(prefix="bench-real-model-", ignore_cleanup_errors=True) as scratch:
        workdir = Path(scratch)
        server = None
        if base_url is None:
            server = modelserver.start(free_port(), n_ctx, threads=threads, log=workdir / "model-server.log")
        url = server.base_url if server else base_url
        assert url is not None
        temporal = None
        try:
            temporal = devserver.start(free_port(), None, workdir / "dev.db", log=workdir / "temporal.log")
            await devserver.wait_until_serving(temporal.address)
            client = await connect(Settings(address=temporal.address, namespace="default"))
            result = await measure_runners(url, client, workdir, reps=reps, warmup=warmup, max_tokens=max_tokens)
        finally:
            if temporal is not None:
                temporal.stop()
            if server is not None:
                server.stop()
    result["server"] = {
        "url": url,
        "model": modelserver.MODEL_FILE if server else "(external)",
        "llama_cpp_python": metadata.version("llama-cpp-python"),
        "n_ctx": n_ctx if server else None,
        "threads": threads,
    }
    result["machine"] = {"cpus": os.cpu_count(), "load_before": load_before, "load_after": machine.load()}
    return result


def lines(result: dict[str, Any]) -> list[str]:
    def seconds(label: str, summary: dict[str, Any]) -> str:
        if not summary["n"]:
            return f"  {label}: no samples"
        return f"  {label}: median {summary['median']:.3f} s, p99 {summary['p99']:.3f} s (n={summary['n']})"

    server, model = result["server"], result["model"]
    out = [
        f"real model: {server['model']} on llama-cpp-python {server['llama_cpp_python']}, n_ctx {server['n_ctx']}, "
        f"threads {server['threads']}; {result['machine']['cpus']} cpus, load "
        f"{result['machine']['load_before']} before, {result['machine']['load_after']} after",
        seconds("model latency per step", model["per_step"]),
        seconds("  forced tool call", model["tool_call"]),
        seconds(f"  answer (max_tokens {result['max_tokens']})", model["answer"]),
        f"runner overhead per step (a run's wall time minus its model calls, per model call; {result['reps']} runs "
        "each):",
    ]
    for engine, numbers in result["engines"].items():
        overhead = numbers["overhead_per_step"]
        if not overhead["n"]:
            out.append(f"  {engine}: no samples")
            continue
        out.append(
            f"  {engine:<10} median {1000 * overhead['median']:8.1f} ms = {numbers['percent_of_model']:6.2f} % of "
            f"the model's latency per step (p99 {1000 * overhead['p99']:.1f} ms)"
        )
    return out


def configure(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--reps", type=int, default=10, help="measured runs per engine")
    sub.add_argument("--warmup", type=int, default=1, help="unmeasured rounds first")
    sub.add_argument("--max-tokens", type=int, default=16)
    sub.add_argument("--threads", type=int, default=modelserver.DEFAULT_THREADS, help="the model server's threads (1)")
    sub.add_argument("--base-url", default=None, help="an already running model server (default: start one)")
    sub.add_argument("--json", type=Path, default=None, help="also write the numbers to this file")


def run(args: argparse.Namespace) -> int:
    if args.base_url is None and (reason := modelserver.missing()) is not None:
        print(f"error: {reason}", flush=True)
        return 1
    result = asyncio.run(
        measure(args.base_url, reps=args.reps, warmup=args.warmup, max_tokens=args.max_tokens, threads=args.threads)
    )
    for line in lines(result):
        print(line, flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))
    return 0


register(
    Command(
        "real-model",
        "the real local model's latency per step, and each runner's per-step overhead as a percentage of it",
        configure,
        run,
    )
)
