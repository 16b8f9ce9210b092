"""`bench profile`: where the worker's CPU goes under load — ours against the bare floor.

    python -m bench profile --n 1000            # both engines, one after the other, on one tuned server

For each engine it starts N `bench-noop` runs at once (as `bench throughput` does) while py-spy samples the
worker process (`py-spy record --format raw --gil`: the Python frames of the thread holding the GIL, i.e. the
Python CPU — one interpreter runs one thread at a time), then
prints the top functions by self time and by total time (share of the samples), and the worker's CPU by
thread — the SDK core's Rust threads (`tokio-*`) carry no Python frames, so py-spy cannot see them; their
share comes from /proc. The collapsed stacks are kept in `--out` (`profile-<engine>.txt`; flamegraph.pl or
speedscope.app draw them). The server side, by event type: `bench throughput`'s history table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from bench.cli import Command, register
from bench.machine import load

TOP = 20


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds by thread name (digits dropped, so a pool's threads add up) of a live process."""
    out: Counter[str] = Counter()
    ticks = os.sysconf("SC_CLK_TCK")
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[name.rstrip("0123456789-_") or name] += (int(fields[11]) + int(fields[12])) / ticks
    return dict(out)


def frame_name(frame: str) -> str:
    """`function (path/to/module.py:123)` -> `function (module path)`, lines dropped so one function is one row."""
    name, _, where = frame.partition(" (")
    path = where.rsplit(":", 1)[0]
    for marker in ("site-packages/", "/perf-cpu/", "/lib/python3.11/"):
        if marker in path:
            path = path.split(marker, 1)[1]
    return f"{name} ({path})"


# Frames every stack passes through (the event loop, the thread pool, the entry point): in the total-time
# table they would only push the informative rows out.
PLUMBING = (
    "asyncio/",
    "threading.py",
    "<frozen runpy>",
    "concurrent/futures/thread.py",
    "selectors.py",
    "contextlib.py",
)
ENTRY = ("(worker.py)", "(duragent/_ops/cli/worker.py)", "(duragent/_ops/cli/boundary.py)", "(bench/floor_worker.py)")


def plumbing(frame: str) -> bool:
    return any(f"({p}" in frame for p in PLUMBING) or frame.endswith(ENTRY)


def top_functions(collapsed: Path, top: int = TOP) -> dict[str, Any]:
    """From py-spy's raw output (`frame;frame;... count` per line): the `top` functions by self samples and
    by total samples (a function counted once per stack; the event loop's and thread pool's own frames left
    out of that table), each as a share of all samples."""
    self_samples: Counter[str] = Counter()
    total_samples: Counter[str] = Counter()
    samples = 0
    for line in collapsed.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [frame_name(f) for f in stack.split(";") if " (" in f]
        if not frames:
            continue
        samples += count
        self_samples[frames[-1]] += count
        for frame in set(frames):
            if not plumbing(frame):
                total_samples[frame] += count

    def rows(counter: Counter[str]) -> list[dict[str, Any]]:
        return [{"function": f, "share": c / samples} for f, c in counter.most_common(top)] if samples else []

    return {"samples": samples, "self": rows(self_samples), "total": rows(total_samples)}


def py_spy() -> str:
    found = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(found).exists():
        raise SystemExit("py-spy is not installed: pip install -r requirements.lock (it is in the dev group)")
    return found


async def profile_engine(stack: Any, kind: str, n: int, steps: int, rate: int, out: Path) -> dict[str, Any]:
    from bench.throughput import temporal_batch, worker_of

    pid = worker_of(stack, kind).pid
    collapsed = out / f"profile-{kind}.txt"
    threads_before = thread_cpu(pid)
    command = [py_spy(), "record", "--pid", str(pid), "--format", "raw", "--rate", str(rate), "--gil"]
    command += ["--output", str(collapsed), "--nonblocking"]
    spy = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        await asyncio.sleep(1.0)  # py-spy attached before the first run starts
        row = await temporal_batch(stack, kind, n, steps, timeout=900.0)
    finally:
        spy.send_signal(signal.SIGINT)
        _, err = spy.communicate(timeout=60)
    if not collapsed.exists():
        raise SystemExit(f"py-spy wrote no profile ({err.strip()[-300:]}); is ptrace allowed here?")
    threads_after = thread_cpu(pid)
    by_thread = {
        name: (threads_after[name] - threads_before.get(name, 0.0)) / n * 1000
        for name in threads_after
        if threads_after[name] - threads_before.get(name, 0.0) > 0
    }
    return {
        "engine": kind,
        "n": n,
        "runs_per_s": row["runs_per_s"],
        "completed": row["completed"],
        "thread_cpu_per_run_ms": dict(sorted(by_thread.items(), key=lambda item: -item[1])),
        **top_functions(collapsed),
    }


def markdown(result: dict[str, Any]) -> str:
    lines: list[str] = []
    for engine in result["engines"]:
        threads = ", ".join(f"{name} {ms:.1f}" for name, ms in engine["thread_cpu_per_run_ms"].items())
        lines += [
            f"### {engine['engine']}: N = {engine['n']}, {engine['samples']} samples",
            "",
            f"Worker CPU per run by thread (ms): {threads}",
            "",
            "| # | self | function (self time) | total | function (total time) |",
            "|---|---|---|---|---|",
        ]
        for i, (own, total) in enumerate(zip(engine["self"], engine["total"], strict=False), 1):
            lines.append(
                f"| {i} | {own['share']:.1%} | `{own['function']}` | {total['share']:.1%} | `{total['function']}` |"
            )
        lines.append("")
    return "\n".join(lines)


async def measure(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    from bench.stack import temporal_stack

    args.out.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"load_average_start": load(), "engines": []}
    async with temporal_stack(workdir / "temporal", floor=True) as stack:
        for kind in args.engine:
            print(f"[profile {kind}] N={args.n}", flush=True)
            result["engines"].append(await profile_engine(stack, kind, args.n, args.steps, args.rate, args.out))
    result["load_average_end"] = load()
    return result


def run(args: argparse.Namespace) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="bench-profile-"))
    try:
        result = asyncio.run(measure(args, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result["command"] = "python -m bench " + " ".join(sys.argv[1:])
    (args.out / "profile.json").write_text(json.dumps(result, indent=2))
    text = markdown(result)
    (args.out / "profile.md").write_text(text)
    print(text, flush=True)
    print(f"load average {result['load_average_start']} -> {result['load_average_end']}", flush=True)
    return 0


def configure(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--n", type=int, default=1000, help="concurrent runs per engine")
    sub.add_argument("--steps", type=int, default=2, help="steps per run (as bench throughput)")
    sub.add_argument("--rate", type=int, default=200, help="py-spy samples per second")
    sub.add_argument(
        "--engine", action="append", choices=["temporal", "floor"], help="repeatable (default: floor, then ours)"
    )
    sub.add_argument("--out", type=Path, default=Path("results"))


def run_command(args: argparse.Namespace) -> int:
    args.engine = args.engine or ["floor", "temporal"]
    return run(args)


HELP = "py-spy of the worker under N concurrent runs, ours vs the floor"
register(Command("profile", HELP, configure, run_command))
