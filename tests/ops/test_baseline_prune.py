"""Retention: successful runs archived (gzip JSONL) and deleted after 30 days, failed ones after 90,
active runs never — whatever their age."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from duragent._baseline.store import Progress
from duragent._ops.retention.checkpoints import read_archive
from tests.support.baseline_helpers import Job, one_line_error, open_job


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Job]:
    yield from open_job(tmp_path)


def prune_as_of(job: Job, days: int, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, object]:
    capsys.readouterr()
    now = (datetime.now(UTC) + timedelta(days=days)).isoformat()
    assert job.cli("prune", "--now", now, "--archive-dir", str(job.tmp / "archive"), "--json", "--yes", *extra) == 0
    return json.loads(capsys.readouterr().out)


def rows(job: Job, table: str, run_id: str) -> int:
    with sqlite3.connect(job.db) as db:
        return db.execute(f"SELECT COUNT(*) FROM {table} WHERE run_id = ?", (run_id,)).fetchone()[0]


def test_retention_archives_then_deletes_and_never_touches_active_runs(
    job: Job, capsys: pytest.CaptureFixture[str]
) -> None:
    assert job.cli("run", "--id", "ok", "--scenario", "billing") == 0
    assert job.cli("run", "--id", "bad", "--scenario", "trip", "--option", "compensation_failures=9") == 1
    job.store.create_run(
        "live", "billing", "{}", owner="elsewhere", lease_seconds=3600, webhook_url=None, progress=Progress(0, 3, "")
    )
    with sqlite3.connect(job.db) as db:  # an active run untouched for years is still never pruned
        db.execute("UPDATE runs SET created_at = '2000-01-01T00:00:00.000+00:00', updated_at = created_at")
    ok_steps = rows(job, "steps", "ok")
    assert ok_steps == 3

    assert prune_as_of(job, 29, capsys)["archived"] == []

    first = prune_as_of(job, 31, capsys)
    assert first["archived"] == ["ok"]
    [archived] = read_archive(Path(str(first["archive"])))
    assert archived["run"]["run_id"] == "ok" and archived["run"]["status"] == "completed"
    assert len(archived["steps"]) == ok_steps and len(archived["outputs"]) == ok_steps
    assert job.store.run("ok") is None
    assert rows(job, "steps", "ok") == rows(job, "outputs", "ok") == 0
    assert job.store.run("bad") is not None and job.store.run("live") is not None

    assert prune_as_of(job, 89, capsys)["archived"] == []
    second = prune_as_of(job, 91, capsys)
    assert second["archived"] == ["bad"]
    assert read_archive(Path(str(second["archive"])))[0]["run"]["status"] == "compensation_failed"
    assert job.store.run("bad") is None
    assert job.store.run("live") is not None
    assert prune_as_of(job, 10_000, capsys)["archived"] == []
    assert job.effects("ok"), "retention is about checkpoints; the effects ledger is never pruned"


def test_prune_is_a_dry_run_unless_yes_and_refuses_a_negative_or_zero_retention(
    job: Job, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--completed-days -1` archived and deleted every run. A retention must be
    positive (`--all --yes` is the explicit way to take every finished run), and without `--yes` prune only
    lists what it would take."""
    assert job.cli("run", "--id", "recent", "--scenario", "billing") == 0
    capsys.readouterr()
    for days in ("-1", "0"):
        assert job.cli("prune", "--completed-days", days) == 2
        assert f"argument --completed-days: must be more than 0, got {days}" in one_line_error(capsys.readouterr().err)
    assert job.cli("prune", "--all") == 2
    assert "add --yes" in one_line_error(capsys.readouterr().err)
    assert job.store.run("recent") is not None

    later = (datetime.now(UTC) + timedelta(days=31)).isoformat()
    assert job.cli("prune", "--now", later) == 0
    said = capsys.readouterr().out
    assert "would archive and delete 1 run(s): recent (a dry run: add --yes to do it)" in said
    assert job.store.run("recent") is not None and not (job.tmp / "archive").exists()

    everything = prune_as_of(job, 0, capsys, "--all")
    assert everything["archived"] == ["recent"] and job.store.run("recent") is None
