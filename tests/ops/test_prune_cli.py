"""`starter.py archive` reading runs back and refusing what it cannot read, `prune` refusing to run from a
directory that holds no worker stores (nothing created), and the retention policy. No server needed. (Every
bad flag's one line and exit code: tests/ops/test_cli_bad_input.py.)"""

from __future__ import annotations

import asyncio
import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

import starter
from duragent._ops.retention.archive import write_archive
from duragent._ops.retention.policy import ANSWERED, Policy, find_due

RECORDS = [
    {"run_id": "billing-1", "agent": "billing", "status": "completed", "temporal_status": "completed",
     "closed_at": "2026-01-01T00:00:00+00:00", "kept_days": 30.0, "archived_at": "2026-02-01T00:00:00+00:00",
     "transcript": [{"role": "user", "content": "Settle invoice inv-9"}], "effects": [], "histories": []},
    {"run_id": "trip-2", "agent": "trip", "status": "compensation_failed", "temporal_status": "failed",
     "closed_at": "2026-01-02T00:00:00+00:00", "kept_days": 90.0, "archived_at": "2026-04-02T00:00:00+00:00",
     "failure": {"type": "CompensationFailed", "message": "not undone: ['book_hotel']"},
     "transcript": [], "effects": [], "histories": []},
]  # fmt: skip


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("AGENT_DATABASE_URL", "AGENT_LEDGER", "AGENT_CODEC_KEYS", "AGENT_CODEC_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AGENT_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")  # nothing listens: a connection attempt would fail
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        code = starter.main(list(argv))
    except SystemExit as exit:  # argparse's own refusals
        code = int(exit.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_prune_without_the_workers_stores_says_where_it_looked(data_dir, capsys) -> None:
    """A data directory with neither the ledger nor the transcripts is not the workers': archiving from it
    would archive runs without their transcripts."""
    code, _, err = run(capsys, "prune", "--yes")
    assert code == 2
    line = one_error_line(err)
    assert f"no worker stores here: neither {data_dir / 'ledger.db'} nor {data_dir / 'transcripts.db'}" in line
    assert "AGENT_DATABASE_URL" in line and not list(data_dir.iterdir())


def test_archive_list_and_show_read_a_run_back(data_dir, capsys) -> None:
    archive = data_dir / "agent-runs.jsonl.gz"
    write_archive(archive, RECORDS)
    code, out, _ = run(capsys, "archive", "list", str(archive))
    assert code == 0
    assert out.splitlines() == [
        "billing-1  billing  completed  closed 2026-01-01T00:00:00  (kept 30 days)",
        "trip-2  trip  compensation_failed  closed 2026-01-02T00:00:00  (kept 90 days)",
    ]
    code, out, _ = run(capsys, "archive", "list", str(archive), "--json")
    assert code == 0 and [r["run_id"] for r in json.loads(out)] == ["billing-1", "trip-2"]
    code, out, _ = run(capsys, "archive", "show", str(archive), "trip-2", "--json")
    assert code == 0 and json.loads(out) == RECORDS[1]
    code, out, _ = run(capsys, "archive", "show", str(archive), "trip-2")
    assert code == 0 and "failure: CompensationFailed: not undone: ['book_hotel']" in out


def test_archive_refuses_what_it_cannot_read(data_dir, capsys) -> None:
    archive = data_dir / "agent-runs.jsonl.gz"
    write_archive(archive, RECORDS)
    not_gzip = data_dir / "notes.jsonl.gz"
    not_gzip.write_text('{"run_id": "x"}\n')
    cut = data_dir / "cut.jsonl.gz"
    cut.write_bytes(archive.read_bytes()[:-20])  # a copy cut short (or a .partial file of a killed prune)
    not_objects = data_dir / "lists.jsonl.gz"
    not_objects.write_bytes(gzip.compress(b"[1, 2]\n"))
    cases = [
        (["show", str(data_dir / "missing.jsonl.gz"), "x"], f"no archive at {data_dir / 'missing.jsonl.gz'}"),
        (["show", str(not_gzip), "x"], f"{not_gzip} is not a complete gzip JSONL archive"),
        (["list", str(cut)], f"{cut} is not a complete gzip JSONL archive"),
        (["list", str(not_objects)], f"{not_objects}: line 1 is not a JSON object"),
        (["show", str(archive), "nope"], f"run 'nope' is not in {archive} (it holds billing-1, trip-2)"),
        (["show", str(archive)], "archive show needs the run id"),
        (["list", str(archive), "billing-1"], "archive list takes only the file"),
    ]
    for argv, expected in cases:
        code, out, err = run(capsys, "archive", *argv)
        assert code == 2 and out == "", argv
        assert expected in one_error_line(err), argv


def test_the_policy_keeps_only_answered_or_undone_runs_the_shorter_time() -> None:
    policy = Policy(completed_days=30, failed_days=90)
    assert [policy.days_for("completed", status) for status in ("completed", "compensated", "abandoned")] == [30] * 3
    # A run that failed, was terminated, timed out or cancelled — or ended oddly — gets the longer time.
    assert policy.days_for("completed", "running") == 90 and policy.days_for("completed", None) == 90
    for temporal_status, status in [
        ("failed", "compensation_failed"),
        ("failed", "running"),
        ("terminated", "awaiting_approval"),
        ("timed_out", None),
        ("canceled", "compensating"),
    ]:
        assert policy.days_for(temporal_status, status) == 90
    with pytest.raises(ValueError, match="never negative"):
        Policy(completed_days=-1)


@pytest.mark.parametrize("temporal_status", ["terminated", "canceled", "failed", "timed_out"])
def test_a_run_temporal_did_not_close_as_completed_is_kept_the_longer_time_whatever_it_last_said(
    temporal_status: str,
) -> None:
    """A run cancelled or terminated after it published `completed` (while its handlers finished, say) did not
    answer as far as Temporal knows: it is kept for postmortems like any other failure."""
    policy = Policy(completed_days=30, failed_days=90)
    assert [policy.days_for(temporal_status, status) for status in ANSWERED] == [90] * len(ANSWERED)


@pytest.mark.parametrize("queue", ['agents" OR WorkflowType != "x', "agents\\"])
def test_a_task_queue_that_would_change_the_visibility_query_is_refused(queue: str) -> None:
    """The queue is spliced into prune's visibility query: a quote or backslash in it would change the query
    (`TaskQueue = "agents" OR WorkflowType != "x"` lists every workflow of the namespace)."""
    with pytest.raises(ValueError, match="cannot be put in a visibility query"):
        asyncio.run(find_due(None, datetime.now(UTC), Policy(), task_queue=queue))  # type: ignore[arg-type]
