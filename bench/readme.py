"""The comparison table (docs/benchmarks.md, whose figures the README quotes), rendered from one `python -m bench all`
run (`python -m bench report --readme`): every row of it comes from the same results file, so the table is pasted,
never pieced together by hand from several runs. A row whose section the run did not measure says so (—)."""

from __future__ import annotations

import statistics
from typing import Any

from bench.overhead import engine_name
from bench.report import GOALS, step_x_floor, throughput_ratios

TIMES = "\u00d7"  # the multiplication sign the documents write ratios with
COLUMNS = ["", "in-process", "baseline (SQLite checkpoints)", "ours (Temporal)", "bare Temporal floor"]


def _ms(seconds: float | None, digits: int = 1) -> str:
    return "—" if seconds is None else f"{seconds * 1000:.{digits}f}"


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _met(ok: bool) -> str:
    return "met" if ok else "**missed**"


def _overhead_rows(data: dict[str, Any]) -> list[list[str]]:
    profiles = data.get("profiles") or [None]
    primary = data.get("primary")
    engines = data["engines"]

    def step(engine: str) -> str:
        e = engines.get(engine)
        return f"{_ms(e['step']['median'], 2)} / {_ms(e['step']['p99'], 1)}" if e else "—"

    ours, floor = engine_name("temporal", primary, profiles), engine_name("floor", primary, profiles)
    ours_step = engines[ours]["step"]["median"]
    rows = [
        [
            "step, median / p99 (ms)",
            step("in-process"),
            step("baseline"),
            f"**{step(ours)}** (goal ≤ {GOALS['step_ms'] * 1000:.0f} ms: {_met(ours_step <= GOALS['step_ms'])})",
            step(floor),
        ]
    ]
    default = "default" if "default" in profiles and primary != "default" else None
    if default:
        rows.append(
            [
                "the same on the dev server as it comes",
                "",
                "",
                step(engine_name("temporal", default, profiles)),
                step(engine_name("floor", default, profiles)),
            ]
        )
    x = step_x_floor(engines[ours])
    pooled, by_rep = engines[ours]["x_floor"], "x_floor_reps" in engines[ours]
    without = engines.get(engine_name("temporal-no-sa", primary, profiles))
    rows.append(
        [
            "ours ÷ floor, per step, same server (visibility on)",
            "",
            "",
            f"**{x:.2f}{TIMES}** (goal ≤ {GOALS['step_x_floor']}{TIMES}: {_met(x <= GOALS['step_x_floor'])}"
            + (f"; median of {data['reps']} reps' ratios, of all steps {pooled:.2f}{TIMES}" if by_rep else "")
            + (f"; started with `search_attributes=False`: {step_x_floor(without):.2f}{TIMES}" if without else "")
            + ")",
            "",
        ]
    )
    long = data.get("long")
    if long:
        by = long["engines"]

        def grown(engine: str) -> str:
            return f"{by[engine]['x_short']:.2f}{TIMES}" if engine in by and by[engine]["x_short"] else "—"

        rows.append(
            [
                f"step at {long['steps']} steps ÷ step at {data['steps']}",
                grown("in-process"),
                grown("baseline"),
                grown(ours),
                grown(floor),
            ]
        )
    return rows


def _rows_of(data: dict[str, Any], engine: str, n: int, profile: str | None) -> list[dict[str, Any]]:
    return [r for r in data["rows"] if r["engine"] == engine and r["n"] == n and r.get("profile") == profile]


def _figure(rows: list[dict[str, Any]], key: str) -> float | None:
    return _median([r[key] for r in rows if r.get(key) is not None])


def _throughput_rows(data: dict[str, Any]) -> list[list[str]]:
    profiles = data.get("profiles") or [None]
    primary = profiles[-1]
    ns = sorted({r["n"] for r in data["rows"] if r["engine"] == "temporal"})
    shown = [n for n in ns if n >= 100] or ns
    ratios = throughput_ratios(data)
    rows = []

    def runs_per_s(engine: str, n: int) -> str:
        value = _figure(_rows_of(data, engine, n, primary), "runs_per_s")
        return "—" if value is None else f"{value:.1f}"

    shares = []
    for n in shown:
        share = (ratios.get((primary, n)) or {}).get("runs/s", {}).get("median")
        shares.append(share)
    goal = GOALS["throughput_vs_floor"]
    threads = [r for r in data["rows"] if r["engine"] == "baseline-threads"]
    top = max(threads, key=lambda r: r["n"]) if threads else None
    baseline = (
        f"{top['runs_per_s']:.1f} at {top['n']:,} threads, **{top['completed']:,}/{top['n']:,} completed, "
        f'{top["lock_errors"]} "database is locked"**'
        if top and top.get("runs_per_s")
        else ""
    )
    rows.append(
        [
            f"runs/s at N = {' / '.join(f'{n:,}' for n in shown)} concurrent",
            "",
            baseline,
            " / ".join(runs_per_s("temporal", n) for n in shown)
            + " ("
            + " / ".join("—" if s is None else f"**{s:.0%}**" for s in shares)
            + f" of the floor; goal ≥ {goal:.0%}: "
            + " / ".join("—" if s is None else _met(s >= goal) for s in shares)
            + ")",
            " / ".join(runs_per_s("floor", n) for n in shown),
        ]
    )
    for n in shown:
        r = ratios.get((primary, n)) or {}
        ours = _rows_of(data, "temporal", n, primary)
        floor = _rows_of(data, "floor", n, primary)
        worker, server = r.get("worker CPU/run", {}).get("median"), r.get("server CPU/run", {}).get("median")
        rows.append(
            [
                f"worker / server CPU per run at N = {n:,}",
                "",
                "",
                f"{_num(_figure(ours, 'worker_cpu_per_run_ms'))} / {_num(_figure(ours, 'server_cpu_per_run_ms'))} ms"
                + (f" ({worker:.2f}{TIMES} / {server:.2f}{TIMES} the floor)" if worker and server else ""),
                f"{_num(_figure(floor, 'worker_cpu_per_run_ms'))} / {_num(_figure(floor, 'server_cpu_per_run_ms'))} ms",
            ]
        )
    postgres = [r for r in data["rows"] if r["engine"] == "temporal-postgres" and r["n"] == 100]
    if postgres:
        rows.append(
            [
                "with the PostgreSQL stores, N = 100",
                "",
                "",
                f"{_num(_figure(postgres, 'runs_per_s'))} runs/s, {_num(_figure(postgres, 'worker_cpu_per_run_ms'))} ms"
                f" worker CPU per run, {_num(_figure(postgres, 'store_writes_per_step'))} store writes per step",
                "",
            ]
        )
    return rows


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def _recovery_row(data: dict[str, Any]) -> list[str]:
    c = data["config"]

    def both(engine: str) -> str:
        s = data[engine]["summary"]
        return f"{s['resumed_step_done_s']['median']:.2f} / {s['next_step_done_s']['median']:.2f}"

    following = data["temporal"]["summary"]["next_step_done_s"]["median"]
    release = "released at once" if c.get("release_sticky_runs") else f"{c.get('sticky_timeout_s', 5):g} s sticky queue"
    return [
        "SIGKILL → interrupted step done / following step done (s)",
        "",
        f"{both('baseline')} ({c['detect_seconds']:g} s lease)",
        f"{both('temporal')} ({c['detect_seconds']:g} s heartbeat, {c['retry_interval']:g} s first retry, {release};"
        f" goal ≤ {GOALS['recovery_s']:g} s: {_met(following <= GOALS['recovery_s'])})",
        "",
    ]


def _storage_row(data: dict[str, Any]) -> list[str]:
    rows = data["rows"][-2:]
    steps = " / ".join(str(r["steps"]) for r in rows)
    return [
        f"storage per run at {steps} steps",
        "",
        " / ".join(f"{r['baseline_rows']:,}" for r in rows)
        + " rows, "
        + " / ".join(f"{r['baseline_bytes'] / 1000:.0f}" for r in rows)
        + " KB",
        " / ".join(f"{r['temporal_events']:,}" for r in rows)
        + " events, "
        + " / ".join(f"{r['temporal_bytes'] / 1000:.0f}" for r in rows)
        + " KB",
        "",
    ]


def _waiting_rows(data: dict[str, Any]) -> list[list[str]]:
    rows = []
    for p in data["phases"]:
        drains = {d["via"]: f"{d['decisions_per_s']:.1f}" for d in p["drains"]}
        rss = p["worker_rss_mb"]
        cached = p["all_waiting"].get("cached")
        rows.append(
            [
                f"{p['runs']:,} runs waiting for approval ({p['stores']} stores): start all / all waiting (s); worker "
                "RSS at half / all waiting (MB); server KB per waiting run; decisions/s through `AgentClient` / the "
                "runs API",
                "",
                "",
                f"{p['start_all_s']:.0f} / {p['park_all_s']:.0f}; {rss['half']:.0f} / {rss['all']:.0f}"
                + (f" ({cached:.0f} cached: `max_cached_workflows`)" if cached is not None else "")
                + f"; {p['server_bytes_per_run'] / 1024:.1f}; {drains.get('client', '—')} / {drains.get('http', '—')}",
                "",
            ]
        )
    return rows


def _chaos_row(data: dict[str, Any]) -> list[str]:
    def tail(engine: str) -> str:
        line = (data.get(engine) or {}).get("last_line", "")
        return line.split(": ", 1)[-1].split(" ", 2)[-1] if line else "—"

    return ["chaos, 10 runs, seed 1", "", tail("baseline"), tail("temporal"), ""]


def _peers_rows(data: dict[str, Any]) -> list[list[str]]:
    """`bench peers` on the server we ship (the tuned one when it ran; bench/peers/): the peers' figures beside
    ours, in ours' column (the table's columns are this project's engines)."""
    if "results" not in data:
        return []
    profile = "tuned" if "tuned" in data["results"] else next(iter(data["results"]))
    r = data["results"][profile]
    names = {"ours": "ours", "pydantic-ai": "pydantic-ai", "openai-agents": "OpenAI Agents SDK"}

    def each(cell: Any) -> str:
        return "; ".join(f"{label} {cell(stack)}" for stack, label in names.items())

    steps, long = data["config"]["steps"], data["config"]["long_steps"]
    tp, kill = r["throughput"], r["kill"]
    ours = r["approval"]["ours"]
    return [
        [
            f"peers (`bench peers`, {profile} server): per step, {TIMES} ours ({steps} tool calls)",
            "",
            "",
            each(lambda n: f"{r['per_step'][n]['x_ours']:.2f}{TIMES}"),
            "",
        ],
        [
            f"peers: runs/s, {data['config']['concurrent']} at once; CPU per run, worker / server (ms)",
            "",
            "",
            each(lambda n: f"{tp[n]['runs_per_s']:.1f} ({tp[n]['worker_cpu_ms']:.0f} / {tp[n]['server_cpu_ms']:.0f})"),
            "",
        ],
        [
            f"peers: history per run at {steps} / {long} tool calls (KB)",
            "",
            "",
            each(lambda n: f"{r['per_step'][n]['bytes'] / 1024:,.0f} / {r['long'][n]['bytes'] / 1024:,.0f}"),
            "",
        ],
        [
            "peers: SIGKILL mid-tool, effects / executions (a provider de-duplicating on each one's key)",
            "",
            "",
            each(lambda n: f"{kill[n]['effects']} / {kill[n]['executions']}"),
            "",
        ],
        [
            "peers: a tool held for a human, across a worker restart; one approval's round trip",
            "",
            "",
            f"ours {'yes' if ours['held_across_restart'] else 'NO'}, {ours['round_trip_ms']:.0f} ms; "
            "pydantic-ai, OpenAI Agents SDK: no built-in",
            "",
        ],
    ]


def readme_table(results: dict[str, Any]) -> str:
    rows: list[list[str]] = []
    if results.get("overhead"):
        rows += _overhead_rows(results["overhead"])
    if results.get("throughput"):
        rows += _throughput_rows(results["throughput"])
    if results.get("recovery"):
        rows.append(_recovery_row(results["recovery"]))
    if results.get("storage"):
        rows.append(_storage_row(results["storage"]))
    if results.get("waiting"):
        rows += _waiting_rows(results["waiting"])
    if results.get("chaos"):
        rows.append(_chaos_row(results["chaos"]))
    if results.get("peers"):
        rows += _peers_rows(results["peers"])
    lines = ["| " + " | ".join(COLUMNS) + " |", "|---|---:|---:|---:|---:|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
