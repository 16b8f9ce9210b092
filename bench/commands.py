"""The measurement subcommands: `all`, `overhead`, `throughput`, `recovery`, `storage`, `waiting`, `loc`, `report`.

Each measurement writes results/<name>.json (`all`: results/bench.json), results/<name>.md, and the
plots it can draw; `report --from FILE` renders a saved JSON again.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import loc, machine, report
from bench.cli import Command, register
from bench.overhead import OverheadConfig
from bench.peers import missing as missing_peers
from bench.recovery import RecoveryConfig
from bench.stalled import Unfinished
from bench.storage import StorageConfig
from bench.throughput import ThroughputConfig
from bench.waiting import WaitingConfig
from duragent._config.settings import ROOT
from duragent._ops.devstack.server_profile import DEFAULT, PROFILES, TUNED, ServerProfile, profile
from duragent._ops.devstack.signals import Stopped, until_signalled

SECTIONS = ("overhead", "throughput", "recovery", "storage", "waiting")
LAST_LINE = re.compile(
    r"^chaos (?P<engine>\w+): runs=(?P<runs>\d+) completed=(?P<completed>\d+) compensated=(?P<compensated>\d+) "
    r"lost=(?P<lost>\d+) duplicate_effects=(?P<duplicate_effects>\d+) kills=(?P<kills>\d+)$"
)


def say(text: str) -> None:
    print(text, flush=True)


def ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def add_output(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--out", type=Path, default=Path("results"), help="where JSON, markdown and plots go")
    sub.add_argument("--keep", action="store_true", help="keep the scratch directory (server, worker logs)")


def add_measurements(sub: argparse.ArgumentParser, sections: tuple[str, ...]) -> None:
    add_output(sub)
    sub.add_argument("--quick", action="store_true", help="tiny repetition counts: a smoke run, not a measurement")
    sub.add_argument(
        "--server-profile",
        choices=[*PROFILES, "both"],
        default="both",
        help="the dev server as we ship it (tuned), as it comes (default), or both side by side, runs interleaved"
        " (recovery and storage run on the tuned one); duragent/_ops/devstack/server_profile.py (default: both)",
    )
    if "overhead" in sections:
        sub.add_argument("--overhead-steps", type=int, default=OverheadConfig.steps)
        sub.add_argument("--overhead-reps", type=int, default=OverheadConfig.reps)
        sub.add_argument("--overhead-warmup", type=int, default=OverheadConfig.warmup)
        sub.add_argument("--overhead-long-steps", type=int, default=OverheadConfig.long_steps)
        sub.add_argument(
            "--overhead-long-reps", type=int, default=OverheadConfig.long_reps, help="long runs per engine (0: none)"
        )
    if "throughput" in sections:
        defaults = ThroughputConfig()
        sub.add_argument("--throughput-steps", type=int, default=defaults.steps)
        sub.add_argument("--concurrency", type=ints, default=defaults.temporal_n, help="Temporal N, e.g. 10,100,1000")
        sub.add_argument("--baseline-processes", type=ints, default=defaults.baseline_processes_n)
        sub.add_argument("--baseline-threads", type=ints, default=defaults.baseline_threads_n)
        sub.add_argument(
            "--throughput-reps",
            type=int,
            default=defaults.reps,
            help="Temporal batches per engine and N, interleaved, at least; the goals are judged on the 90 %%"
            " interval of the pairs' ratios",
        )
        sub.add_argument(
            "--throughput-max-reps",
            type=int,
            default=None,
            help="more pairs, up to this many, while a goal's interval straddles it (default: --throughput-reps)",
        )
        sub.add_argument("--no-postgres", action="store_true", help="no row with the PostgreSQL stores")
        sub.add_argument(
            "--same-server",
            action="store_true",
            help="every batch on one long-lived dev server (default: a server of its own per batch, since a batch"
            " on a server that ran others costs more)",
        )
        sub.add_argument(
            "--visible-floor",
            action="store_true",
            help="also the floor with a search attribute upsert per step (floor+sa): the server's price of upserts",
        )
        sub.add_argument(
            "--payload-floor",
            action="store_true",
            help="also the floor carrying ours' payload bytes per event (floor+payloads): the price of the bytes",
        )
        sub.add_argument(
            "--heartbeat-floor",
            action="store_true",
            help="also the floor with ours' 10 s activity heartbeat timeout (floor+heartbeat): the price of the"
            " server's activity timers firing within a batch's window",
        )
        sub.add_argument(
            "--pin-cores",
            action="store_true",
            help="the server on CPU 0, the worker and the bench on CPU 1, for each batch, as when they have machines"
            " of their own (on shared cores a worker that needs more CPU takes it from the server)",
        )
        sub.add_argument(
            "--without-search-attributes",
            action="store_true",
            help="also ours started with search_attributes=False (temporal-no-sa): the price of our search attributes",
        )
    if "throughput" in sections or "waiting" in sections:
        sub.add_argument(
            "--postgres-url",
            help="a PostgreSQL server for the PostgreSQL-stores rows (a scratch database is made in it and dropped);"
            " default: one started from Debian's binaries when installed",
        )
    if "waiting" in sections:
        defaults_w = WaitingConfig()
        sub.add_argument("--waiting-runs", type=int, default=defaults_w.runs, help="runs parked on the SQLite stores")
        sub.add_argument(
            "--waiting-postgres-runs",
            type=int,
            default=defaults_w.postgres_runs,
            help="runs parked on the PostgreSQL stores (0: none)",
        )
        sub.add_argument("--waiting-in-flight", type=int, default=defaults_w.in_flight, help="decisions at once")
        sub.add_argument(
            "--waiting-cache",
            type=int,
            default=defaults_w.cache,
            help="the worker's max_cached_workflows (AGENT_MAX_CACHED_WORKFLOWS; default: the worker's, 1,000)",
        )
        sub.add_argument(
            "--waiting-stall",
            type=float,
            default=defaults_w.stall,
            help="seconds: a drain in which no run closed for this long, and a run is still open this long after its"
            " decision, stops and names that run (the bench then exits 1)",
        )
    if "recovery" in sections:
        sub.add_argument("--recovery-reps", type=int, default=RecoveryConfig.reps)
        sub.add_argument("--recovery-step-delay", type=float, default=RecoveryConfig.step_delay)
        sub.add_argument(
            "--recovery-timeout",
            type=float,
            default=RecoveryConfig.detect_seconds,
            help="Temporal heartbeat timeout and baseline lease, seconds",
        )
    if "storage" in sections:
        sub.add_argument("--storage-steps", type=ints, default=StorageConfig().steps)


def configs(args: argparse.Namespace, sections: tuple[str, ...]) -> dict[str, Any]:
    quick = args.quick
    out: dict[str, Any] = {}
    if "overhead" in sections:
        out["overhead"] = (
            OverheadConfig(steps=5, reps=3, warmup=1, long_steps=10, long_reps=1)
            if quick
            else OverheadConfig(
                args.overhead_steps,
                args.overhead_reps,
                args.overhead_warmup,
                args.overhead_long_steps,
                args.overhead_long_reps,
            )
        )
    if "throughput" in sections:
        out["throughput"] = (
            ThroughputConfig(
                steps=2,
                temporal_n=[5, 20],
                baseline_processes_n=[5],
                baseline_threads_n=[5, 20],
                postgres=not args.no_postgres,
                reps=1,
                fresh_server=False,  # a smoke run: seconds matter more than the drift across batches
                warmup=0,
            )
            if quick
            else ThroughputConfig(
                args.throughput_steps,
                args.concurrency,
                args.baseline_processes,
                args.baseline_threads,
                postgres=not args.no_postgres,
                reps=args.throughput_reps,
                max_reps=max(args.throughput_reps, args.throughput_max_reps or 0),
                visible_floor=args.visible_floor,
                payload_floor=args.payload_floor,
                heartbeat_floor=args.heartbeat_floor,
                without_search_attributes=args.without_search_attributes,
                pin_cores=args.pin_cores,
                fresh_server=not args.same_server,
            )
        )
    if "recovery" in sections:
        out["recovery"] = (
            RecoveryConfig(reps=1)
            if quick
            else RecoveryConfig(
                reps=args.recovery_reps, step_delay=args.recovery_step_delay, detect_seconds=args.recovery_timeout
            )
        )
    if "storage" in sections:
        out["storage"] = StorageConfig([5, 20]) if quick else StorageConfig(args.storage_steps)
    if "waiting" in sections:
        out["waiting"] = (
            WaitingConfig.quick()
            if quick
            else WaitingConfig(
                runs=args.waiting_runs,
                postgres_runs=args.waiting_postgres_runs,
                in_flight=args.waiting_in_flight,
                cache=args.waiting_cache,
                stall=args.waiting_stall,
            )
        )
    return out


def server_profiles(choice: str) -> list[ServerProfile]:
    """The profiles to run, the one we ship last (it is the one the goals and single-stack sections use)."""
    return [DEFAULT, TUNED] if choice == "both" else [profile(choice)]


async def measure(
    sections: tuple[str, ...],
    settings: dict[str, Any],
    workdir: Path,
    profiles: list[ServerProfile],
    postgres_url: str | None = None,
    results: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Each section in turn, into `results` (given: what was measured is kept when a section stops part-way;
    the waiting runs' section fills it as it goes)."""
    from bench import overhead, recovery, storage, throughput, waiting
    from bench.postgres import bench_database
    from bench.stack import Stack, temporal_stacks

    # Overhead and throughput compare server profiles (interleaved); recovery and storage use the last one.
    single = {"recovery": recovery, "storage": storage}
    results = {} if results is None else results
    floor = "overhead" in sections or "throughput" in sections
    # Throughput on fresh servers needs no long-lived stack, and the waiting runs start their own: none is started
    # for them alone, so no idle server and workers run beside their batches.
    long_lived = {"overhead", "recovery", "storage"}
    needs_stacks = bool(long_lived & set(sections)) or (
        "throughput" in sections and not settings["throughput"].fresh_server
    )
    with contextlib.ExitStack() as resources:
        database_url = None
        if "throughput" in sections and settings["throughput"].postgres:
            database_url = resources.enter_context(bench_database(postgres_url, say))
        async with contextlib.AsyncExitStack() as running:
            stacks: dict[str, Stack] = {}
            if needs_stacks:
                stacks = await running.enter_async_context(
                    temporal_stacks(workdir / "temporal", profiles, floor=floor, database_url=database_url)
                )
            last = profiles[-1]  # the PostgreSQL row on the profile we ship, as temporal_stacks does
            targets = {
                p.name: throughput.Target(p, database_url if p is last else None, stacks.get(p.name)) for p in profiles
            }
            for section in sections:
                say(f"[{section}]")
                started = time.perf_counter()
                if section == "overhead":
                    results[section] = await overhead.measure(stacks, workdir, settings[section], say)
                elif section == "throughput":
                    results[section] = await throughput.measure(targets, workdir, settings[section], say)
                elif section == "waiting":
                    results[section] = {}
                    await waiting.measure(workdir / "waiting", settings[section], say, postgres_url, results[section])
                else:
                    primary = stacks[profiles[-1].name]
                    results[section] = await single[section].measure(primary, workdir, settings[section], say)
                    results[section]["profile"] = primary.profile.name
                results[section]["seconds"] = time.perf_counter() - started
            results["long_lived_stacks"] = list(stacks)  # servers (and workers) up through every section
            # Without long-lived stacks: the version of the fresh servers throughput or the waiting runs started.
            measured_on = results.get("throughput", {}).pop("temporal_server", None)
            measured_on = results.get("waiting", {}).pop("temporal_server", None) or measured_on
            results["temporal_server"] = stacks[profiles[-1].name].server_version if stacks else measured_on
    return results


def run_chaos(engine: str, runs: int, seed: int, out: Path) -> dict[str, Any]:
    """The chaos command as a subprocess, exactly as a person would run it; its last line is the result."""
    command = [sys.executable, "-m", "bench", "chaos", "--engine", engine, "--runs", str(runs), "--seed", str(seed)]
    command += ["--out", str(out)]
    say(f"[chaos {engine}] {' '.join(command[1:])}")
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    lines = done.stdout.strip().splitlines()
    last = lines[-1] if lines else ""
    match = LAST_LINE.match(last)
    say(f"  {last or done.stderr.strip()[-300:]}")
    return {
        "command": "python " + " ".join(command[1:]),
        "exit_code": done.returncode,
        "last_line": last,
        "parsed": {k: (v if k == "engine" else int(v)) for k, v in match.groupdict().items()} if match else None,
        "seconds": time.perf_counter() - started,
    }


# `bench peers` at tiny counts, for `bench all --quick`.
QUICK_PEERS = ["--steps", "3", "--long-steps", "5", "--reps", "1", "--concurrent", "3", "--kill-steps", "3"]


def run_peers(args: argparse.Namespace) -> dict[str, Any]:
    """`bench peers` as a subprocess, as a person would run it; its results file, or why there is none. Only with
    the `peers` group installed (`make peers`): without it, one line saying so."""
    absent = missing_peers()
    if absent:
        say(f"[peers] skipped: {', '.join(absent)} not installed (make peers)")
        return {"skipped": f"{', '.join(absent)} not installed (make peers)"}
    command = [sys.executable, "-m", "bench", "peers", "--out", str(args.out), "--server-profile", args.server_profile]
    command += QUICK_PEERS if args.quick else []
    say(f"[peers] {' '.join(command[1:])}")
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    out: dict[str, Any] = {"command": "python " + " ".join(command[1:]), "exit_code": done.returncode}
    if done.returncode == 0:
        out |= json.loads((args.out / "peers.json").read_text())
    else:
        out["error"] = (done.stderr or done.stdout).strip()[-1000:]
    out["seconds"] = time.perf_counter() - started
    return out


def write(results: dict[str, Any], out: Path, name: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(results, indent=2, default=str))
    text = report.markdown(results)
    (out / f"{name}.md").write_text(text)
    written = report.plots(results, out)
    print()
    print(text, flush=True)
    say(f"wrote {out / (name + '.json')}, {out / (name + '.md')}" + "".join(f", {p}" for p in written))


def run_sections(args: argparse.Namespace, sections: tuple[str, ...], name: str, extra: bool = False) -> int:
    started = time.perf_counter()
    command = "python -m bench " + " ".join(_without_passwords(sys.argv[1:]))
    results: dict[str, Any] = {"command": command, "machine": machine.facts()}
    results["config"] = {k: vars(v) for k, v in configs(args, sections).items()}
    profiles = server_profiles(args.server_profile)
    if not {"overhead", "throughput"} & set(sections):
        profiles = profiles[-1:]  # recovery and storage run on one server: the one we ship
    results["config"]["server_profiles"] = {p.name: p.dev_server_flags() for p in profiles}
    results["quick"] = bool(args.quick)  # a smoke run: the report does not claim its goals
    workdir = Path(tempfile.mkdtemp(prefix="bench-"))
    ok = False
    stopped: BaseException | None = None
    measured: dict[str, Any] = {}
    try:
        settings = configs(args, sections)
        postgres_url = getattr(args, "postgres_url", None)
        try:
            if sections:
                asyncio.run(until_signalled(measure(sections, settings, workdir, profiles, postgres_url, measured)))
        except (Stopped, Unfinished) as exc:  # what was measured until then is reported, then the reason
            stopped = exc
        results["machine"]["temporal_server"] = measured.pop("temporal_server", None)
        results |= measured
        if stopped is not None:
            results["stopped"] = f"{type(stopped).__name__}: {stopped}"
        elif extra:
            results["loc"] = loc.count_sets()
            if args.chaos_runs:
                results["chaos"] = {
                    engine: run_chaos(engine, args.chaos_runs, args.seed, args.out)
                    for engine in ("temporal", "baseline")
                }
            if args.peers:
                results["peers"] = run_peers(args)
        ok = stopped is None
    finally:
        if ok and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            say(f"scratch directory (logs): {workdir}")
    results["machine"]["load_average_end"] = machine.load()
    results["seconds"] = time.perf_counter() - started
    write(results, args.out, name)
    if isinstance(stopped, Stopped):
        print(f"bench {name}: NOT FINISHED — stopped by {stopped}; the figures above are those measured until then")
        raise stopped  # bench/cli.py: says so on stderr, exit status 130
    if stopped is not None:
        print(f"bench {name}: NOT FINISHED — {stopped}")
        return 1
    return 0


def _without_passwords(argv: list[str]) -> list[str]:
    """The command line as the results record it: a `--postgres-url` without its password."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    def shown(url: str) -> str:
        parts = conninfo_to_dict(url)
        if parts.pop("password", None) is None:
            return url
        return make_conninfo(**parts)  # type: ignore[arg-type]

    out: list[str] = []
    for arg in argv:
        if out and out[-1] == "--postgres-url":
            arg = shown(arg)
        elif arg.startswith("--postgres-url="):
            arg = "--postgres-url=" + shown(arg.split("=", 1)[1])
        out.append(arg)
    return out


def cmd_all(args: argparse.Namespace) -> int:
    if args.quick:
        args.chaos_runs = min(args.chaos_runs, 5)
    return run_sections(args, SECTIONS, "bench", extra=True)


def configure_all(sub: argparse.ArgumentParser) -> None:
    add_measurements(sub, SECTIONS)
    sub.add_argument("--chaos-runs", type=int, default=10, help="runs per engine of the chaos check (0: skip)")
    sub.add_argument("--seed", type=int, default=1, help="the chaos check's seed")
    sub.add_argument(
        "--no-peers", dest="peers", action="store_false", help="skip `bench peers` (run when the peers are installed)"
    )


def section_command(section: str, help: str) -> Command:
    return Command(
        section,
        help,
        lambda sub: add_measurements(sub, (section,)),
        lambda args: run_sections(args, (section,), section),
    )


def cmd_loc(args: argparse.Namespace) -> int:
    write({"loc": loc.count_sets()}, args.out, "loc")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    source = Path(args.source)
    try:
        results = json.loads(source.read_text())
    except FileNotFoundError:
        print(f"error: no results file at {source} (run a measurement first, or give --from FILE)", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"error: {source} is not a results JSON: {exc}", file=sys.stderr)
        return 2
    if args.readme:
        from bench.readme import readme_table

        print(readme_table(results), end="")
        return 0
    text = report.markdown(results)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)  # plots go there: a new directory is made, as `write` does
    report.plots(results, args.out)
    return 0


def configure_report(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--from", dest="source", default=str(Path("results") / "bench.json"))
    sub.add_argument("--out", type=Path, default=Path("results"))
    sub.add_argument(
        "--readme",
        action="store_true",
        help="print the comparison table of docs/benchmarks.md from the results (nothing written)",
    )


register(Command("all", "every measurement and a short chaos check, one report", configure_all, cmd_all))
register(section_command("overhead", "per-step overhead: in-process, baseline, Temporal, the bare Temporal floor"))
register(section_command("throughput", "runs/s at N concurrent runs, Temporal vs the floor, and the baseline"))
register(section_command("recovery", "SIGKILL mid-step: time until the next step completes on a new process"))
register(section_command("storage", "history bytes and events vs checkpoint bytes per run, as steps grow"))
register(
    section_command(
        "waiting", "runs waiting for approval: worker memory, server bytes per run, start time, and the drain rate"
    )
)
register(Command("loc", "lines of code each engine needs for durability", add_output, cmd_loc))
register(Command("report", "render a saved results JSON again (markdown and plots)", configure_report, cmd_report))
