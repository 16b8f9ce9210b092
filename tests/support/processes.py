"""What a command started, read from /proc: for tests that check nothing outlives a stopped command; and
running a command that starts processes of its own so that an interrupted test stops them too."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from duragent._config.settings import ROOT

# How long an interrupted command gets to stop what it started (a bench's dev servers and workers) before SIGKILL.
GRACE = 30.0


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text[text.rindex(")") + 2 :].split()  # the command name may hold spaces and parentheses
    return fields[0], int(fields[1])


def alive(pid: int) -> bool:
    """Running (a zombie has stopped; only its exit status is left for a parent to collect)."""
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z"


def descendants(pid: int) -> set[int]:
    """Every living process below `pid` right now (children in their own sessions included)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None and stat[0] != "Z":
            parents[int(entry.name)] = stat[1]
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def wait_gone(pids: Iterable[int], timeout: float = 30.0) -> set[int]:
    """The pids still alive after waiting up to `timeout` for them to go."""
    left = set(pids)
    deadline = time.monotonic() + timeout
    while left and time.monotonic() < deadline:
        left = {pid for pid in left if alive(pid)}
        time.sleep(0.1)
    return {pid for pid in left if alive(pid)}


def kill_all(pids: Iterable[int]) -> None:
    """A failed test's cleanup: SIGKILL these pids (ours, by number; never by name)."""
    for pid in pids:
        if alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


class Command:
    """A command line under test, its output collected line by line."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, *argv],
            cwd=ROOT,
            env=os.environ | env | {"PYTHONUNBUFFERED": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self.seen: set[int] = set()  # every process ever seen below it
        self._pumps = [
            threading.Thread(target=self._pump, args=(stream, lines), daemon=True)
            for stream, lines in ((self.process.stdout, self.out), (self.process.stderr, self.err))
        ]
        for pump in self._pumps:
            pump.start()

    def _pump(self, stream: object, lines: list[str]) -> None:
        for line in stream:  # type: ignore[attr-defined]
            lines.append(line)

    def wait_for(self, text: str, timeout: float = 120.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.seen |= descendants(self.process.pid)
            for line in self.out:
                if text in line:
                    return line
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(f"no {text!r} in the output:\n{''.join(self.out)}{''.join(self.err)}")

    def wait(self, timeout: float = 90.0) -> int:
        """The exit code, once all output has been read."""
        code = self.process.wait(timeout)
        for pump in self._pumps:
            pump.join(10)
        return code

    def signal_and_wait(self, sig: int, timeout: float = 90.0) -> int:
        self.seen |= descendants(self.process.pid)
        self.process.send_signal(sig)
        return self.wait(timeout)

    def cleanup(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        kill_all(self.seen)


def run_to_end(
    argv: Sequence[str], *, timeout: float, cwd: Path = ROOT, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`subprocess.run(argv, capture_output=True, text=True)` for a command that starts processes in sessions of
    their own (dev servers, workers: the bench, a user's test run). When the test is interrupted (Ctrl-C, or the
    session's SIGTERM or SIGHUP: tests/conftest.py) or the command outlives `timeout`, it gets SIGTERM and `GRACE`
    seconds to stop them, as a user's Ctrl-C gives it, and only then SIGKILL: `subprocess.run` SIGKILLs it a
    quarter of a second after an interrupt, and a bench's two dev servers and three workers were left running."""
    with subprocess.Popen(
        list(argv), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        try:
            out, err = process.communicate(timeout=timeout)
        except (KeyboardInterrupt, subprocess.TimeoutExpired):
            stop_gracefully(process)
            raise
    return subprocess.CompletedProcess(list(argv), process.returncode, out, err)


def stop_gracefully(process: subprocess.Popen[str]) -> None:
    """SIGTERM, up to `GRACE` seconds for the process to stop what it started, then SIGKILL."""
    if process.poll() is None:
        process.terminate()
    try:
        process.communicate(timeout=GRACE)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()


async def run_to_end_async(
    argv: Sequence[str], *, timeout: float, cwd: Path = ROOT, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    """`run_to_end` for async tests: (exit code, stdout, stderr). Cancelled (the test interrupted, its loop
    closing) or past `timeout`, the command gets SIGTERM and `GRACE` seconds before SIGKILL; asyncio's subprocess
    transport would otherwise SIGKILL it when the loop closes."""
    process = await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout)
    except BaseException:
        if process.returncode is None:
            process.terminate()
        try:
            await asyncio.wait_for(process.wait(), GRACE)
        except TimeoutError:
            process.kill()
            await process.wait()
        raise
    return process.returncode or 0, out.decode(), err.decode()
