"""The table `bench peers` prints, from its results (also `bench all`'s report, when the peers ran in it).
No peer is imported here: the results are plain data."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

OURS, PYDANTIC, OPENAI = "ours", "pydantic-ai", "openai-agents"
STACKS = (OURS, PYDANTIC, OPENAI)


@dataclass(frozen=True)
class PeersConfig:
    steps: int = 20
    long_steps: int = 200
    reps: int = 5
    concurrent: int = 100
    throughput_reps: int = 1
    kill_steps: int = 5
    timeout: float = 300.0


def table(results: dict[str, Any], config: PeersConfig) -> str:
    return "\n".join(_profile_table(profile, row, config) for profile, row in results.items())


def _profile_table(profile: str, row: dict[str, Any], config: PeersConfig) -> str:
    steps, long, tp, kill, approvals = row["per_step"], row["long"], row["throughput"], row["kill"], row["approval"]
    rows = {
        f"per step, ms (median, {config.steps}-call runs)": lambda n: f"{steps[n]['step_ms']:.1f}",
        "per step, x ours (median of the reps' ratios)": lambda n: f"{steps[n]['x_ours']:.2f}",
        f"runs/s, {config.concurrent} at once (2 tool calls each)": lambda n: f"{tp[n]['runs_per_s']:.1f}",
        "CPU per run: worker / server, ms": lambda n: f"{tp[n]['worker_cpu_ms']:.1f} / {tp[n]['server_cpu_ms']:.1f}",
        f"history at {config.steps} tool calls: events, KB": lambda n: (
            f"{steps[n]['events']}, {steps[n]['bytes'] / 1024:.1f}"
        ),
        f"history at {config.long_steps} tool calls: events, KB": lambda n: (
            f"{long[n]['events']}, {long[n]['bytes'] / 1024:.1f}"
        ),
        f"SIGKILL mid-tool ({config.kill_steps} calls): effects / executions": lambda n: (
            f"{kill[n]['effects']} / {kill[n]['executions']}"
        ),
        "a tool held for a human across a worker restart; round trip": lambda n: _approval_cell(approvals[n]),
    }
    lines = [f"**{profile} server** ({row['server_version']})", "", "| | " + " | ".join(STACKS) + " |"]
    lines.append("|---|" + "---|" * len(STACKS))
    lines += [f"| {label} | " + " | ".join(cell(name) for name in STACKS) + " |" for label, cell in rows.items()]
    return "\n".join([*lines, ""])


def _approval_cell(entry: dict[str, Any]) -> str:
    if entry.get("held_across_restart") is None:
        return entry["note"]
    held = "yes" if entry["held_across_restart"] else "NO"
    return f"{held}; {entry['round_trip_ms']:.0f} ms ({entry['round_trip_after_restart_ms']:.0f} ms after the restart)"
