"""Where a test run's CPU goes, by kind of process: the kernel's BSD process accounting (every process that exits,
with its own CPU) joined with the command lines a sampler saw, since accounting keeps only 16 characters of a name
and every Python process is "python". Needs Debian's `acct` (`apt-get install acct`) and root.

    touch /tmp/pacct && accton /tmp/pacct
    .venv/bin/python -m tests.support.process_cpu sample /tmp/pids.jsonl &    # note each process's command line
    make test
    accton off; kill %1
    .venv/bin/python -m tests.support.process_cpu report /tmp/pacct /tmp/pids.jsonl

The sampler reads /proc every 0.2 s (a few per cent of a core), each new process for its first second (a fork
is seen before its exec). A process that lives less than 0.2 s may be missed: it is counted under its short name.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")  # dump-acct prints CPU times in clock ticks
SERVERS = {
    "start-dev": "Temporal dev server",
    "temporal-test-server": "time-skipping server",
    "llama_cpp.server": "local model server",
    "postgres": "PostgreSQL",
    "initdb": "PostgreSQL",
    "chrom": "chromium",
}
COMMANDS = ("starter.py", "worker.py", "duragent._ops.cli.job")


def kind(name: str, command: str) -> str:
    """What a process was, from its accounting name and the command line the sampler saw ("" if none)."""
    for mark, server in SERVERS.items():
        if mark in command or name.startswith(mark):
            return server
    words = command.split()
    if "execnet" in command or "exec(eval(sys.stdin.readline()))" in command:
        return "pytest-xdist worker"
    names = [Path(word).name for word in words]
    for entry in COMMANDS:
        if entry in names:
            rest = [w for w in words[names.index(entry) + 1 :] if not w.startswith("-")]
            return f"{entry} {rest[0]}" if rest else entry
    if "-m" in words[:-1]:
        return f"python -m {words[words.index('-m') + 1]}"
    if "-c" in words:
        return "python -c (a test's inline script)"
    if words[1:] and words[1].endswith(".py"):
        return f"python {Path(words[1]).name}"
    return name


def sample(out: Path, every: float = 0.2, first_seconds: float = 1.0) -> None:
    """Append `[pid, command line]` for each process seen, again whenever its command line changes in its first
    second; runs until killed."""
    looks = int(first_seconds / every)
    seen: dict[str, int] = {}
    last: dict[str, str] = {}
    with out.open("a") as file:
        while True:
            for pid in filter(str.isdigit, os.listdir("/proc")):
                if seen.get(pid, 0) > looks:
                    continue
                seen[pid] = seen.get(pid, 0) + 1
                try:
                    command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    continue
                if command and last.get(pid) != command:
                    last[pid] = command
                    file.write(json.dumps([int(pid), command.strip()[:400]]) + "\n")
            file.flush()
            time.sleep(every)


def by_kind(accounting: str, commands: dict[int, str]) -> dict[str, tuple[float, int]]:
    """CPU seconds and process count per kind, from `dump-acct` output (name|version|user|system|...|pid|...)."""
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for line in accounting.splitlines():
        fields = [f.strip() for f in line.split("|")]
        if len(fields) < 11:
            continue
        cpu = (float(fields[2]) + float(fields[3])) / TICKS
        entry = totals[kind(fields[0], commands.get(int(fields[9]), ""))]
        entry[0] += cpu
        entry[1] += 1
    return {k: (round(cpu, 1), int(n)) for k, (cpu, n) in sorted(totals.items(), key=lambda kv: -kv[1][0])}


def report(pacct: Path, pids: Path) -> str:
    commands = {pid: command for pid, command in map(json.loads, pids.read_text().splitlines())}
    accounting = subprocess.run(["dump-acct", str(pacct)], capture_output=True, text=True, check=True).stdout
    kinds = by_kind(accounting, commands)
    total = sum(cpu for cpu, _ in kinds.values())
    lines = [f"{total:.0f} CPU-seconds in {sum(n for _, n in kinds.values())} processes"]
    lines += [f"{cpu:8.1f} s {n:6d}  {name}" for name, (cpu, n) in kinds.items()]
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:2] == ["sample"] and len(sys.argv) == 3:
        sample(Path(sys.argv[2]))
    elif sys.argv[1:2] == ["report"] and len(sys.argv) == 4:
        print(report(Path(sys.argv[2]), Path(sys.argv[3])))
    else:
        sys.exit("usage: python -m tests.support.process_cpu sample PIDS.jsonl | report PACCT PIDS.jsonl")
