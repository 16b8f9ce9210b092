"""`bench all`'s report of `bench peers` (bench/report.py, bench/peers/report.py), from synthetic results: the
table every stack's row fills, or one line saying why there is none. Needs no peer installed."""

from __future__ import annotations

from typing import Any

from bench import report
from bench.peers.report import STACKS, PeersConfig
from bench.readme import TIMES as X
from bench.readme import readme_table


def _row() -> dict[str, Any]:
    def per(value: float) -> dict[str, Any]:
        return {name: value for name in STACKS}

    return {
        "server_version": "1.32.0",
        "per_step": {
            n: {"step_ms": 20.0 * (i + 1), "x_ours": float(i + 1), "events": 250, "bytes": 2048}
            for i, n in enumerate(STACKS)
        },
        "long": per({"events": 2400, "bytes": 512 * 1024}),
        "throughput": per({"runs_per_s": 25.0, "worker_cpu_ms": 30.0, "server_cpu_ms": 45.0}),
        "kill": per({"effects": 5, "executions": 6}),
        "approval": {
            "ours": {"held_across_restart": True, "round_trip_ms": 45.0, "round_trip_after_restart_ms": 5100.0},
            "pydantic-ai": {"held_across_restart": None, "note": "no built-in"},
            "openai-agents": {"held_across_restart": None, "note": "no built-in"},
        },
    }


def test_the_report_renders_the_peers_table():
    config = vars(PeersConfig())
    peers = {"command": "python -m bench peers", "exit_code": 0, "seconds": 60.0, "config": config}
    text = report.markdown({"peers": peers | {"results": {"tuned": _row()}}})
    assert "### Side by side with the peers (`bench peers`)" in text
    assert "| | ours | pydantic-ai | openai-agents |" in text
    assert "| per step, x ours (median of the reps' ratios) | 1.00 | 2.00 | 3.00 |" in text
    assert "| SIGKILL mid-tool (5 calls): effects / executions | 5 / 6 | 5 / 6 | 5 / 6 |" in text
    assert "| history at 200 tool calls: events, KB | 2400, 512.0 | 2400, 512.0 | 2400, 512.0 |" in text
    assert "yes; 45 ms (5100 ms after the restart) | no built-in | no built-in |" in text


def test_the_report_says_why_there_is_no_peers_table():
    skipped = report.markdown({"peers": {"skipped": "pydantic-ai not installed (make peers)"}})
    assert "Skipped: pydantic-ai not installed (make peers)." in skipped
    failed = report.markdown({"peers": {"command": "python -m bench peers", "exit_code": 1, "error": "boom"}})
    assert "`python -m bench peers` failed (exit 1): boom" in failed


def test_the_readme_table_gets_the_peers_rows():
    peers = {"command": "python -m bench peers", "exit_code": 0, "config": vars(PeersConfig())}
    text = readme_table({"peers": peers | {"results": {"default": _row(), "tuned": _row()}}})
    assert f"| peers (`bench peers`, tuned server): per step, {X} ours (20 tool calls) |" in text
    assert f"ours 1.00{X}; pydantic-ai 2.00{X}; OpenAI Agents SDK 3.00{X}" in text
    assert "ours 5 / 6; pydantic-ai 5 / 6; OpenAI Agents SDK 5 / 6" in text
    assert "ours yes, 45 ms; pydantic-ai, OpenAI Agents SDK: no built-in" in text
    assert "peers" not in readme_table({"peers": {"skipped": "not installed"}})
