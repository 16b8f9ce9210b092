"""Stopping a server process this program started: by its pid (never by name), politely first."""

from __future__ import annotations

import signal
import subprocess


def stop(process: subprocess.Popen[bytes], timeout: float) -> None:
    """SIGTERM, then SIGKILL if it has not exited within `timeout` seconds."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        kill(process)


def kill(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL: what a crash looks like."""
    if process.poll() is None:
        process.kill()
        process.wait()
