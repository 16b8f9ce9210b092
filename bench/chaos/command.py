"""`python -m bench chaos --engine temporal|baseline --runs N --seed S`.

The last line printed is always

    chaos ENGINE: runs=N completed=C compensated=K lost=L duplicate_effects=D kills=X

and the exit code is 1 when L or D is not 0, or when a run ended otherwise than its agent and options say
or a completed run misses an effect (anomalies, listed above the last line); 0 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.chaos.invariants import check
from bench.chaos.plan import plan
from bench.cli import Command, register


def say(text: str) -> None:
    print(text, flush=True)


def configure(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--engine", choices=["temporal", "baseline"], required=True)
    sub.add_argument("--runs", type=int, default=20)
    sub.add_argument("--seed", type=int, help="default: random (printed, to re-run the same session)")
    sub.add_argument("--kills", type=int, help="SIGKILLs of worker/job processes (default: runs/2, at least 2)")
    sub.add_argument("--server-restarts", type=int, help="Temporal only: dev server SIGKILLs+restarts (default 1-3)")
    sub.add_argument("--timeout", type=float, help="seconds for every run to end (default 120 + 6 per run)")
    sub.add_argument("--out", type=Path, default=Path("results"), help="where chaos-ENGINE.json goes")
    sub.add_argument("--keep", action="store_true", help="keep the scratch directory (logs, databases)")


def cmd_chaos(args: argparse.Namespace) -> int:
    seed = args.seed if args.seed is not None else random.randrange(1_000_000)
    kills = args.kills if args.kills is not None else max(2, args.runs // 2)
    restarts = args.server_restarts if args.server_restarts is not None else min(3, 1 + args.runs // 20)
    timeout = args.timeout or 120.0 + 6.0 * args.runs
    specs = plan(args.runs, seed, f"chaos-{args.engine[0]}{seed}-{int(time.time()) % 100000}")
    say(
        f"chaos {args.engine}: {args.runs} runs, seed {seed}, {kills} kills"
        + (f", {restarts} server restarts" if args.engine == "temporal" else "")
    )
    workdir = Path(tempfile.mkdtemp(prefix=f"chaos-{args.engine}-"))
    started = time.perf_counter()
    outcome: Any
    if args.engine == "temporal":
        from bench.chaos import temporal

        outcome = asyncio.run(
            temporal.run(specs, workdir, kills=kills, server_restarts=restarts, seed=seed, timeout=timeout, say=say)
        )
        extra = {"server_restarts": outcome.server_restarts, "worker_exits": outcome.worker_exits}
    else:
        from bench.chaos import baseline

        outcome = baseline.run(specs, workdir, kills=kills, seed=seed, timeout=timeout, say=say)
        extra = {
            "resumes": outcome.resumes,
            "reruns": outcome.reruns,
            "lock_errors": outcome.lock_errors,
            "exits": outcome.exits,
        }
    seconds = time.perf_counter() - started
    verdict = check(specs, outcome.statuses, outcome.effects)
    for note in outcome.notes:
        say(f"note: {note}")
    say(f"outcomes: {verdict.outcomes()}; {', '.join(f'{k}={v}' for k, v in extra.items())}; {seconds:.1f}s")
    for title, items in (
        ("lost", verdict.lost),
        ("duplicate effects", verdict.duplicates),
        ("anomalies", verdict.anomalies),
    ):
        say(f"{title}: {len(items)}")
        for item in items:
            say(f"  {item}")
    args.out.mkdir(parents=True, exist_ok=True)
    record = {
        "engine": args.engine,
        "seed": seed,
        "runs": [asdict(s) | {"status": verdict.statuses[s.run_id]} for s in specs],
        "kills": outcome.kills,
        **extra,
        "lost": verdict.lost,
        "duplicates": verdict.duplicates,
        "anomalies": verdict.anomalies,
        "seconds": seconds,
        "workdir": str(workdir) if (args.keep or not verdict.ok) else None,
    }
    (args.out / f"chaos-{args.engine}.json").write_text(json.dumps(record, indent=2, default=str))
    if verdict.ok and not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        say(f"scratch directory (logs, databases): {workdir}")
    say(verdict.line(args.engine, outcome.kills))
    return 0 if verdict.ok else 1


register(
    Command(
        "chaos",
        "kill workers (and the Temporal server) at random; check no run lost, no effect twice",
        configure,
        cmd_chaos,
    )
)
