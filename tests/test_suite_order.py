"""`make test` hands whole files to its workers heaviest first (tests/support/cost_markers.py): checked on this
very session's collected tests, and the measured weights read from a real `--durations=0` report's lines."""

from __future__ import annotations

import json
from itertools import groupby

import pytest

from tests.support.cost_markers import DURATIONS, file_of
from tests.support.durations import per_file


def test_each_files_tests_stay_together(request: pytest.FixtureRequest) -> None:
    """(`--dist loadfile` hands out runs of consecutive tests of one file: a file split apart would be two.)"""
    files = [name for name, _ in groupby(request.session.items, key=file_of)]
    assert len(files) == len(set(files)), "a file's tests were split apart"


def test_the_measured_files_go_out_heaviest_first(request: pytest.FixtureRequest) -> None:
    """(In a whole-suite run: run alone, this file is the only one collected.)"""
    measured = json.loads(DURATIONS.read_text())
    order = [name for name, _ in groupby(request.session.items, key=file_of) if name in measured]
    seconds = [measured[name] for name in order]
    assert seconds == sorted(seconds, reverse=True)


def test_a_durations_report_gives_each_files_seconds() -> None:
    report = """============================= slowest durations ==============================
87.65s call     tests/temporal/test_clean_exit.py::test_the_documented_client_script_exits_0_fifty_times_in_a_row
2.00s setup    tests/ops/test_cli.py::test_demo_runs_end_to_end_and_exits_zero
1.50s call     tests/ops/test_cli.py::test_demo_runs_end_to_end_and_exits_zero
0.25s teardown tests/ops/test_prune.py::test_x[after_archive-postgres]
(1210 durations < 0.005s hidden.  Use -vv to show these durations.)"""
    assert per_file(report) == {
        "tests/ops/test_cli.py": 3.5,
        "tests/ops/test_prune.py": 0.2,
        "tests/temporal/test_clean_exit.py": 87.7,
    }
