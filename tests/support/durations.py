"""Write tests/durations.json from a `pytest --durations=0` log: each test file's seconds (setup, call and
teardown of its tests), which orders the files of `make test` heaviest first (tests/support/cost_markers.py).

    .venv/bin/python -m pytest -n 5 --durations=0 | tee /tmp/full.log
    .venv/bin/python -m tests.support.durations /tmp/full.log

Only the ratios matter, so a run on a loaded machine serves; refresh it when a file's weight changes a lot.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

from tests.support.cost_markers import DURATIONS

LINE = re.compile(r"([\d.]+)s (?:call|setup|teardown)\s+(\S+?)::")


def per_file(log: str) -> dict[str, float]:
    seconds: Counter[str] = Counter()
    for line in log.splitlines():
        if match := LINE.match(line):
            seconds[match[2]] += float(match[1])
    return {name: round(total, 1) for name, total in sorted(seconds.items())}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.support.durations PYTEST_LOG (a run with --durations=0)", file=sys.stderr)
        return 2
    found = per_file(Path(argv[0]).read_text(errors="replace"))
    if not found:
        print(f"no durations in {argv[0]}: run pytest with --durations=0", file=sys.stderr)
        return 1
    DURATIONS.write_text(json.dumps(found, indent=1) + "\n")
    print(f"{DURATIONS}: {len(found)} files, {sum(found.values()):.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
