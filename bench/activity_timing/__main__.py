"""`python -m bench.activity_timing DIR`: the medians of what `bench/activity_timing/sitecustomize.py`
recorded in DIR. How to record: docs/benchmarks-history.md, "The last full run"."""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

from bench.report import table
from bench.stats import summarize


def summary(directory: Path) -> str:
    times: dict[str, list[float]] = defaultdict(list)
    for file in sorted(directory.glob("times-*.jsonl")):
        for line in file.read_text().splitlines():
            name, seconds = json.loads(line)
            times[name].append(seconds * 1000)
    if not times:
        raise SystemExit(f"no times-*.jsonl in {directory}: was BENCH_ACTIVITY_TIMES set to it?")
    rows = []
    for name, values in sorted(times.items()):
        s = summarize(values)
        rows.append([name, str(s["n"]), f"{s['median']:.3f}", f"{s['p99']:.3f}"])
    return "\n".join(table(["what", "calls", "median (ms)", "p99 (ms)"], rows))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m bench.activity_timing DIR")
    print(summary(Path(sys.argv[1])))
