"""Archives: gzip JSONL files, one record (a JSON object) per line — what retention writes before it deletes
anything, for the checkpoint baseline (`job prune`) and for Temporal runs (`starter.py prune`).

An archive is written to `<name>.partial`, fsynced, renamed into place and its directory fsynced: a file with
the final name is always complete, so a crash leaves at most a `.partial` file (which nothing reads) and the
caller, which deletes only after `write_archive` returned, has deleted nothing yet. Records are written as
they come (an iterable, not a list), so archiving many large runs does not hold them all in memory.

An archive holds decoded runs (transcripts, tool results, approvals), so it is created owner-only: the file
`0600` whatever the umask, in a directory created `0700`, as the stores are.

Read one back with `read_archive`/`iter_archive`, or `zcat FILE | jq`.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from duragent._stores.sqlite_file import private_dir

SUFFIX = ".jsonl.gz"


class ArchiveUnreadable(ValueError):
    """Not a gzip JSONL archive (or a truncated one: a `.partial` file, a copy cut short)."""


class ArchiveWriter:
    """`with ArchiveWriter(path) as out: out.write(record)`: the file appears under `path`, complete and
    durable, when the block ends normally having written a record; on any error (or a kill) nothing is
    left under `path`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.partial = path.with_name(path.name + ".partial")
        self.count = 0

    def __enter__(self) -> ArchiveWriter:
        private_dir(self.path.parent)
        # 0600 from the start (not chmod after): no moment at which another user could open it.
        descriptor = os.open(self.partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(descriptor, 0o600)  # a `.partial` left by a killed run may exist with other modes
        self._raw = os.fdopen(descriptor, "wb")  # closed in __exit__
        self._gzip = gzip.GzipFile(fileobj=self._raw, mode="wb")
        return self

    def write(self, record: dict[str, Any]) -> None:
        self._gzip.write((json.dumps(record, sort_keys=True, default=str) + "\n").encode())
        self.count += 1

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        try:
            self._gzip.close()
            if kind is None:
                self._raw.flush()
                os.fsync(self._raw.fileno())
        finally:
            self._raw.close()
            if kind is not None:
                self.partial.unlink(missing_ok=True)
        if kind is None and self.count == 0:
            self.partial.unlink(missing_ok=True)  # nothing to keep: no empty archive either
        elif kind is None:
            os.replace(self.partial, self.path)
            _fsync_directory(self.path.parent)  # the rename itself survives a power cut


def write_archive(path: Path, records: Iterable[dict[str, Any]]) -> int:
    """Write `records` to `path` durably; returns how many."""
    with ArchiveWriter(path) as out:
        for record in records:
            out.write(record)
    return out.count


def iter_archive(path: Path) -> Iterator[dict[str, Any]]:
    """The records of an archive, one at a time; `ArchiveUnreadable` naming the file when it is not one."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ArchiveUnreadable(f"{path}: line {number} is not JSON ({exc.msg})") from None
                if not isinstance(record, dict):
                    raise ArchiveUnreadable(f"{path}: line {number} is not a JSON object")
                yield record
    except (gzip.BadGzipFile, EOFError, zlib.error, UnicodeDecodeError) as exc:
        raise ArchiveUnreadable(f"{path} is not a complete gzip JSONL archive ({exc})") from None


def read_archive(path: Path) -> list[dict[str, Any]]:
    return list(iter_archive(path))


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
