"""`python -m bench.activity_timing DIR`: the medians of what `bench/activity_timing/sitecustomize.py`
recorded in DIR. How to record: docs/benchmarks.md, "The last full run"."""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path


def summary(directory: Path) -> str:
    times: dict[str, list[float]] = defaultdict(list)
    for file in sorted(directory.glob("times-*.jsonl")):
        for line in file.read_text().splitlines():
            name, seconds = json.loads(line)
            times[name].append(seconds * 1000)
    if not times:
        raise SystemExit(f"no times-*.jsonl in {directory}: was BENCH_ACTIVITY_TIMES set to it?")
    rows = ["| what | calls | median (ms) | mean (ms) |", "|---|---|---|---|"]
    for name in sorted(times):
        values = times[name]
        rows.append(f"| {name} | {len(values)} | {statistics.median(values):.3f} | {statistics.mean(values):.3f} |")
    return "\n".join(rows)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m bench.activity_timing DIR")
    print(summary(Path(sys.argv[1])))
