"""A worker in its own process (`python worker.py`), so it can be killed with SIGKILL like a real crash.

Used by the demo, the crash tests and the chaos benchmark; stopped by pid, never by name.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from duragent._config.settings import CHECKOUT, Settings


class WorkerProcess:
    def __init__(
        self,
        settings: Settings,
        *,
        log: Path | None = None,
        extra_env: dict[str, str] | None = None,
        command: list[str] | None = None,
    ) -> None:
        """`command` runs another worker program speaking the same contract (settings from the environment,
        a `worker ready` line, SIGTERM to drain) — e.g. the benchmark's bare-floor worker."""
        env = (
            os.environ
            | {
                "TEMPORAL_ADDRESS": settings.address,
                "TEMPORAL_NAMESPACE": settings.namespace,
                "TEMPORAL_TASK_QUEUE": settings.task_queue,
                "AGENT_LEDGER": str(settings.ledger_path),
                "AGENT_DATA_DIR": str(settings.data_dir),
                "PYTHONUNBUFFERED": "1",
            }
            | ({"AGENT_DATABASE_URL": settings.database_url} if settings.database_url else {})
            | (extra_env or {})
        )
        if log:
            log.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(log, "ab") if log else None  # noqa: SIM115 - lives as long as the process
        self.process = subprocess.Popen(
            command or [sys.executable, "-m", "duragent._ops.cli.worker"],  # what `python worker.py` runs
            cwd=CHECKOUT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._ready = threading.Event()
        self.output: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    @property
    def pid(self) -> int:
        return self.process.pid

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            line = raw.decode(errors="replace")
            self.output.append(line)
            if self._log:
                self._log.write(raw)
                self._log.flush()
            if line.startswith("worker ready"):
                self._ready.set()

    def wait_ready(self, timeout: float = 60.0) -> WorkerProcess:
        deadline = time.monotonic() + timeout
        while not self._ready.wait(0.2):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the worker did not start:\n" + "".join(self.output[-30:]))
        return self

    def kill(self) -> None:
        """SIGKILL: no cleanup, no graceful shutdown — a real crash."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self, timeout: float = 30.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.process.returncode
