"""`python -m bench real-model`: how long a step waits for the real local model (SmolLM2-135M on
llama-cpp-python, ops/modelserver.py) — the denominator that makes a runner's per-step overhead meaningful.

Each rep runs the in-process agent on a small calculator task: step 1 is a forced `add` call (grammar-
constrained arguments), step 2 an answer of at most `max_tokens`. Every model call is timed around
`Model.complete`, so the number includes HTTP and parsing, as every runner pays them. The task varies per rep
so the server's prompt cache only ever holds what a real agent's would: the shared system prompt and tools.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from agentic import Agent, Budget, Message, ModelReply, ModelSettings, Registry, Stop, ToolSchema, tool
from bench import machine
from bench.cli import Command, register
from bench.stats import summarize
from ops import modelserver
from ops.devserver import free_port
from ops.settings import LOCAL_MODEL_N_CTX

SYSTEM = "You are a calculator. Use the add tool, then state the sum."


@tool("Add two integers and return their sum.", a="the first integer", b="the second integer")
def add(a: int, b: int) -> int:
    return a + b


@dataclass
class TimedModel:
    """A model whose every call is timed, by kind: a tool call or an answer."""

    model: Any
    seconds: dict[str, list[float]] = field(default_factory=lambda: {"tool_call": [], "answer": []})
    output_tokens: list[int] = field(default_factory=list)

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
        self.seconds["tool_call" if reply.message.tool_calls else "answer"].append(time.perf_counter() - started)
        self.output_tokens.append(reply.output_tokens)
        return reply


def model_latency(base_url: str, *, reps: int = 10, warmup: int = 1, max_tokens: int = 16) -> dict[str, Any]:
    """Median (and p99) seconds per model call over `reps` two-step runs, after `warmup` unmeasured ones."""
    settings = ModelSettings(first_tool_choice="add", tool_choice="none", temperature=0.0, max_tokens=max_tokens)
    registry = Registry([add])
    model = modelserver.local_model(base_url, settings=settings)
    timed = TimedModel(model)
    for rep in range(warmup + reps):
        agent = Agent(timed if rep >= warmup else model, registry, system=SYSTEM, budget=Budget(max_steps=3))
        run = agent.run(f"What is {rep} plus {rep + 7}?")
        if run.stop is not Stop.ANSWERED:
            raise RuntimeError(f"rep {rep}: the run stopped with {run.stop} ({run.stop_detail})")
    steps = timed.seconds["tool_call"] + timed.seconds["answer"]
    return {
        "per_step": summarize(steps),
        "tool_call": summarize(timed.seconds["tool_call"]),
        "answer": summarize(timed.seconds["answer"]),
        "output_tokens": summarize([float(n) for n in timed.output_tokens]),
        "reps": reps,
        "max_tokens": max_tokens,
    }


def measure(
    base_url: str | None = None,
    *,
    reps: int = 10,
    warmup: int = 1,
    max_tokens: int = 16,
    n_ctx: int = LOCAL_MODEL_N_CTX,
    threads: int | None = None,
    log: Path | None = None,
) -> dict[str, Any]:
    """Against `base_url`, or a model server of our own started (and stopped) for the measurement."""
    server = None
    if base_url is None:
        server = modelserver.start(free_port(), n_ctx, threads=threads, log=log)
        base_url = server.base_url
    try:
        result = model_latency(base_url, reps=reps, warmup=warmup, max_tokens=max_tokens)
    finally:
        if server is not None:
            server.stop()
    result["server"] = {
        "url": base_url,
        "model": modelserver.MODEL_FILE if server else "(external)",
        "llama_cpp_python": metadata.version("llama-cpp-python"),
        "n_ctx": n_ctx if server else None,
        "threads": threads,
    }
    result["machine"] = {"cpus": os.cpu_count(), "load_average": machine.load()}
    return result


def print_result(result: dict[str, Any]) -> None:
    def line(label: str, summary: dict[str, Any], unit: str = "s", digits: int = 3) -> str:
        if not summary["n"]:
            return f"  {label}: no samples"
        median, p99 = f"{summary['median']:.{digits}f}", f"{summary['p99']:.{digits}f}"
        return f"  {label}: median {median} {unit}, p99 {p99} {unit} (n={summary['n']})"

    server = result["server"]
    print(
        f"real model: {server['model']} on llama-cpp-python {server['llama_cpp_python']}, n_ctx {server['n_ctx']}, "
        f"threads {server['threads'] or 'default'}; {result['machine']['cpus']} cpus, "
        f"load {result['machine']['load_average']}",
        flush=True,
    )
    print(line("model latency per step", result["per_step"]), flush=True)
    print(line("  forced tool call", result["tool_call"]), flush=True)
    print(line(f"  answer (max_tokens {result['max_tokens']})", result["answer"]), flush=True)
    print(line("output tokens per step", result["output_tokens"], "tokens", 0), flush=True)


def configure(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--reps", type=int, default=10, help="measured two-step runs")
    sub.add_argument("--warmup", type=int, default=1)
    sub.add_argument("--max-tokens", type=int, default=16)
    sub.add_argument("--threads", type=int, default=None, help="the model server's threads (default: its own)")
    sub.add_argument("--base-url", default=None, help="an already running server (default: start one)")
    sub.add_argument("--json", type=Path, default=None, help="also write the numbers to this file")


def run(args: argparse.Namespace) -> int:
    if args.base_url is None and (reason := modelserver.missing()) is not None:
        print(f"error: {reason}", flush=True)
        return 1
    result = measure(
        args.base_url, reps=args.reps, warmup=args.warmup, max_tokens=args.max_tokens, threads=args.threads
    )
    print_result(result)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))
    return 0


register(Command("real-model", "median latency per step of the real local model (the llm group)", configure, run))
