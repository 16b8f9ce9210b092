"""The report: markdown tables (printed, and written to results/bench.md), the goals checked against the
numbers (reported, never assumed), and PNG plots drawn with matplotlib's Agg backend."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from bench.overhead import engine_name
from bench.peers.report import PeersConfig
from bench.peers.report import table as peers_table
from bench.stats import judged, ratio_interval

GOALS = {
    "step_ms": 0.050,  # our agent step, median, on the embedded server as we ship it
    "step_x_floor": 1.05,  # our agent step within 1.05x the bare Temporal floor, visibility on (issues 20, 36)
    "throughput_vs_floor": 0.9,  # at each N (100 and 1,000 by default), at least 90 % of the floor's runs/s
    "worker_cpu_x_floor": 1.25,  # our worker's CPU per run within 1.25x the floor's worker
    "server_cpu_x_floor": 1.10,  # the server's CPU per run of ours within 1.10x the floor's
    "recovery_s": 5.0,  # after a worker SIGKILL, the following step done within this (median)
    # Waiting runs: past the worker's cache (`max_cached_workflows`), its memory levels off: RSS with all N runs
    # waiting within this much of its RSS with half of them waiting.
    "waiting_rss_growth": 1.25,
}
# The throughput figures a goal compares with the floor's: each repetition's ratio; a goal is judged on the 90 %
# confidence interval of those ratios (bench/stats.py), and undecided while the interval straddles it.
COMPARED = {
    "runs/s": "runs_per_s",
    "worker CPU/run": "worker_cpu_per_run_ms",
    "server CPU/run": "server_cpu_per_run_ms",
}


def step_x_floor(engine: dict[str, Any]) -> float | None:
    """The per-step ratio to the floor that the goal is judged by: the median of the repetitions' ratios
    (each rep's pair ran minutes apart at most, so a drift in the machine's speed cancels), or, in a
    results file written before those were recorded, the ratio of the medians of all steps."""
    reps = [r for r in engine.get("x_floor_reps", []) if r is not None]
    return statistics.median(reps) if reps else engine["x_floor"]


def _ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1000:.2f}"


def _s(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds:.2f}"


def _x(value: float | None) -> str:
    if value is None:
        return "n/a"
    if value >= 100:
        return f"{value:.0f}x"
    return f"{value:.2f}x" if value >= 0.1 else f"{value:.2g}x"


def _num(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def machine_section(machine: dict[str, Any]) -> list[str]:
    return [
        f"Machine: {machine.get('cpus')} CPUs ({machine.get('cpu_model')}), {machine.get('ram_gib')} GiB RAM, "
        f"{machine.get('platform')}; Python {machine.get('python')}, temporalio {machine.get('temporalio')}, "
        f"{machine.get('temporal_cli')}, server {machine.get('temporal_server')}, SQLite {machine.get('sqlite')}. "
        f"Load average at start {machine.get('load_average')}, at end {machine.get('load_average_end')}.",
    ]


def overhead_section(data: dict[str, Any]) -> list[str]:
    rows = []
    for engine, e in data["engines"].items():
        rows.append(
            [
                engine,
                _ms(e["step"]["median"]),
                _ms(e["step"]["p99"]),
                _x(step_x_floor(e)),
                _x(e["x_floor"]),
                _x(e["x_in_process"]),
                _ms(e["run_per_step"]["median"]),
            ]
        )
    samples = next(iter(data["engines"].values()))["step"]["n"]
    lines = [
        f"### Per-step overhead — `bench-noop`, {data['steps']} steps a run, {data['reps']} runs per engine "
        f"(after {data['warmup']} warm-up), {samples} step samples each",
        "",
    ]
    lines += [
        "Every engine runs once per rep, in a seeded random order drawn afresh each rep. x floor (median of reps):"
        " each rep's median step ÷ the floor's in the same rep, the median of those (the goal's figure); x floor"
        " (all steps): the median of all the engine's steps ÷ the floor's.",
        "",
    ]
    if len(data.get("profiles", [])) > 1:
        lines += [
            f"Temporal engines on each server profile ({', '.join(data['profiles'])}); "
            "x floor is to the floor on the same server (in-process and baseline: to the last profile's).",
            "",
        ]
    lines += table(
        [
            "engine",
            "step median (ms)",
            "step p99 (ms)",
            "x floor (median of reps)",
            "x floor (all steps)",
            "x in-process",
            "whole run ÷ steps (ms)",
        ],
        rows,
    )
    phased = {engine: e["phases"] for engine, e in data["engines"].items() if e.get("phases")}
    if phased:
        names = list(next(iter(phased.values())))
        lines += [
            "",
            "Where a Temporal step goes (medians from the histories, ms; a step is two workflow tasks and two"
            ' activities; "dispatch" is the server handing the task over, "in the worker" the worker\'s own time'
            " including its reply):",
            "",
            *table(
                ["engine", *names],
                [[engine, *(_ms(phases[name]["median"]) for name in names)] for engine, phases in phased.items()],
            ),
        ]
    long = data.get("long")
    if long:
        long_rows = [
            [engine, _ms(e["step"]["median"]), _ms(e["step"]["p99"]), _x(e["x_short"])]
            for engine, e in long["engines"].items()
        ]
        lines += [
            "",
            f"Long runs: {long['steps']} steps a run, {long['reps']} runs per engine (interleaved)",
            "",
            *table(
                ["engine", "step median (ms)", "step p99 (ms)", f"÷ median at {data['steps']} steps"],
                long_rows,
            ),
        ]
    return lines


# The Temporal engines measured batch by batch next to the bare floor (bench/throughput.py's kinds).
BESIDE_FLOOR = ("temporal", "temporal-postgres", "floor+sa", "floor+payloads", "floor+heartbeat", "temporal-no-sa")


def _label(row: dict[str, Any], profiles: list[str]) -> str:
    """The engine, and the server profile it ran on when the run compared several."""
    return f"{row['engine']} ({row['profile']})" if row.get("profile") and len(profiles) > 1 else row["engine"]


def throughput_pairs(data: dict[str, Any]) -> dict[tuple[str | None, int, int], dict[str, Any]]:
    """(profile, N, repetition) -> {"temporal": row, "floor": row, ...}: the batches measured side by side."""
    pairs: dict[tuple[str | None, int, int], dict[str, Any]] = {}
    for row in data["rows"]:
        if row["engine"] == "floor" or row["engine"] in BESIDE_FLOOR:
            pairs.setdefault((row.get("profile"), row["n"], row.get("rep", 0)), {})[row["engine"]] = row
    return pairs


def _median(values: list[float]) -> float | None:
    import statistics

    return statistics.median(values) if values else None


def throughput_ratios(data: dict[str, Any], engine: str = "temporal") -> dict[tuple[str | None, int], dict[str, Any]]:
    """(profile, N) -> for each figure in COMPARED: `engine`'s ratio to the floor in each repetition, and
    their median (ratios within a repetition: its batches ran back to back, under the same load)."""
    out: dict[tuple[str | None, int], dict[str, Any]] = {}
    for (profile, n, _), pair in sorted(throughput_pairs(data).items(), key=lambda item: item[0][2]):
        if engine not in pair or "floor" not in pair:
            continue
        entry = out.setdefault((profile, n), {name: [] for name in COMPARED})
        for name, key in COMPARED.items():
            ours, floor = pair[engine].get(key), pair["floor"].get(key)
            if ours is not None and floor:
                entry[name].append(ours / floor)
    return {
        key: {name: {"reps": v, "median": _median(v), "interval": ratio_interval(v)} for name, v in entry.items()}
        for key, entry in out.items()
    }


def _cpu(row: dict[str, Any], key: str) -> str:
    return _num(row.get(key)) if key in row else "—"


def _cores(row: dict[str, Any]) -> str:
    server, worker = row.get("server_cores"), row.get("worker_cores")
    return f"{server:.2f} / {worker:.2f}" if server is not None and worker is not None else "—"


def throughput_section(data: dict[str, Any]) -> list[str]:
    pairs = throughput_pairs(data)
    reps = max((row.get("rep", 0) for row in data["rows"]), default=0) + 1
    rows = []
    for row in data["rows"]:
        vs_floor = ""
        pair = pairs.get((row.get("profile"), row["n"], row.get("rep", 0)), {})
        if row["engine"] in BESIDE_FLOOR and "floor" in pair:
            floor = pair["floor"]["runs_per_s"]
            vs_floor = f"{row['runs_per_s'] / floor:.0%}" if row["runs_per_s"] and floor else "n/a"
        rows.append(
            [
                _label(row, data.get("profiles", [])),
                str(row["n"]),
                *([str(row.get("rep", 0) + 1)] if reps > 1 else []),
                _num(row["runs_per_s"]),
                vs_floor,
                f"{row['completed']}/{row['n']}",
                _s(row["latency"]["median"]),
                _s(row["latency"]["p99"]),
                str(row.get("lock_errors", "—")),
                _cpu(row, "server_cpu_per_run_ms"),
                _cpu(row, "worker_cpu_per_run_ms"),
                _cpu(row, "client_cpu_per_run_ms"),
                _cores(row),
                _num(row.get("store_rows_per_step")) if row.get("store_rows_per_step") is not None else "—",
                _num(row.get("store_writes_per_step")) if row.get("store_writes_per_step") is not None else "—",
            ]
        )
    lines = [
        f"### Throughput — N concurrent `bench-noop` runs of {data['steps']} steps",
        "",
        *table(
            [
                "engine",
                "N",
                *(["rep"] if reps > 1 else []),
                "runs/s",
                "vs floor",
                "completed",
                "run latency median (s)",
                "p99 (s)",
                '"database is locked"',
                "server CPU/run (ms)",
                "worker CPU/run (ms)",
                "client CPU/run (ms)",
                "cores: server / worker",
                "store rows/step",
                "store writes/step",
            ],
            rows,
        ),
        "",
        "`temporal`: our worker with the SQLite stores; `temporal-postgres`: the same with the PostgreSQL stores"
        " (`AGENT_DATABASE_URL`). Store rows: transcript and ledger rows added per step, counted in the storage;"
        " store writes: INSERT statements the PostgreSQL server executed per step (`pg_stat_statements`)."
        " Cores: each process's CPU seconds per second while the batch ran; where they stay the same from engine"
        " to engine the machine is saturated, and a process's CPU per run is its share over the rate.",
    ]
    if any(row.get("pinned") for row in data["rows"]):
        lines += ["", "Pinned (`--pin-cores`): each batch's server on CPU 0, its worker and the bench on CPU 1."]
    if reps > 1:
        lines += ["", *_medians_table(data, reps)]
    lines += _price_table(data)
    lines += _history_table(data)
    return lines


def _medians_table(data: dict[str, Any], reps: int) -> list[str]:
    """Each engine's medians over the repetitions, and its ratios to the floor (median of the per-repetition
    ratios, every repetition's shown so the noise is visible)."""
    by_engine: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for row in data["rows"]:
        if "rep" in row:
            by_engine.setdefault((_label(row, data.get("profiles", [])), row["n"]), []).append(row)
    ratios = {engine: throughput_ratios(data, engine) for engine in BESIDE_FLOOR}
    out = []
    for (label, n), rows in by_engine.items():
        engine, profile = rows[0]["engine"], rows[0].get("profile")
        compared = ratios.get(engine, {}).get((profile, n), {})
        cells = [label, str(n)]
        for name, key in COMPARED.items():
            cells.append(_num(_median([r[key] for r in rows if r.get(key) is not None])))
            ratio = compared.get(name)
            cells.append(
                f"{_x(ratio['median'])} ({', '.join(_x(v) for v in ratio['reps'])})" if ratio and ratio["reps"] else ""
            )
        out.append(cells)
    header = ["engine", "N", "runs/s", "x floor", "worker CPU/run (ms)", "x floor", "server CPU/run (ms)", "x floor"]
    return [
        f"Medians of {reps} interleaved repetitions (x floor: median of each repetition's ratio, then each):",
        "",
        *table(header, out),
    ]


# The price list (docs/benchmarks.md): what ours costs beyond the floor, feature by feature, each the difference of
# two engines measured side by side (`--payload-floor --without-search-attributes`): (feature, minuend, subtrahend,
# meaning).
PRICES = (
    ("search attributes", "temporal", "temporal-no-sa", "ours - ours started with search_attributes=False"),
    ("payload bytes", "floor+payloads", "floor", "the floor carrying ours' bytes per event - the floor"),
    ("heartbeat timeouts", "floor+heartbeat", "floor", "the floor with ours' heartbeat timeout - the floor"),
    ("our code", "temporal-no-sa", "floor+payloads", "ours without search attributes - the floor with ours' bytes"),
    ("all but search attributes", "temporal-no-sa", "floor", "ours started with search_attributes=False - the floor"),
    ("all of it", "temporal", "floor", "ours - the floor"),
)


def _price_table(data: dict[str, Any]) -> list[str]:
    """The price list: each feature's server and worker CPU per run (ms), the median of the per-repetition
    differences (each repetition's pair ran back to back), every repetition's shown; and the server's CPU as a
    ratio of the two engines with its 90 % interval, which says whether a feature's price is told from noise."""
    priced = ("server_cpu_per_run_ms", "worker_cpu_per_run_ms")
    measured: dict[tuple[Any, ...], dict[str, list[float]]] = {}
    for (profile, n, _), pair in throughput_pairs(data).items():
        for feature, minuend, subtrahend, meaning in PRICES:
            if minuend in pair and subtrahend in pair:
                entry = measured.setdefault((profile, n, feature, meaning), {key: [] for key in (*priced, "ratio")})
                for key in priced:
                    a, b = pair[minuend].get(key), pair[subtrahend].get(key)
                    if a is not None and b is not None:
                        entry[key].append(a - b)
                        if key == "server_cpu_per_run_ms" and b > 0:
                            entry["ratio"].append(a / b)
    if all(feature == "all of it" for (_, _, feature, _) in measured):
        return []  # only ours and the floor were measured: nothing to split the difference by
    rows = [
        [str(profile or ""), str(n), feature, meaning]
        + [f"{_num(_median(entry[key]))} ({', '.join(_num(x) for x in entry[key])})" for key in priced]
        + [_ratio_with_interval(entry["ratio"])]
        for (profile, n, feature, meaning), entry in measured.items()
    ]
    return [
        "",
        "Price list — what ours costs per run beyond the floor, feature by feature (ms of CPU per run; median of"
        " the per-repetition differences, each repetition's shown; the server's CPU as a ratio of the two, with its"
        " 90 % interval from two repetitions on):",
        "",
        *table(
            ["profile", "N", "feature", "measured as", "server CPU/run (ms)", "worker CPU/run (ms)", "server ratio"],
            rows,
        ),
    ]


def _ratio_with_interval(ratios: list[float]) -> str:
    interval = ratio_interval(ratios)
    if interval["mean"] is None:
        return "n/a"
    if interval["low"] is None:
        return _x(interval["mean"])
    return f"{_x(interval['mean'])} ({_x(interval['low'])} to {_x(interval['high'])})"


def _history_table(data: dict[str, Any]) -> list[str]:
    """Per run, by event type: what the server stored for ours and for the floor (the largest N's first batch)."""
    sampled = [row for row in data["rows"] if row.get("history")]
    if not sampled:
        return []
    primary = (data.get("profiles") or [None])[-1]
    n = max(row["n"] for row in sampled)
    histories = {row["engine"]: row["history"] for row in sampled if row["n"] == n and row.get("profile") == primary}
    engines = [e for e in ("floor", *BESIDE_FLOOR) if e in histories]
    types = sorted(
        {t for h in histories.values() for t in h},
        key=lambda t: -max(h.get(t, {}).get("bytes", 0) for h in histories.values()),
    )
    rows = []
    for name in [*types, "total"]:
        cells = [name]
        for engine in engines:
            history = histories[engine]
            if name == "total":
                events, size = sum(v["events"] for v in history.values()), sum(v["bytes"] for v in history.values())
            else:
                events, size = history.get(name, {}).get("events", 0), history.get(name, {}).get("bytes", 0)
            cells += [_num(events), _num(size, 0)]
        rows.append(cells)
    header = ["event type", *[f"{e} {what}" for e in engines for what in ("events", "bytes")]]
    return [
        "",
        f"Per run, by event type (history of the first runs of a batch at N = {n}; bytes: each event serialized):",
        "",
        *table(header, rows),
    ]


def recovery_section(data: dict[str, Any]) -> list[str]:
    c = data["config"]
    rows = []
    for engine in ("temporal", "baseline"):
        s = data[engine]["summary"]
        rows.append(
            [
                engine,
                f"{_s(s['resumed_step_done_s']['median'])} / {_s(s['resumed_step_done_s']['p99'])}",
                f"{_s(s['next_step_done_s']['median'])} / {_s(s['next_step_done_s']['p99'])}",
                data[engine]["dominant"],
            ]
        )
    lines = [
        f"### Recovery — SIGKILL mid-step (`migration`, {c['step_delay']:g} s of work per step; heartbeat timeout "
        f"= lease = {c['detect_seconds']:g} s; {c['reps']} kills per engine)",
        "",
        *table(
            [
                "engine",
                "kill → interrupted step done, median / p99 (s)",
                "kill → following step done, median / p99 (s)",
                "dominated by",
            ],
            rows,
        ),
        "",
        "Components (medians, seconds):",
        "",
    ]
    for engine in ("temporal", "baseline"):
        parts = ", ".join(f"{name}: {_s(value)}" for name, value in data[engine]["components"].items())
        lines.append(f"- {engine}: {parts}")
    return lines


def storage_section(data: dict[str, Any]) -> list[str]:
    rows = [
        [
            str(r["steps"]),
            str(r["temporal_events"]),
            f"{r['temporal_bytes']:,}",
            f"{r['temporal_model_input_bytes']:,}",
            str(r["baseline_rows"]),
            f"{r['baseline_bytes']:,}",
            _x(r["temporal_per_baseline"]),
            _num(r.get("temporal_ms_per_step"), 2),
            _num(r.get("baseline_ms_per_step"), 2),
        ]
        for r in data["rows"]
    ]
    return [
        # `scenario`: what results saved before agents had names called it
        f"### Storage per run — `{data.get('agent') or data.get('scenario')}`, N records = N steps",
        "",
        *table(
            [
                "steps",
                "Temporal events",
                "history bytes",
                "of which model inputs",
                "baseline rows",
                "checkpoint bytes",
                "history ÷ checkpoint",
                "Temporal ms/step",
                "baseline ms/step",
            ],
            rows,
        ),
    ]


def waiting_section(data: dict[str, Any]) -> list[str]:
    """A row per phase; a phase stopped part-way (interrupted, or a drain that stalled) shows what it measured."""
    c = data["config"]
    rows, stalled = [], []
    for p in data["phases"]:
        rss = p.get("worker_rss_mb") or {}
        cached = (p.get("all_waiting") or {}).get("cached")
        drains = {d["via"]: d for d in p.get("drains", [])}
        started = (
            f"{_num(p['start_all_s'])} ({p['starts_per_s']:.0f}/s) / {_num(p.get('park_all_s'))}"
            if "start_all_s" in p
            else "—"
        )
        rows.append(
            [
                f"{p['runs']:,} ({p['stores']} stores)",
                started,
                f"{_num(rss.get('tenth'), 0)} → {_num(rss.get('half'), 0)} → {_num(rss.get('all'), 0)}"
                f" (max {_num(rss.get('max'), 0)})" + (f"; {cached:.0f} cached" if cached is not None else ""),
                f"{p['server_bytes_per_run'] / 1024:.1f}" if "server_bytes_per_run" in p else "—",
                f"{p['stores_bytes_per_run'] / 1024:.1f}" if "stores_bytes_per_run" in p else "—",
                _drain(drains.get("client")),
                _drain(drains.get("http")),
            ]
        )
        for d in drains.values():
            if "stalled" in d:
                stuck = d["stalled"]
                named = (f"`{r['run_id']}`" + (f" ({r['history']})" if r["history"] else "") for r in stuck["runs"])
                stalled.append(
                    f"**Drain via {d['via']} ({p['stores']} stores) stalled**: no run closed for {stuck['stall_s']:g} s"
                    f" ({stuck['closed']} of {d['runs']} closed); still open that long after their decision: "
                    + "; ".join(named)
                )
    cache = f"; the worker's cache: {c['cache']} runs" if c.get("cache") is not None else ""
    return [
        f"### Waiting runs — `refund` runs parked on an approval, then approved ({c['in_flight']} decisions in flight; "
        f"half through `AgentClient`, half through the runs API{cache})",
        "",
        *table(
            [
                "runs",
                "start all / all waiting (s)",
                "worker RSS at 10 % → 50 % → 100 % waiting (MB)",
                "server KB per waiting run",
                "stores KB per run",
                "AgentClient: decisions/s / runs closed/s",
                "runs API: decisions/s / runs closed/s",
            ],
            rows,
        ),
        *(["", *stalled] if stalled else []),
    ]


def _drain(row: dict[str, Any] | None) -> str:
    if row is None:
        return "—"
    if "stalled" in row:
        return "stalled (below)"
    queued = f" ({row['queued']} queued: no worker answered within 10 s)" if row.get("queued") else ""
    return f"{_num(row['decisions_per_s'])} / {_num(row['closed_per_s'])}{queued}"


def loc_section(data: dict[str, Any]) -> list[str]:
    rows = []
    details = []
    for engine, roles in data.items():
        for role, d in roles.items():
            rows.append([engine, role, str(len(d["files"])), str(d["code"]), str(d["logical"])])
            files = ", ".join(f"{f['path']} ({f['code']})" for f in d["files"])
            details.append(f"- {engine} / {role} ({', '.join(d['patterns'])}): {files}")
    return [
        "### Lines of code (non-blank, non-comment, non-docstring; `bench/loc.py`)",
        "",
        *table(["engine", "role", "files", "code lines", "logical lines"], rows),
        "",
        *details,
    ]


def chaos_section(data: dict[str, Any]) -> list[str]:
    rows = []
    for engine, r in data.items():
        rows.append(
            [engine, r.get("command", ""), r.get("last_line", ""), str(r.get("exit_code")), _s(r.get("seconds"))]
        )
    return ["### Chaos", "", *table(["engine", "command", "last line", "exit", "seconds"], rows)]


def peers_section(data: dict[str, Any]) -> list[str]:
    """`bench peers` as `bench all` ran it (bench/peers/): its table, or why there is none."""
    lines = ["### Side by side with the peers (`bench peers`)", ""]
    if data.get("skipped"):
        return [*lines, f"Skipped: {data['skipped']}."]
    if data.get("exit_code") != 0 or "results" not in data:
        return [*lines, f"`{data.get('command')}` failed (exit {data.get('exit_code')}): {data.get('error', '')}"]
    config = PeersConfig(**data["config"])
    return [*lines, f"`{data['command']}` ({_s(data.get('seconds'))} s)", "", peers_table(data["results"], config)]


def goals(results: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    overhead = results.get("overhead")
    if overhead:
        profiles = overhead.get("profiles") or [None]
        primary = overhead.get("primary")

        engines = overhead["engines"]
        ours = engines[engine_name("temporal", primary, profiles)]
        # The price of visibility per step, next to the goal: what the switch a user has moves it to.
        without = engines.get(engine_name("temporal-no-sa", primary, profiles))
        switch = f" (started with search_attributes=False: {_x(step_x_floor(without))})" if without else ""
        x = step_x_floor(ours)
        pooled = f"; all steps' medians: {_x(ours['x_floor'])}" if "x_floor_reps" in ours else ""
        where = f" on the {primary} server" if primary else ""
        step = ours["step"]["median"]
        out.append(
            {
                "goal": f"our agent step ≤ {GOALS['step_ms'] * 1000:.0f} ms median{where}",
                "measured": f"{_ms(step)} ms",
                "met": step is not None and step <= GOALS["step_ms"],
            }
        )
        out.append(
            {
                "goal": f"our agent step within {GOALS['step_x_floor']}x the bare Temporal floor{where}",
                "measured": f"{_x(x)}{switch}" + (f" (median of the reps' ratios{pooled})" if pooled else ""),
                "met": x is not None and x <= GOALS["step_x_floor"],
            }
        )
    throughput = results.get("throughput")
    if throughput:
        primary = (throughput.get("profiles") or [None])[-1]
        where = f" on the {primary} server" if primary else ""
        # Ours, and ours started with search_attributes=False when that was measured (`--without-search-attributes`):
        # the same goals judged without the search attributes (their upsert event and indexed visibility values)
        # say whether they are what keeps ours from a goal.
        measured = {row["engine"] for row in throughput["rows"]}
        for engine, started in (("temporal", ""), ("temporal-no-sa", ", started with search_attributes=False")):
            if engine in measured:
                out += _throughput_goals(throughput, engine, primary, where + started)
        threads = [r for r in throughput["rows"] if r["engine"] == "baseline-threads"]
        if threads:
            row = max(threads, key=lambda r: r["n"])
            out.append(
                {
                    "goal": f'baseline, {row["n"]} threads: every run completes, no "database is locked"',
                    "measured": f"{row['completed']}/{row['n']} completed, {row['lock_errors']} locked",
                    "met": row["completed"] == row["n"] and row["lock_errors"] == 0,
                }
            )
    recovery = results.get("recovery")
    if recovery:
        following = recovery["temporal"]["summary"]["next_step_done_s"]
        out.append(
            {
                "goal": f"after a worker SIGKILL, the following step done within {GOALS['recovery_s']:g} s (median)",
                "measured": f"{_s(following['median'])} s (the baseline: "
                f"{_s(recovery['baseline']['summary']['next_step_done_s']['median'])} s)",
                "met": following["median"] is not None and following["median"] <= GOALS["recovery_s"],
            }
        )
    for phase in (results.get("waiting") or {}).get("phases", []):
        rss = phase.get("worker_rss_mb") or {}
        cached = max((s["cached"] or 0 for s in phase.get("samples", [])), default=0)
        if not rss.get("half") or not rss.get("all") or phase["runs"] / 2 < cached:
            continue  # half of them still fit in the cache: memory is still expected to grow
        growth = rss["all"] / rss["half"]
        out.append(
            {
                "goal": f"{phase['runs']:,} waiting runs ({phase['stores']} stores): the worker's memory levels off"
                f" past its cache of {cached:.0f} runs (RSS at all ≤ {GOALS['waiting_rss_growth']}x at half)",
                "measured": f"{rss['half']:.0f} → {rss['all']:.0f} MB ({growth:.2f}x)",
                "met": growth <= GOALS["waiting_rss_growth"],
            }
        )
    for engine, r in (results.get("chaos") or {}).items():
        parsed = r.get("parsed") or {}
        ok = parsed.get("lost") == 0 and parsed.get("duplicate_effects") == 0
        out.append(
            {
                "goal": f"chaos ({engine}): 0 lost runs, 0 duplicate effects",
                "measured": r.get("last_line") or "no result",
                "met": ok,
            }
        )
    return out


def _throughput_goals(throughput: dict[str, Any], engine: str, primary: str | None, where: str) -> list[dict[str, Any]]:
    """The throughput goals of `engine` against the floor, each judged on the 90 % interval of the pairs' ratios."""
    out = []
    ratios = {n: r for (profile, n), r in throughput_ratios(throughput, engine).items() if profile == primary}
    for n, r in sorted(ratios.items()):
        share = r["runs/s"]
        out.append(
            {
                "goal": f"throughput at {n} concurrent runs ≥ {GOALS['throughput_vs_floor']:.0%} of the bare floor"
                + where,
                "measured": _shares(share),
                "met": judged(share["interval"], GOALS["throughput_vs_floor"], at_least=True),
            }
        )
    for name, goal in (("worker CPU/run", "worker_cpu_x_floor"), ("server CPU/run", "server_cpu_x_floor")):
        for n, r in sorted(ratios.items()):
            if r[name]["median"] is None:
                continue
            out.append(
                {
                    "goal": f"{name.replace('/run', ' per run')} at N = {n} ≤ {GOALS[goal]}x the floor's{where}",
                    "measured": f"{_x(r[name]['median'])} (each: {', '.join(_x(v) for v in r[name]['reps'])})"
                    + _interval(r[name]["interval"], _x),
                    "met": judged(r[name]["interval"], GOALS[goal], at_least=False),
                }
            )
    return out


def _shares(share: dict[str, Any]) -> str:
    if share["median"] is None:
        return "n/a"
    each = ", ".join(f"{v:.0%}" for v in share["reps"])
    shown = f"{share['median']:.0%}" + (f" (each repetition: {each})" if len(share["reps"]) > 1 else "")
    return shown + _interval(share.get("interval"), lambda v: f"{v:.0%}")


def _interval(interval: dict[str, Any] | None, show: Any) -> str:
    """`; 90 % interval a to b (n pairs)`, when there is one."""
    if not interval or interval.get("low") is None:
        return ""
    return f"; 90 % interval {show(interval['low'])} to {show(interval['high'])} ({interval['n']} pairs)"


def _verdict(met: bool | None) -> str:
    return "yes" if met else "undecided (the interval straddles the goal: more pairs)" if met is None else "**no**"


def goals_section(results: dict[str, Any]) -> list[str]:
    if results.get("quick"):  # `--quick` repeats too little to measure anything
        rows = [[g["goal"], g["measured"], "not measured (--quick)"] for g in goals(results)]
    else:
        rows = [[g["goal"], g["measured"], _verdict(g["met"])] for g in goals(results)]
    return ["### Goals", "", *table(["goal", "measured", "met"], rows)] if rows else []


def markdown(results: dict[str, Any]) -> str:
    lines = ["## Benchmark results", ""]
    if results.get("stopped"):
        lines += [f"**Not finished** — {results['stopped']}. What follows was measured until then.", ""]
    if "machine" in results:
        lines += [*machine_section(results["machine"]), ""]
    if "command" in results:
        lines += [f"Command: `{results['command']}` ({_s(results.get('seconds'))} s)", ""]
    profiles = (results.get("config") or {}).get("server_profiles")
    if profiles:
        described = [
            f"**{name}**: `{' '.join(flags)}`" if flags else f"**{name}**: no flags" for name, flags in profiles.items()
        ]
        lines += [f"Dev server profiles (duragent/_ops/devstack/server_profile.py) — {'; '.join(described)}.", ""]
    for key, render in (
        ("overhead", overhead_section),
        ("throughput", throughput_section),
        ("recovery", recovery_section),
        ("storage", storage_section),
        ("waiting", waiting_section),
        ("loc", loc_section),
        ("chaos", chaos_section),
        ("peers", peers_section),
    ):
        if results.get(key):
            lines += [*render(results[key]), ""]
    lines += goals_section(results)
    return "\n".join(lines).rstrip() + "\n"


# -- plots -------------------------------------------------------------------------------------------


def plots(results: dict[str, Any], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[Path] = []

    def save(fig: Any, name: str) -> None:
        path = out / name
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)

    if results.get("overhead"):
        engines = results["overhead"]["engines"]
        names = list(engines)
        medians = [engines[n]["step"]["median"] * 1000 for n in names]
        p99 = [engines[n]["step"]["p99"] * 1000 for n in names]
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.bar(names, medians, label="median", color="#4c72b0")
        ax.scatter(names, p99, marker="_", s=400, color="#c44e52", label="p99", zorder=3)
        ax.set_yscale("log")
        ax.tick_params(axis="x", labelrotation=30, labelsize=8)
        ax.set_ylabel("ms per agent step (log)")
        ax.set_title(f"Per-step overhead, bench-noop ({results['overhead']['steps']} steps/run)")
        ax.legend()
        save(fig, "overhead.png")
    if results.get("throughput"):
        fig, ax = plt.subplots(figsize=(7, 4))
        by_engine: dict[str, list[tuple[int, float]]] = {}
        for row in results["throughput"]["rows"]:
            if row["runs_per_s"]:
                by_engine.setdefault(_label(row, results["throughput"].get("profiles", [])), []).append(
                    (row["n"], row["runs_per_s"])
                )
        for engine, points in by_engine.items():
            points.sort()
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=engine)
        ax.set_xscale("log")
        ax.set_xlabel("concurrent runs (N, log)")
        ax.set_ylabel("runs/s")
        ax.set_title(f"Throughput, bench-noop ({results['throughput']['steps']} steps/run)")
        ax.legend()
        save(fig, "throughput.png")
    if results.get("recovery"):
        fig, ax = plt.subplots(figsize=(9, 4))
        palette = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860"]
        colour = 0
        for y, engine in enumerate(("temporal", "baseline")):
            left = 0.0
            for name, value in results["recovery"][engine]["components"].items():
                value = value or 0.0
                ax.barh(y, value, left=left, color=palette[colour % len(palette)], label=f"{engine}: {name}")
                colour += 1
                left += value
        ax.set_yticks([0, 1], ["temporal", "baseline"])
        ax.set_xlabel("seconds from the SIGKILL (medians)")
        ax.set_title("Recovery after a SIGKILL mid-step: to the interrupted step, then the following one")
        ax.legend(fontsize=7, loc="upper right")
        save(fig, "recovery.png")
    if results.get("storage"):
        rows = results["storage"]["rows"]
        steps = [r["steps"] for r in rows]
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.plot(steps, [r["temporal_bytes"] / 1024 for r in rows], marker="o", label="Temporal history")
        ax.plot(steps, [r["baseline_bytes"] / 1024 for r in rows], marker="o", label="baseline checkpoint rows")
        ax.set_xlabel("steps (migration records)")
        ax.set_ylabel("KiB per run")
        ax.set_title("Storage per run")
        ax.legend()
        save(fig, "storage.png")
    return written
