"""The CPU-by-process report (tests/support/process_cpu.py): each kind of process the suite starts is named from
its command line, and `dump-acct`'s lines (as the tool prints them) are summed per kind in seconds."""

from __future__ import annotations

import pytest

from tests.support.process_cpu import TICKS, by_kind, kind

pytestmark = pytest.mark.unit

VENV = "/work/x/.venv/bin/python"


@pytest.mark.parametrize(
    ("name", "command", "expected"),
    [
        ("temporal", "/work/x/.venv/bin/temporal server start-dev --port 1", "Temporal dev server"),
        ("python", f"{VENV} -m llama_cpp.server --model m.gguf", "local model server"),
        ("postgres", "", "PostgreSQL"),
        ("python", f"{VENV} -u -c import sys;exec(eval(sys.stdin.readline()))", "pytest-xdist worker"),
        ("python", f"{VENV} /work/x/starter.py run billing --json", "starter.py run"),
        ("python", f"{VENV} -m duragent._ops.cli.job resume --id r1", "duragent._ops.cli.job resume"),
        ("python", f"{VENV} /work/x/worker.py", "worker.py"),
        ("python", f"{VENV} -m bench chaos --runs 2", "python -m bench"),
        ("python", f"{VENV} -c import sys", "python -c (a test's inline script)"),
        ("python", f"{VENV} /tmp/pending.py", "python pending.py"),
        ("kworker/0:1", "", "kworker/0:1"),  # never seen by the sampler: its short name
    ],
)
def test_each_kind_of_process_is_named_from_its_command_line(name: str, command: str, expected: str) -> None:
    assert kind(name, command) == expected


def test_dump_acct_lines_are_summed_per_kind_in_seconds() -> None:
    def line(name: str, user: int, system: int, pid: int) -> str:
        return f"{name:<16}|v3|{user:9.2f}|{system:9.2f}|  10.00|  0|  0| 100.00|  0.00|{pid:8d}|   1|     |  0|__ |Wed"

    accounting = "\n".join(
        [line("python", TICKS, TICKS, 11), line("python", 2 * TICKS, 0, 12), line("postgres", TICKS // 2, 0, 13)]
    )
    commands = {11: f"{VENV} /w/worker.py", 12: f"{VENV} /w/worker.py"}
    assert by_kind(accounting, commands) == {"worker.py": (4.0, 2), "PostgreSQL": (0.5, 1)}
