"""`python -m bench chaos-net [--short] [--faults a,b] [--runs N] [--hold S] [--seed S]`: the network fault
matrix (bench/chaos/network.py) on a lab of network namespaces made for this run, deleted at its end.

It prints one row per fault (runs, answered, compensated, lost, duplicate, approvals honoured, deadlines missed,
forked transcripts), and last the line

    chaos-net: faults=F clean=C lost=L duplicate_effects=D approvals=H/A missed_deadlines=M

The exit code is 0 when every row is clean, 1 otherwise, and 2 when namespaces cannot be made here (not root, no
`ip`, no /dev/net/tun: the one-line reason is printed).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import re
import shutil
import tempfile
from pathlib import Path

from bench.chaos.net_invariants import Row, table
from bench.chaos.net_run import LONG, SHORT, Matrix
from bench.chaos.net_stack import net_stack
from bench.chaos.network import FAULTS, run_fault
from bench.cli import Command, register
from duragent._ops.devstack.netlab import Lab, why_unavailable
from duragent._ops.devstack.signals import until_signalled

LAST_LINE = re.compile(
    r"^chaos-net: faults=(?P<faults>\d+) clean=(?P<clean>\d+) lost=(?P<lost>\d+) "
    r"duplicate_effects=(?P<duplicate_effects>\d+) approvals=(?P<honoured>\d+)/(?P<approvals>\d+) "
    r"missed_deadlines=(?P<missed_deadlines>\d+)$"
)
PROVIDER_DELAY = 3.0  # the provider holds its answer this long after a refund: the frontend cut's window


def say(text: str) -> None:
    print(text, flush=True)


def configure(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--short", action="store_true", help="the bounded matrix the test suite runs")
    sub.add_argument("--faults", default=",".join(FAULTS), help=f"comma-separated, of: {', '.join(FAULTS)}")
    sub.add_argument("--runs", type=int, help="demo runs per fault, besides one orders run (short 5, long 20)")
    sub.add_argument("--hold", type=float, help="seconds a cut or a degraded network lasts (short 6, long 30)")
    sub.add_argument("--seed", type=int, default=1)
    sub.add_argument("--out", type=Path, default=Path("results"), help="where chaos-net.json goes")
    sub.add_argument("--keep", action="store_true", help="keep the scratch directory (logs, databases)")


def last_line(rows: list[Row]) -> str:
    return (
        f"chaos-net: faults={len(rows)} clean={sum(r.ok for r in rows)} lost={sum(len(r.lost) for r in rows)} "
        f"duplicate_effects={sum(len(r.duplicates) for r in rows)} "
        f"approvals={sum(r.honoured for r in rows)}/{sum(r.approvals for r in rows)} "
        f"missed_deadlines={sum(len(r.missed_deadlines) for r in rows)}"
    )


async def matrix(faults: list[str], m: Matrix, workdir: Path) -> list[Row]:
    rows = []
    with Lab(["temporal", "postgres", "provider", "w1", "w2"], log=workdir / "wire.log") as lab:
        hosts = ", ".join(f"{h.name} {h.address}" for h in lab.hosts.values())
        say(f"lab: {hosts}")
        async with net_stack(lab, workdir, provider_delay=PROVIDER_DELAY) as stack:
            for fault in faults:
                say(f"fault {fault}: starting {m.runs + 1} runs")
                row = await run_fault(stack, fault, m, say)
                for problem in row.lost + row.duplicates + row.missed_deadlines + row.forks + row.anomalies:
                    say(f"  {fault}: {problem}")
                rows.append(row)
    return rows


def cmd_chaos_net(args: argparse.Namespace) -> int:
    reason = why_unavailable()
    if reason is not None:
        say(f"chaos-net: cannot make network namespaces here: {reason}")
        return 2
    faults = [f.strip() for f in args.faults.split(",") if f.strip()]
    unknown = [f for f in faults if f not in FAULTS]
    if unknown:
        say(f"chaos-net: unknown fault(s) {', '.join(unknown)}; known: {', '.join(FAULTS)}")
        return 2
    base = SHORT if args.short else LONG
    m = dataclasses.replace(
        base,
        runs=base.runs if args.runs is None else args.runs,
        hold=base.hold if args.hold is None else args.hold,
        seed=args.seed,
    )
    workdir = Path(tempfile.mkdtemp(prefix="chaos-net-"))
    say(f"chaos-net: faults {', '.join(faults)}; {m.runs} demo runs + 1 orders run each, hold {m.hold:g}s")
    # Ctrl-C, SIGTERM or SIGHUP cancel the matrix where it awaits: the processes, then the lab, go in its finallys.
    rows = asyncio.run(until_signalled(matrix(faults, m, workdir)))
    say(table(rows))
    clean = all(row.ok for row in rows)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "chaos-net.json").write_text(
        json.dumps({"matrix": dataclasses.asdict(m), "rows": [dataclasses.asdict(r) for r in rows]}, indent=2)
    )
    if clean and not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        say(f"scratch directory (logs, databases): {workdir}")
    say(last_line(rows))
    return 0 if clean else 1


register(
    Command(
        "chaos-net",
        "cut, slow down and drop the network between workers, Temporal, PostgreSQL and a tool provider",
        configure,
        cmd_chaos_net,
    )
)
