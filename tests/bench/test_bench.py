"""The bench's own logic: statistics, the line counter, the chaos invariant checker (on synthetic ledgers
that break each invariant), history parsing, the report — plus one small end-to-end overhead run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from temporalio.api.common.v1 import ActivityType
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import (
    ActivityTaskCompletedEventAttributes,
    ActivityTaskScheduledEventAttributes,
    ActivityTaskStartedEventAttributes,
    HistoryEvent,
    WorkflowTaskScheduledEventAttributes,
    WorkflowTaskTimedOutEventAttributes,
)

from bench import loc, report
from bench import postgres as bench_postgres
from bench.chaos.invariants import EffectRow, RunSpec, check
from bench.chaos.plan import MIX, plan
from bench.commands import LAST_LINE, _without_passwords
from bench.overhead import run_baseline, run_in_process
from bench.recovery import temporal_timings
from bench.served import agent_set
from bench.stats import intervals, percentile, ratio, summarize
from bench.storage import checkpoint_bytes, value_bytes
from bench.temporal_runs import step_intervals
from duragent._baseline.store import Store
from duragent._config.settings import ROOT
from duragent._ops.devstack.local_postgres import LocalPostgres
from tests.support.postgres_server import binaries
from tests.support.processes import run_to_end

# -- statistics ---------------------------------------------------------------------------------------


def test_percentile_interpolates_between_ranks():
    values = list(range(1, 101))
    assert percentile(values, 99) == pytest.approx(99.01)
    assert percentile(values, 50) == pytest.approx(50.5)
    assert percentile([3.0, 1.0, 2.0], 100) == 3.0
    assert percentile([7.0], 99) == 7.0
    with pytest.raises(ValueError):
        percentile([], 50)


def test_summarize_and_ratio():
    s = summarize([4.0, 1.0, 3.0, 2.0])
    assert (s["n"], s["median"], s["min"], s["max"]) == (4, 2.5, 1.0, 4.0)
    assert s["p99"] == pytest.approx(3.97)
    assert summarize([]) == {"n": 0, "median": None, "p99": None, "min": None, "max": None}
    assert ratio(3.0, 2.0) == 1.5
    assert ratio(None, 2.0) is None and ratio(1.0, 0.0) is None
    assert intervals([1.0, 1.5, 3.0]) == [0.5, 1.5]


# -- lines of code ------------------------------------------------------------------------------------

SAMPLE = '''"""Module docstring
spanning two lines."""

# a comment on its own line
import os  # a trailing comment


def f(x):
    """Doc."""
    y = (x +
         1)
    s = """a string that is
    not a docstring"""
    return y, s, os


class C:
    \'\'\'Class doc.\'\'\'

    pass
'''


def test_count_source_skips_blank_comment_and_docstring_lines():
    c = loc.count_source(SAMPLE)
    # import, def, `y = (x +`, `1)`, the two lines of `s = """..."""`, return, class, pass
    assert c.code == 9
    assert c.logical == 7  # import, def, y =, s =, return, class, pass
    assert c.comments == 1  # the trailing comment shares its line with code
    assert c.docstrings == 4  # 2 (module) + 1 (f) + 1 (C)
    assert c.blank == 6
    assert c.total == len(SAMPLE.splitlines())


def test_count_sets_counts_each_file_once_in_the_first_role(tmp_path: Path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "core.py").write_text("a = 1\nb = 2\n")
    (tmp_path / "pkg" / "extra.py").write_text("# only a comment\nc = 3\n")
    sets = {"engine": {"durability": ["pkg/core.py"], "operations": ["pkg/*.py"]}}
    counted = loc.count_sets(tmp_path, sets)["engine"]
    assert [f["path"] for f in counted["durability"]["files"]] == ["pkg/core.py"]
    assert [f["path"] for f in counted["operations"]["files"]] == ["pkg/extra.py"]
    assert (counted["durability"]["code"], counted["operations"]["code"]) == (2, 1)


def test_a_shared_file_is_counted_for_no_engine(tmp_path: Path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "core.py").write_text("a = 1\n")
    (tmp_path / "pkg" / "options.py").write_text("b = 2\n")
    sets = {"engine": {"operations": ["pkg/*.py"]}, loc.SHARED: {"not counted": ["pkg/options.py"]}}
    counted = loc.count_sets(tmp_path, sets)
    assert [f["path"] for f in counted["engine"]["operations"]["files"]] == ["pkg/core.py"]
    assert [f["path"] for f in counted[loc.SHARED]["not counted"]["files"]] == ["pkg/options.py"]


def test_every_listed_pattern_of_the_repository_matches_files():
    """A renamed module must not silently drop out of the comparison."""
    for roles in loc.FILE_SETS.values():
        for patterns in roles.values():
            for pattern in patterns:
                assert loc.resolve([pattern]), f"{pattern} matches no file"
    counted = loc.count_sets()
    assert counted["temporal"]["durability"]["code"] > 0 and counted["baseline"]["durability"]["code"] > 0
    baseline_files = {f["path"] for role in counted["baseline"].values() for f in role["files"]}
    assert baseline_files == {str(p.relative_to(ROOT)) for p in (ROOT / "duragent" / "_baseline").glob("*.py")}


# -- the chaos invariant checker -----------------------------------------------------------------------

BILLING = RunSpec("r-bill", "billing")
MIGRATION = RunSpec("r-mig", "migration", records=3)
REFUND = RunSpec("r-ref", "refund")
TRIP_OK = RunSpec("r-trip", "trip", fail_at="none")
TRIP_CAR = RunSpec("r-car", "trip", fail_at="car")
SPECS = [BILLING, MIGRATION, REFUND, TRIP_OK, TRIP_CAR]
FINE = {
    "r-bill": "completed",
    "r-mig": "completed",
    "r-ref": "completed",
    "r-trip": "completed",
    "r-car": "compensated",
}


def clean_ledger() -> list[EffectRow]:
    rows = [
        EffectRow("r-bill:charge:inv-9:attempt-1", "r-bill", "charge", {"invoice": "inv-9", "key": "inv-9:attempt-1"}),
        *(EffectRow(f"r-mig:call_{n}", "r-mig", "migrate_record", {"record": f"rec-{n}"}) for n in (1, 2, 3)),
        EffectRow("r-ref:call_2_1", "r-ref", "refund", {"order_id": "4471"}),
        *(
            EffectRow(f"r-trip:{leg}", "r-trip", f"book_{leg}", {"trip": "trip-42"})
            for leg in ("flight", "hotel", "car")
        ),
        EffectRow("r-car:flight", "r-car", "book_flight", {"trip": "trip-42"}),
        EffectRow("r-car:hotel", "r-car", "book_hotel", {"trip": "trip-42"}),
        EffectRow("r-car:hotel:undo", "r-car", "cancel_hotel", {"trip": "trip-42"}, compensates="r-car:hotel"),
        EffectRow("r-car:flight:undo", "r-car", "cancel_flight", {"trip": "trip-42"}, compensates="r-car:flight"),
    ]
    return rows


def test_a_clean_session_passes_and_prints_the_exact_last_line():
    verdict = check(SPECS, FINE, clean_ledger())
    assert verdict.ok, (verdict.lost, verdict.duplicates, verdict.anomalies)
    line = verdict.line("temporal", kills=4)
    assert line == "chaos temporal: runs=5 completed=4 compensated=1 lost=0 duplicate_effects=0 kills=4"
    assert LAST_LINE.match(line).groupdict() == {  # type: ignore[union-attr]
        "engine": "temporal",
        "runs": "5",
        "completed": "4",
        "compensated": "1",
        "lost": "0",
        "duplicate_effects": "0",
        "kills": "4",
    }


@pytest.mark.parametrize(
    "extra, why",
    [
        (EffectRow("r-mig:call_2", "r-mig", "migrate_record", {"record": "rec-2"}), "has 2 effects"),  # same key
        (EffectRow("r-mig:call_9", "r-mig", "migrate_record", {"record": "rec-2"}), "rec-2 made 2 times"),
        (EffectRow("r-bill:charge:other", "r-bill", "charge", {"invoice": "inv-9"}), "inv-9 made 2 times"),
        (EffectRow("r-ref:call_4_1", "r-ref", "refund", {"order_id": "4471"}), "4471 made 2 times"),
        (EffectRow("r-trip:flight-2", "r-trip", "book_flight", {"trip": "trip-42"}), "flight booked 2 times"),
        (
            EffectRow("r-car:hotel:undo-2", "r-car", "cancel_hotel", {}, compensates="r-car:hotel"),
            "cancelled 2 times",
        ),
        (
            EffectRow("r-car:car:undo", "r-car", "cancel_car", {}, compensates="r-car:car"),
            "which is no car booking",
        ),
        (
            EffectRow("r-car:x:undo", "r-car", "cancel_car", {}, compensates="r-car:hotel"),
            "which is no car booking",
        ),
    ],
)
def test_each_kind_of_duplicate_effect_is_counted(extra: EffectRow, why: str):
    verdict = check(SPECS, FINE, [*clean_ledger(), extra])
    assert verdict.duplicate_effects == 1, verdict.duplicates
    assert why in verdict.duplicates[0]
    assert not verdict.ok
    assert "duplicate_effects=1" in verdict.line("baseline", kills=0)


def test_a_row_breaking_two_rules_counts_once():
    twice = EffectRow("r-mig:call_2", "r-mig", "migrate_record", {"record": "rec-2"})  # same key AND same record
    thrice = [*clean_ledger(), twice, twice]
    assert check(SPECS, FINE, thrice).duplicate_effects == 2


def test_runs_not_terminal_or_missing_are_lost():
    statuses = FINE | {"r-mig": "running", "r-ref": "awaiting_approval"}
    statuses.pop("r-bill")
    verdict = check(SPECS, statuses, [e for e in clean_ledger() if e.run_id != "r-bill"])
    assert len(verdict.lost) == 3
    assert {line.split(" ")[0] for line in verdict.lost} == {"r-mig", "r-ref", "r-bill"}
    assert "lost=3" in verdict.line("temporal", kills=1)


@pytest.mark.parametrize(
    "statuses, effects, why",
    [
        (FINE | {"r-car": "completed"}, None, "expected compensated"),
        (FINE | {"r-trip": "compensated"}, None, "expected completed"),
        (FINE, [e for e in clean_ledger() if e.args.get("record") != "rec-3"], "without effects for rec-3"),
        (FINE, [e for e in clean_ledger() if e.tool != "cancel_flight"], "left book_flight uncancelled"),
        (FINE, [*clean_ledger(), EffectRow("r-car:car", "r-car", "book_car", {})], "always fails, was booked"),
        (FINE, [*clean_ledger(), EffectRow("ghost:1", "ghost", "charge", {})], "never started"),
    ],
)
def test_anomalies_fail_the_session_without_counting_as_duplicates(statuses, effects, why):
    verdict = check(SPECS, statuses, clean_ledger() if effects is None else effects)
    assert verdict.duplicate_effects == 0 and not verdict.lost
    assert any(why in a for a in verdict.anomalies), verdict.anomalies
    assert not verdict.ok


def test_the_plan_covers_every_agent_and_outcome_and_is_reproducible():
    specs = plan(6, seed=3, prefix="p")
    kinds = {s.agent if s.agent != "trip" else f"trip-{s.fail_at}" for s in specs}
    assert kinds == set(MIX)
    assert len({s.run_id for s in specs}) == 6
    assert plan(6, seed=3, prefix="p") == specs
    assert plan(6, seed=4, prefix="p") != specs


# -- history parsing ----------------------------------------------------------------------------------


def _event(event_id: int, at: float, **attributes: object) -> HistoryEvent:
    stamp = Timestamp(seconds=int(at), nanos=round((at - int(at)) * 1e9))
    return HistoryEvent(event_id=event_id, event_time=stamp, **attributes)  # type: ignore[arg-type]


def _scheduled(event_id: int, at: float, name: str) -> HistoryEvent:
    return _event(
        event_id,
        at,
        activity_task_scheduled_event_attributes=ActivityTaskScheduledEventAttributes(
            activity_type=ActivityType(name=name)
        ),
    )


def test_step_intervals_are_between_model_calls():
    events = [
        _scheduled(1, 100.0, "call_model"),
        _scheduled(2, 100.2, "run_tool"),
        _scheduled(3, 100.5, "call_model"),
        _scheduled(4, 100.6, "run_tool"),
        _scheduled(5, 101.25, "call_model"),
    ]
    assert step_intervals(events) == pytest.approx([0.5, 0.75])


def test_recovery_timings_read_the_retry_and_the_sticky_timeout():
    kill = 1000.0
    events = [
        _scheduled(10, 998.0, "run_tool"),  # the interrupted one
        _event(
            11,
            1003.0,
            activity_task_started_event_attributes=ActivityTaskStartedEventAttributes(scheduled_event_id=10, attempt=2),
        ),
        _event(
            12,
            1004.0,
            activity_task_completed_event_attributes=ActivityTaskCompletedEventAttributes(scheduled_event_id=10),
        ),
        _event(
            13,
            1004.0,
            event_type=EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
            workflow_task_scheduled_event_attributes=WorkflowTaskScheduledEventAttributes(),
        ),
        _event(
            14,
            1014.0,
            workflow_task_timed_out_event_attributes=WorkflowTaskTimedOutEventAttributes(scheduled_event_id=13),
        ),
        _scheduled(20, 1015.0, "run_tool"),
        _event(
            21,
            1016.0,
            activity_task_started_event_attributes=ActivityTaskStartedEventAttributes(scheduled_event_id=20, attempt=1),
        ),
        _event(
            22,
            1017.0,
            activity_task_completed_event_attributes=ActivityTaskCompletedEventAttributes(scheduled_event_id=20),
        ),
    ]
    t = temporal_timings(events, kill)
    assert t["interrupted_attempt"] == 2
    assert t["retry_started_s"] == pytest.approx(3.0)
    assert t["resumed_step_done_s"] == pytest.approx(4.0)
    assert t["next_step_done_s"] == pytest.approx(17.0)
    assert t["workflow_task_timeouts"] == 1
    assert t["sticky_wait_s"] == pytest.approx(10.0)
    assert t["next_step_s"] == pytest.approx(3.0)  # after the interrupted step, less the sticky wait


def test_the_recovery_goal_is_the_following_steps_median():
    def recovery(median: float) -> dict[str, Any]:
        following = {"next_step_done_s": {"median": median, "p99": median}}
        return {"recovery": {"temporal": {"summary": following}, "baseline": {"summary": following}}}

    [met] = report.goals(recovery(4.2))
    assert met["met"] and met["goal"] == "after a worker SIGKILL, the following step done within 5 s (median)"
    assert met["measured"] == "4.20 s (the baseline: 4.20 s)"
    [missed] = report.goals(recovery(9.6))
    assert not missed["met"]


def test_the_waiting_goal_checks_that_memory_levels_off_past_the_cache():
    def waiting(runs: int, half: float, all_: float) -> dict[str, Any]:
        phase = {
            "runs": runs,
            "stores": "sqlite",
            "worker_rss_mb": {"half": half, "all": all_},
            "samples": [{"cached": 500.0}, {"cached": 1000.0}],
        }
        return {"waiting": {"phases": [phase]}}

    [level] = report.goals(waiting(10000, 260.0, 270.0))
    assert (
        level["met"] and level["measured"] == "260 → 270 MB (1.04x)" and "past its cache of 1000 runs" in level["goal"]
    )
    [grows] = report.goals(waiting(10000, 260.0, 400.0))
    assert not grows["met"]
    assert report.goals(waiting(1000, 160.0, 216.0)) == []  # half of them still fit in the cache


# -- in-process measurements and storage accounting ----------------------------------------------------


def test_noop_runs_give_one_timing_per_step(tmp_path: Path):
    steps, wall = run_in_process(4)
    assert len(steps) == 4 and all(s > 0 for s in steps) and wall >= sum(steps)
    store = Store(tmp_path / "baseline.db")
    try:
        steps, wall = run_baseline(3, store, agent_set(tmp_path / "ledger.db"))
        assert len(steps) == 3 and wall >= sum(steps)
        run_id = store.query("SELECT run_id FROM runs")[0]["run_id"]
    finally:
        store.close()
    sized = checkpoint_bytes(tmp_path / "baseline.db", run_id)
    # one run row, then one step row and one output per loop action: 4 model calls + 3 tool calls
    assert sized["tables"]["runs"]["rows"] == 1
    assert sized["tables"]["steps"]["rows"] == 7 and sized["tables"]["outputs"]["rows"] == 7
    assert sized["rows"] == 15 and sized["bytes"] > 0
    assert (value_bytes(None), value_bytes(3), value_bytes(2.5), value_bytes("é"), value_bytes(b"ab")) == (
        0,
        8,
        8,
        2,
        2,
    )


# -- the report ---------------------------------------------------------------------------------------


def _engine(median: float, floor: float, in_process: float) -> dict[str, object]:
    step = summarize([median])
    return {"step": step, "run_per_step": step, "x_floor": median / floor, "x_in_process": median / in_process}


def test_the_report_states_each_goal_and_whether_it_was_met(tmp_path: Path):
    results = {
        "overhead": {
            "steps": 20,
            "reps": 3,
            "warmup": 1,
            "engines": {
                "in-process": _engine(0.001, 0.1, 0.001),
                "baseline": _engine(0.002, 0.1, 0.001),
                "temporal": _engine(0.15, 0.1, 0.001),
                "floor": _engine(0.1, 0.1, 0.001),
            },
        },
        "throughput": {
            "steps": 2,
            "rows": [
                {"engine": "floor", "n": 1000, "runs_per_s": 50.0, "completed": 1000, "latency": summarize([1.0])},
                {"engine": "temporal", "n": 1000, "runs_per_s": 45.0, "completed": 1000, "latency": summarize([1.0])},
                {
                    "engine": "baseline-threads",
                    "n": 1000,
                    "runs_per_s": 80.0,
                    "completed": 999,
                    "lock_errors": 1,
                    "latency": summarize([1.0]),
                },
            ],
        },
        "chaos": {
            "baseline": {"last_line": "chaos baseline: ...", "parsed": {"lost": 0, "duplicate_effects": 0}},
            "temporal": {"last_line": "chaos temporal: ...", "parsed": {"lost": 1, "duplicate_effects": 0}},
        },
    }
    goals = report.goals(results)
    # One pair of batches gives no interval: its throughput goal is undecided, never met by a single ratio.
    assert [g["met"] for g in goals] == [False, False, None, False, True, False]
    assert "1000 concurrent runs" in goals[2]["goal"] and "90%" in goals[2]["measured"]
    assert goals[3]["measured"] == "999/1000 completed, 1 locked"
    text = report.markdown(results)
    assert "| temporal | 150.00 | 150.00 | 1.50x | 1.50x | 150x | 150.00 |" in text
    assert "| temporal | 1000 | 45.0 | 90% |" in text
    assert "| our agent step ≤ 50 ms median | 150.00 ms | **no** |" in text
    assert "| our agent step within 1.05x the bare Temporal floor | 1.50x | **no** |" in text
    written = report.plots(results, tmp_path)
    assert {p.name for p in written} == {"overhead.png", "throughput.png"}
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in written)
    quick = report.markdown(results | {"quick": True})
    assert "| our agent step within 1.05x the bare Temporal floor | 1.50x | not measured (--quick) |" in quick
    # With ours also measured without search attributes, the goal's line shows what that switch moves it to.
    results["overhead"]["engines"]["temporal-no-sa"] = _engine(0.105, 0.1, 0.001)
    step_goal = report.goals(results)[1]
    assert step_goal["measured"] == "1.50x (started with search_attributes=False: 1.05x)" and not step_goal["met"]


def _batch(engine: str, n: int, rep: int, runs_per_s: float, worker: float, server: float) -> dict[str, object]:
    return {
        "engine": engine,
        "n": n,
        "rep": rep,
        "profile": "tuned",
        "runs_per_s": runs_per_s,
        "completed": n,
        "latency": summarize([1.0]),
        "worker_cpu_per_run_ms": worker,
        "server_cpu_per_run_ms": server,
    }


def test_throughput_goals_are_judged_on_the_interval_of_each_repetitions_ratio():
    """Ours ≥ 90 % of the floor's runs/s at each N, worker CPU ≤ 1.25x, server CPU ≤ 1.10x — each judged on the
    90 % interval of the per-repetition ratios (shown with the median and every repetition's ratio): three
    spread repetitions decide none of them."""
    rows = []
    for rep, (ours_rate, worker, server) in enumerate([(9.5, 24.0, 60.0), (8.0, 30.0, 62.0), (9.2, 26.0, 80.0)]):
        rows += [_batch("floor", 100, rep, 10.0, 20.0, 50.0), _batch("temporal", 100, rep, ours_rate, worker, server)]
    history = {"activity_task_scheduled": {"events": 5.0, "bytes": 1200.0}}
    rows[0]["history"], rows[1]["history"] = history, {**history, "marker_recorded": {"events": 1.0, "bytes": 900.0}}
    results = {"throughput": {"steps": 2, "profiles": ["tuned"], "reps": 3, "rows": rows}}
    goals = {g["goal"]: g for g in report.goals(results)}
    rate = goals["throughput at 100 concurrent runs ≥ 90% of the bare floor on the tuned server"]
    assert rate["met"] is None
    assert rate["measured"] == "92% (each repetition: 95%, 80%, 92%); 90 % interval 76% to 104% (3 pairs)"
    worker = goals["worker CPU per run at N = 100 ≤ 1.25x the floor's on the tuned server"]
    assert worker["met"] is None and worker["measured"].startswith("1.30x")  # 1.20, 1.50, 1.30: median 1.30
    server = goals["server CPU per run at N = 100 ≤ 1.1x the floor's on the tuned server"]
    assert server["met"] is None and server["measured"].startswith("1.24x (each: 1.20x, 1.24x, 1.60x); 90 %")
    rows[0] |= {"server_cores": 1.1, "worker_cores": 0.65}
    text = report.markdown(results)
    assert "Medians of 3 interleaved repetitions" in text

    # Each batch's share of the machine, where it was measured (older results have none).
    def batch_line(start: str) -> str:
        return next(line for line in text.splitlines() if line.startswith(start))

    assert "| 1.10 / 0.65 |" in batch_line("| floor | 100 | 1 |")
    assert "| — |" in batch_line("| temporal | 100 | 1 |")
    assert "| marker_recorded | 0.0 | 0 | 1.0 | 900 |" in text


@pytest.mark.system
def test_pinning_puts_every_thread_of_a_process_on_the_cpus_named_and_says_so(monkeypatch):
    """`--pin-cores`: a process's threads on the CPUs named (a real process), its mask before returned; a machine
    without the two CPUs is told so; the report says the batches were pinned."""
    from bench.machine import pin
    from bench.throughput import _pinned

    sleeper = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import threading, time; threading.Thread(target=time.sleep, args=(30,)).start(); time.sleep(30)",
        ]
    )
    try:
        time.sleep(0.5)  # its second thread started
        before = pin(sleeper.pid, {0})
        threads = os.listdir(f"/proc/{sleeper.pid}/task")
        assert len(threads) == 2 and all(os.sched_getaffinity(int(tid)) == {0} for tid in threads)
        assert before == os.sched_getaffinity(0)
    finally:
        sleeper.kill()
        sleeper.wait()
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    with pytest.raises(ValueError, match=r"--pin-cores needs CPUs 0 and 1; this process may use \[0\]"):
        _pinned(None, "floor").__enter__()  # type: ignore[arg-type]
    rows = [_batch("floor", 100, 0, 10.0, 20.0, 50.0) | {"pinned": True}, _batch("temporal", 100, 0, 9.0, 22.0, 55.0)]
    text = report.markdown({"throughput": {"steps": 2, "profiles": ["tuned"], "reps": 1, "rows": rows}})
    assert "Pinned (`--pin-cores`): each batch's server on CPU 0, its worker and the bench on CPU 1." in text


def test_throughput_price_list_splits_ours_over_the_floor_by_feature():
    """The price list: with the floor carrying ours' bytes, the floor with ours' heartbeat timeout and ours
    without search attributes measured beside them, the report prices each feature as the median of the
    per-repetition differences (CPU per run), each repetition's shown, and the server's CPU as a ratio of the two
    engines with its 90 % interval; with only ours and the floor there is nothing to split, and no price list."""
    rows = []
    for rep, extra in enumerate([0.0, 2.0, 4.0]):
        rows += [
            _batch("floor", 1000, rep, 20.0, 20.0, 40.0),
            _batch("floor+payloads", 1000, rep, 19.0, 22.0 + extra, 43.0 + extra),
            _batch("floor+heartbeat", 1000, rep, 20.0, 21.0, 44.0),
            _batch("temporal-no-sa", 1000, rep, 18.0, 25.0, 46.0),
            _batch("temporal", 1000, rep, 17.0, 26.0, 50.0 - extra),
        ]
    text = report.markdown({"throughput": {"steps": 2, "profiles": ["tuned"], "reps": 3, "rows": rows}})
    assert "Price list" in text
    lines = {line.split(" | ")[2]: line for line in text.splitlines() if line.startswith("| tuned | 1000 |")}
    # Server ratios 50/46, 48/46, 46/46: geometric mean 1.04x, t (2 df) on their logs 0.97x to 1.12x.
    assert lines["search attributes"].endswith("| 2.0 (4.0, 2.0, 0.0) | 1.0 (1.0, 1.0, 1.0) | 1.04x (0.97x to 1.12x) |")
    assert lines["payload bytes"].endswith("| 5.0 (3.0, 5.0, 7.0) | 4.0 (2.0, 4.0, 6.0) | 1.12x (1.04x to 1.21x) |")
    heartbeat = lines["heartbeat timeouts"]
    assert heartbeat.endswith("| 4.0 (4.0, 4.0, 4.0) | 1.0 (1.0, 1.0, 1.0) | 1.10x (1.10x to 1.10x) |")
    assert "| 1.0 (3.0, 1.0, -1.0) | 1.0 (3.0, 1.0, -1.0) | 1.02x (" in lines["our code"]
    assert "| 8.0 (10.0, 8.0, 6.0) | 6.0 (6.0, 6.0, 6.0) | 1.20x (" in lines["all of it"]
    only_ours = [r for r in rows if r["engine"] in ("floor", "temporal")]
    bare = report.markdown({"throughput": {"steps": 2, "profiles": ["tuned"], "reps": 3, "rows": only_ours}})
    assert "Price list" not in bare


@pytest.mark.system
def test_report_into_a_new_directory_and_from_a_missing_file(tmp_path: Path):
    """`report --out NEWDIR` made no directory and crashed; a missing `--from` was a
    traceback. Now: the directory is made, and a missing file is one line, exit 2."""
    import json
    import sys

    saved = tmp_path / "overhead.json"
    saved.write_text(json.dumps({"overhead": _overhead_for_report()}))
    out = tmp_path / "new" / "dir"
    bench = [sys.executable, "-m", "bench", "report"]
    made = subprocess.run([*bench, "--from", str(saved), "--out", str(out)], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    assert (out / "overhead.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    missing = subprocess.run([*bench, "--from", str(tmp_path / "nope.json")], capture_output=True, text=True)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert missing.stderr.strip().splitlines() == [
        f"error: no results file at {tmp_path / 'nope.json'} (run a measurement first, or give --from FILE)"
    ]


def _overhead_for_report() -> dict:
    return {
        "steps": 20,
        "reps": 3,
        "warmup": 1,
        "engines": {
            name: _engine(seconds, 0.1, 0.001)
            for name, seconds in (("in-process", 0.001), ("baseline", 0.002), ("temporal", 0.15), ("floor", 0.1))
        },
    }


# -- end to end ---------------------------------------------------------------------------------------


def bench(*arguments: str, out: Path) -> None:
    """`python -m bench ARGUMENTS --out OUT`, as a person would run it; it must succeed."""
    command = [sys.executable, "-m", "bench", *arguments, "--out", str(out)]
    done = run_to_end(command, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


@pytest.mark.system
def test_bench_overhead_runs_every_engine_end_to_end(tmp_path: Path):
    """The real stack, once per server profile: a dev server, our worker (which must serve bench.agents through
    AGENT_MODULES, or every bench-noop run fails), the floor's worker; the baseline, in-process; the long runs."""
    bench(
        *("overhead", "--overhead-steps", "3", "--overhead-reps", "2", "--overhead-warmup", "1"),
        *("--overhead-long-steps", "4", "--overhead-long-reps", "1", "--server-profile", "both"),
        out=tmp_path,
    )
    results = json.loads((tmp_path / "overhead.json").read_text())
    engines = results["overhead"]["engines"]
    kinds = ("temporal", "temporal-no-sa", "floor", "floor+sa")
    temporal = {f"{kind} ({profile})" for kind in kinds for profile in ("default", "tuned")}
    assert set(engines) == {"in-process", "baseline"} | temporal
    assert all(e["step"]["n"] == 6 for e in engines.values())  # 2 runs x 3 steps each
    assert engines["floor (default)"]["x_floor"] == engines["floor (tuned)"]["x_floor"] == 1.0
    assert engines["floor (tuned)"]["x_floor_reps"] == [1.0, 1.0]  # each rep's ratio, and the goal's median
    ours = engines["temporal (tuned)"]
    assert report.step_x_floor(ours) > 0 and len(ours["x_floor_reps"]) == 2
    assert engines["in-process"]["x_in_process"] == 1.0
    assert engines["temporal (tuned)"]["step"]["median"] > engines["in-process"]["step"]["median"]
    long = results["overhead"]["long"]["engines"]
    assert set(long) == {"in-process", "baseline", "temporal (tuned)", "floor (tuned)"}
    assert all(e["step"]["n"] == 4 for e in long.values())  # 1 run x 4 steps each
    assert set(results["config"]["server_profiles"]) == {"default", "tuned"}
    assert results["long_lived_stacks"] == ["default", "tuned"]  # the overhead's, one per profile
    assert results["machine"]["temporal_server"] and results["machine"]["cpus"]
    assert (tmp_path / "overhead.png").read_bytes()[:4] == b"\x89PNG"
    assert "### Per-step overhead" in (tmp_path / "overhead.md").read_text()


def test_the_recorded_command_line_never_holds_a_database_password():
    argv = ["throughput", "--postgres-url", "postgresql://u:s3cret@db:5432/x", "--postgres-url=host=db password=s3cret"]
    recorded = " ".join(_without_passwords(argv))
    assert "s3cret" not in recorded and recorded.count("host=db") == 2
    assert _without_passwords(["--postgres-url", "postgresql://u@db/x"]) == ["--postgres-url", "postgresql://u@db/x"]


@pytest.fixture(scope="module")
def own_postgres() -> Iterator[LocalPostgres]:
    """This module's own server, configured as the bench configures the one it starts (pg_stat_statements)."""
    bin_dir = binaries()
    assert bin_dir is not None  # without binaries, conftest sets this module's PostgreSQL tests aside
    server = LocalPostgres(bin_dir, settings=bench_postgres.SETTINGS)
    try:
        yield server
    finally:
        server.close()


@pytest.mark.system
def test_bench_throughput_has_a_row_with_the_postgresql_stores(tmp_path: Path, own_postgres: LocalPostgres):
    """Our runs on a second worker whose stores are in PostgreSQL, next to the SQLite one: every run completes,
    the same rows per step land in either backend (one Transcripts code), and the server counts the writes."""
    bench(
        *("throughput", "--concurrency", "3", "--throughput-steps", "2", "--baseline-threads", "2"),
        *("--baseline-processes", "1", "--postgres-url", own_postgres.url, "--server-profile", "tuned"),
        *("--payload-floor", "--heartbeat-floor", "--without-search-attributes", "--throughput-reps", "1"),
        out=tmp_path,
    )
    results = json.loads((tmp_path / "throughput.json").read_text())
    rows = {row["engine"]: row for row in results["throughput"]["rows"]}
    sqlite, postgres = rows["temporal"], rows["temporal-postgres"]
    # Each batch on a server of its own (started for it): no engine pays for the runs of the one before,
    # and no long-lived server idles beside them (nothing else of this command needs one).
    assert len({row["server_pid"] for row in rows.values() if "server_pid" in row}) == 6
    assert results["long_lived_stacks"] == [] and results["machine"]["temporal_server"]
    # The price list's engines: the floor carrying ours' bytes stores about what ours without search attributes
    # does (bench/floor.py's pads, measured on bench-noop), far more than the bare floor.
    all_rows = json.loads((tmp_path / "throughput.json").read_text())["throughput"]["rows"]
    sampled = {row["engine"]: row for row in all_rows if row.get("history")}  # the first repetition's
    padded, bare, without = sampled["floor+payloads"], sampled["floor"], sampled["temporal-no-sa"]
    assert padded["completed"] == without["completed"] == 3

    def stored(row: dict) -> float:
        return sum(entry["bytes"] for entry in row["history"].values())

    assert abs(stored(padded) - stored(without)) < 0.05 * stored(without) and stored(padded) > 2 * stored(bare)
    assert padded["history"]["marker_recorded"]["events"] == 1.0
    # The floor with ours' heartbeat timeout schedules the same activities, each with that timeout set.
    heartbeat = sampled["floor+heartbeat"]
    assert heartbeat["completed"] == 3
    scheduled = heartbeat["history"]["activity_task_scheduled"]
    assert scheduled["events"] == pytest.approx(bare["history"]["activity_task_scheduled"]["events"]) == 5.0
    assert scheduled["bytes"] > bare["history"]["activity_task_scheduled"]["bytes"]
    report_text = (tmp_path / "throughput.md").read_text()
    assert "Price list" in report_text
    assert "| payload bytes |" in report_text and "| heartbeat timeouts |" in report_text
    assert sqlite["completed"] == postgres["completed"] == 3 and postgres["runs_per_s"] > 0
    assert sqlite["server_cores"] > 0 and sqlite["worker_cores"] > 0  # each process's share while the batch ran
    assert postgres["store_rows_per_step"] == sqlite["store_rows_per_step"] > 0
    assert sqlite["store_writes_per_step"] is None and postgres["store_writes_per_step"] >= 4  # 2 per stored message
    assert "| temporal-postgres | 3 |" in (tmp_path / "throughput.md").read_text()
    with psycopg.connect(own_postgres.url) as db:  # the scratch database was dropped
        assert db.execute("SELECT count(*) FROM pg_database WHERE datname LIKE 'bench_%'").fetchone() == (0,)


def test_the_knobs_report_has_a_row_per_variant():
    from bench.knobs import markdown

    row = {
        "variant": "tuned",
        "idle_cpu_percent": 0.5,
        "idle_db_requests_per_s": 2.25,
        "floor_step": summarize([0.02]),
        "dispatch": summarize([0.002]),
        "dispatch_p90": 0.004,
        "timer_late": summarize([0.01]),
        "n": 100,
        "runs_per_s": 18.6,
        "server_cpu_ms_per_run": 44.3,
        "db_requests_per_run": 53.4,
    }
    skipped_load = {k: v for k, v in row.items() if k not in ("n", "runs_per_s", "server_cpu_ms_per_run")}
    text = markdown({"rows": [row, skipped_load | {"variant": "default", "db_requests_per_run": None}]})
    assert "| tuned | 0.50 | 2.2 | 20.0 | 2.0 / 4.0 | 10.0 | 100 | 18.6 | 44.3 | 53.4 |" in text
    assert "| default | 0.50 | 2.2 | 20.0 | 2.0 / 4.0 | 10.0 | — | n/a | n/a | n/a |" in text


def _pair(rep: int, ours: float, floor: float, ours_cpu: float = 50.0, floor_cpu: float = 50.0) -> list[dict]:
    common = {"n": 1000, "rep": rep, "profile": "tuned", "completed": 1000, "latency": summarize([1.0])}
    return [
        {**common, "engine": "floor", "runs_per_s": floor, "server_cpu_per_run_ms": floor_cpu},
        {**common, "engine": "temporal", "runs_per_s": ours, "server_cpu_per_run_ms": ours_cpu},
    ]


def test_a_throughput_goal_is_judged_on_the_interval_of_the_pairs_ratios():
    """Three pairs at 106 %, 74 %, 79 % (a measured spread) straddle 90 %: undecided, and the run asks for more
    pairs; six tight pairs around 98 % meet it; six around 80 % miss it."""
    from bench.throughput import undecided

    spread = [row for rep, ours in enumerate([21.2 * 1.06, 25.3 * 0.74, 21.1 * 0.79]) for row in _pair(rep, ours, 1)]
    for row in spread:
        if row["engine"] == "floor":
            row["runs_per_s"] = {0: 21.2, 1: 25.3, 2: 21.1}[row["rep"]]
    tight = [row for rep, share in enumerate([0.99, 1.04, 0.93, 0.97, 1.0, 0.95]) for row in _pair(rep, 20 * share, 20)]
    low = [row for rep, share in enumerate([0.8, 0.82, 0.78, 0.81, 0.79, 0.8]) for row in _pair(rep, 20 * share, 20)]

    def throughput_goal(rows: list[dict]) -> bool | None:
        results = {"throughput": {"steps": 2, "profiles": ["tuned"], "rows": rows}}
        [goal] = [g for g in report.goals(results) if "concurrent runs" in g["goal"]]
        return goal["met"]

    assert throughput_goal(spread) is None and undecided(spread, 1000, "tuned")
    assert throughput_goal(tight) is True and not undecided(tight, 1000, "tuned")
    assert throughput_goal(low) is False and not undecided(low, 1000, "tuned")
    cpu = [row for rep, x in enumerate([1.2, 1.25, 1.22]) for row in _pair(rep, 20, 20, ours_cpu=50 * x)]
    cpu_goals = report.goals({"throughput": {"steps": 2, "profiles": ["tuned"], "rows": cpu}})
    [server] = [g for g in cpu_goals if g["goal"].startswith("server CPU")]
    assert server["met"] is False and "90 % interval" in server["measured"]


def test_ours_without_search_attributes_is_judged_by_the_same_goals_beside_ours():
    """`--without-search-attributes`: the goals judged again for ours started with search_attributes=False, so a
    run says whether the search attributes are what keeps ours from a goal; the price list gets its row."""
    rows = []
    for rep, (ours, bare) in enumerate([(1.2, 1.01), (1.15, 1.03), (1.18, 0.99), (1.2, 1.02)]):
        pair = _pair(rep, 20, 20, ours_cpu=50 * ours)
        rows += [*pair, {**pair[1], "engine": "temporal-no-sa", "server_cpu_per_run_ms": 50 * bare}]
    results = {"throughput": {"steps": 2, "profiles": ["tuned"], "rows": rows}}
    server = {g["goal"]: g["met"] for g in report.goals(results) if g["goal"].startswith("server CPU")}
    goal = "server CPU per run at N = 1000 ≤ 1.1x the floor's on the tuned server"
    assert server == {goal: False, f"{goal}, started with search_attributes=False": True}
    [price] = [line for line in report.throughput_section(results["throughput"]) if "all but search" in line]
    assert "1.01x" in price


@pytest.mark.system
def test_a_pinned_batch_puts_the_server_and_worker_apart_and_gives_the_bench_its_cpus_back():
    """Inside `_pinned` the server is on CPU 0, the batch's worker and the bench on CPU 1; after it, even when the
    batch failed, the bench may use every CPU it could before (the next batch's stack is pinned afresh)."""
    from types import SimpleNamespace

    from bench.throughput import _pinned

    server, worker = (subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]) for _ in range(2))
    stack = SimpleNamespace(server=SimpleNamespace(process=server), floor=worker, worker=None, postgres=None)
    mine = os.sched_getaffinity(0)
    try:
        with pytest.raises(RuntimeError, match="the batch failed"), _pinned(stack, "floor"):  # type: ignore[arg-type]
            assert os.sched_getaffinity(server.pid) == {0}
            assert os.sched_getaffinity(worker.pid) == os.sched_getaffinity(0) == {1}
            raise RuntimeError("the batch failed")
        assert os.sched_getaffinity(0) == mine
    finally:
        for process in (server, worker):
            process.kill()
            process.wait()
