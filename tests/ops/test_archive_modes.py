"""Prune archives hold decoded runs (transcripts, tool results, approvals), so they are owner-only whatever the
umask: the file 0600, in a directory created 0700 — as the stores are. Both engines' prunes write
through `ArchiveWriter`; `job prune` is run as an operator runs it, with `--archive-dir` outside the data
directory's protection."""

from __future__ import annotations

import gzip
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from duragent._ops.retention.archive import ArchiveWriter, read_archive
from tests.support.baseline_helpers import Job, open_job


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Job]:
    yield from open_job(tmp_path)


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The common default: files 0644 and directories 0755 unless the program says otherwise."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_job_prune_writes_an_owner_only_archive_in_an_owner_only_directory(
    job: Job, tmp_path: Path, open_umask: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert job.cli("run", "--id", "ok", "--scenario", "billing") == 0
    shared = tmp_path / "shared"  # readable by everyone, like /srv or /tmp
    shared.mkdir(mode=0o755)
    archive_dir = shared / "archives" / "agents"
    capsys.readouterr()
    assert job.cli("prune", "--all", "--yes", "--json", "--archive-dir", str(archive_dir)) == 0
    archive = Path(json.loads(capsys.readouterr().out)["archive"])
    assert archive.parent == archive_dir and [r["run"]["run_id"] for r in read_archive(archive)] == ["ok"]
    assert mode(archive) == 0o600
    assert mode(archive_dir) == mode(archive_dir.parent) == 0o700  # every directory it made
    assert mode(shared) == 0o755, "a directory that existed is the operator's, left alone"


def test_a_partial_file_a_killed_prune_left_readable_is_tightened(tmp_path: Path, open_umask: None) -> None:
    path = tmp_path / "agent-runs-x.jsonl.gz"
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(b"left by a killed pass")
    partial.chmod(0o644)
    with ArchiveWriter(path) as out:
        assert mode(partial) == 0o600
        out.write({"run_id": "r"})
    assert mode(path) == 0o600 and not partial.exists()
    with gzip.open(path, "rt") as lines:
        assert [json.loads(line) for line in lines] == [{"run_id": "r"}]
