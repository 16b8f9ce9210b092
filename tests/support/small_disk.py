"""A small filesystem of the test's own (a tmpfs with `size=`), mounted under the test's directory and
unmounted after, that the test fills up, frees, and turns read-only and back — the disk faults the stores must survive.

Mounting needs root (CAP_SYS_ADMIN); where it is refused the test is skipped, saying so in one line. Linux
refuses to remount a filesystem read-only while a file on it is open for writing ("mount point is busy"), so a
test turns the disk read-only between processes, as a disk that went read-only is met by the next process
that opens it (a worker restarted, `job resume`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

CHUNK = b"\0" * 65536


class SmallDisk:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._filler = path / "filler"

    def _mount(self, *options: str) -> None:
        subprocess.run(["mount", *options, str(self.path)], check=True, capture_output=True, text=True)

    def fill(self) -> None:
        """Take every free byte, as a log or another program would."""
        with open(self._filler, "ab") as filler:
            try:
                while True:
                    filler.write(CHUNK)
                    filler.flush()
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
        with contextlib.suppress(OSError), open(self._filler, "ab") as filler:
            # The last partial chunk: what `write` could still take, so not one free block is left.
            for size in (4096, 512, 1):
                with contextlib.suppress(OSError):
                    while True:
                        filler.write(b"\0" * size)
                        filler.flush()

    def free(self) -> None:
        """Space returns: the operator deleted what filled the disk."""
        self._filler.unlink(missing_ok=True)

    def read_only(self) -> None:
        self._mount("-o", "remount,ro")

    def writable(self) -> None:
        self._mount("-o", "remount,rw")

    def free_bytes(self) -> int:
        stats = os.statvfs(self.path)
        return stats.f_bavail * stats.f_frsize


@contextlib.contextmanager
def small_disk(path: Path, size: str = "8m") -> Iterator[SmallDisk]:
    """A tmpfs of `size` mounted at `path` (created), unmounted when the block ends."""
    path.mkdir(parents=True, exist_ok=True)
    try:
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)], capture_output=True, text=True
        )
    except FileNotFoundError:
        pytest.skip("cannot mount a small filesystem here: no `mount` command")
    if mounted.returncode != 0:
        why = (mounted.stderr.strip().splitlines() or ["mount failed"])[0]  # one line: mount adds a dmesg hint
        pytest.skip(f"cannot mount a small filesystem here (needs root): {why}")
    try:
        yield SmallDisk(path)
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(path)], capture_output=True)
        if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
            # Still busy: a process the test started has not let go of a file yet. Detached now, freed when it does.
            subprocess.run(["umount", "-l", str(path)], capture_output=True)
