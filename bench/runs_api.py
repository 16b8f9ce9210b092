"""The runs API (`python starter.py serve`) in its own process, for a bench that drives it over HTTP as approvers
would: a free loopback port, one approver token, stopped by its pid."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx

from duragent._config.http_clients import tls_context
from duragent._config.settings import ROOT, Settings
from duragent._ops.devstack import devserver

APPROVER = "bench-approver"
TOKEN = "bench-api-token-0123456789abcdef"


def auth_headers() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}


@contextlib.asynccontextmanager
async def runs_api(settings: Settings, log: Path) -> AsyncIterator[tuple[str, int]]:
    """`python starter.py serve` on a free loopback port, for the bench's approver token: its URL and pid."""
    port = devserver.free_port()
    env = {
        "TEMPORAL_ADDRESS": settings.address,
        "TEMPORAL_NAMESPACE": settings.namespace,
        "TEMPORAL_TASK_QUEUE": settings.task_queue,
        "AGENT_API_TOKENS": f"{TOKEN}={APPROVER}:approver",
        "PYTHONUNBUFFERED": "1",
    }
    with open(log, "ab") as output:
        process = subprocess.Popen(
            [sys.executable, str(ROOT / "starter.py"), "serve", "--host", "127.0.0.1", "--port", str(port)],
            cwd=ROOT,
            env=os.environ | env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        async with httpx.AsyncClient(base_url=url, headers=auth_headers(), verify=tls_context()) as client:
            while True:
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get("/runs", params={"limit": 1})).status_code == 200:
                        break
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the runs API did not start; see {log}")
                await asyncio.sleep(0.2)
        yield url, process.pid
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
