"""Helpers for the baseline tests: real SQLite files, the real `job` command line — in this process where the
process boundary does not matter, a subprocess where it does (a crash, a kill, a server) — and polling instead
of sleeps."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentic.agent_set import AgentSet
from duragent._baseline.crash import ENV as CRASH_ENV
from duragent._baseline.status import run_status
from duragent._baseline.store import StepRow, Store
from duragent._config.settings import ROOT
from duragent._ops.cli import job as cli
from duragent._stores.ledger import Effect, EffectsLedger
from tests.support.in_process import run_main


def eventually(check: Callable[[], Any], timeout: float = 30.0, what: str = "", interval: float = 0.05) -> Any:
    """Poll `check` until it returns something truthy; return that."""
    deadline = time.monotonic() + timeout
    while True:
        outcome = check()
        if outcome:
            return outcome
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or check}")
        time.sleep(interval)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Job:
    """One checkpoint store and one ledger in tmp_path, and the `job` command line pointed at them."""

    tmp: Path
    processes: list[subprocess.Popen[str]] = field(default_factory=list)
    extra_env: dict[str, str] = field(default_factory=dict)  # e.g. AGENT_API_TOKENS for `job serve`
    _store: Store | None = None

    @property
    def db(self) -> Path:
        return self.tmp / "baseline.db"

    @property
    def ledger_path(self) -> Path:
        return self.tmp / "ledger.db"

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store(self.db)
        return self._store

    def argv(self, command: str, *args: str) -> list[str]:
        return [
            sys.executable,
            "-m",
            "duragent._ops.cli.job",
            command,
            *args,
            "--db",
            str(self.db),
            "--ledger",
            str(self.ledger_path),
        ]

    def env(self, crash: str | None = None, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in (CRASH_ENV, "AGENT_LEDGER")}
        env["PYTHONUNBUFFERED"] = "1"
        if crash:
            env[CRASH_ENV] = crash
        return env | self.extra_env | extra

    def spawn(self, command: str, *args: str, crash: str | None = None) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            self.argv(command, *args),
            cwd=ROOT,
            env=self.env(crash),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.processes.append(process)
        return process

    def run(
        self, command: str, *args: str, crash: str | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """One `job` command to its end: its exit code and what it printed. A command told to crash (it kills
        its own process) runs as `python -m duragent._ops.cli.job`; any other runs `main` in this process,
        with the same environment and arguments: a subprocess costs about a second of CPU, mostly imports, and
        `make test` ran about 180 of them. The process path stays covered by every `spawn` (the crash, kill,
        lease and `serve` tests), the installed script's test (tests/baseline/test_baseline_cli.py) and the
        spawned bad-input cases (tests/ops/test_cli_bad_input.py). `timeout` bounds a subprocess; in this process
        pytest-timeout bounds the command with its test."""
        argv = self.argv(command, *args)
        if crash is not None:
            return subprocess.run(argv, cwd=ROOT, env=self.env(crash), capture_output=True, text=True, timeout=timeout)
        code, out, err = run_main(cli.main, argv[3:], self.env())
        return subprocess.CompletedProcess(argv, code, out, err)

    def cli(self, command: str, *args: str) -> int:
        """The command line in this process: for quick commands whose process boundary does not matter."""
        return cli.main([command, *args, "--db", str(self.db), "--ledger", str(self.ledger_path)])

    def status(self, run_id: str) -> dict[str, Any]:
        return run_status(self.store, run_id)

    def steps(self, run_id: str) -> list[StepRow]:
        return self.store.steps(run_id)

    def effects(self, run_id: str) -> list[Effect]:
        return EffectsLedger(self.ledger_path).effects(run_id) if self.ledger_path.exists() else []

    def wait_lease_expired(self, run_id: str, timeout: float = 20.0) -> None:
        eventually(lambda: not self.status(run_id)["lease"]["live"], timeout, f"{run_id}'s lease to expire")

    def kill(self, process: subprocess.Popen[str]) -> None:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)

    def close(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    stream.close()
        if self._store is not None:
            self._store.close()


def open_job(tmp_path: Path) -> Iterator[Job]:
    """Body of each module's `job` fixture (a fixture imported across modules trips the linters)."""
    j = Job(tmp_path)
    try:
        yield j
    finally:
        j.close()


def finish(process: subprocess.Popen[str], timeout: float = 60) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def one_line_error(stderr: str) -> str:
    """Errors are one line, never a traceback."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def agents_recording_to(ledger: EffectsLedger) -> AgentSet:
    """The test agents (demo and tests/support/agents_for_tests.py) as a `job` process serves them, their tools
    recording into `ledger`."""
    from examples.options import DemoDeps
    from tests.conftest import TEST_AGENTS

    return AgentSet(TEST_AGENTS, DemoDeps(ledger))
