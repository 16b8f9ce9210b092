"""Facts about the machine a bench ran on, printed with every report: numbers mean little without them."""

from __future__ import annotations

import os
import platform
import sqlite3
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from duragent._config.temporal_binaries import TEMPORAL_CLI


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _ram_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _temporal_cli() -> str:
    binary = TEMPORAL_CLI
    try:
        return subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def facts(server_version: str | None = None) -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "ram_gib": _ram_gib(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "temporalio": metadata.version("temporalio"),
        "temporal_cli": _temporal_cli(),
        "temporal_server": server_version,
        "sqlite": sqlite3.sqlite_version,
        "load_average": load(),
    }


def pin(pid: int, cpus: set[int]) -> set[int]:
    """Every thread of process `pid` on `cpus` (threads it starts later inherit it); returns the process's mask
    before. A thread that ends meanwhile is skipped."""
    before = os.sched_getaffinity(pid)
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except ProcessLookupError:
            continue
    return before


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time a live process has used so far (Linux /proc), or None if unreadable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
