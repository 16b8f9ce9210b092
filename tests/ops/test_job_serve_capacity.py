"""`job serve` starts a worker process per run, and a refund waiting for approval keeps its process for up to a
day (about 80 MB): so the server drives at most `--max-runs` at once. An approver who floods
`POST /runs` gets 429 with `Retry-After` past the cap, nothing recorded or started; a slot freed by a run that
ended is used again. Real server process, real HTTP, real worker processes counted in /proc."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from duragent._config.http_clients import tls_context
from tests.support.baseline_helpers import Job, eventually, free_port, open_job

# Processes of its own (servers, command lines, Python interpreters): tests/support/cost_markers.py.
pytestmark = pytest.mark.system


APPROVER = "approver-token-0123456789abcdef"


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Job]:
    yield from open_job(tmp_path)


def run_workers(pid: int) -> list[int]:
    """The live `job resume` processes `pid` started: one per run it drives."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if int(fields[1]) == pid and fields[0] != "Z" and "duragent._ops.cli.job resume" in command:
            found.append(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_job_serve_runs_at_most_max_runs_worker_processes(job: Job) -> None:
    job.extra_env["AGENT_API_TOKENS"] = f"{APPROVER}=maria:approver"
    port = free_port()
    server = job.spawn("serve", "--port", str(port), "--max-runs", "2")
    headers = {"Authorization": f"Bearer {APPROVER}"}
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30, headers=headers, verify=tls_context()) as api:

        def ready() -> bool:
            assert server.poll() is None, server.stderr.read() if server.stderr else ""
            try:
                return api.get("/runs/none").status_code == 404
            except httpx.TransportError:
                return False

        eventually(ready, what="job serve")
        # The flood, all at once: refunds, each of which waits for an approval in its own worker process.
        with ThreadPoolExecutor(4) as pool:
            answers = list(
                pool.map(lambda n: api.post("/runs", json={"agent": "refund", "run_id": f"dos-{n}"}), range(4))
            )
        started = sorted(r.json()["run_id"] for r in answers if r.status_code == 201)
        refused = [r for r in answers if r.status_code == 429]
        assert len(started) == 2 and len(refused) == 2, [(r.status_code, r.text) for r in answers]
        for response in refused:
            assert response.headers["retry-after"] == "30"
            assert (
                "already runs 2 runs" in response.json()["error"] and "nothing was started" in response.json()["error"]
            )
        for n in range(4):
            run_id = f"dos-{n}"
            assert api.get(f"/runs/{run_id}").status_code == (200 if run_id in started else 404)  # nothing recorded

        eventually(
            lambda: all(api.get(f"/runs/{r}").json()["status"] == "awaiting_approval" for r in started),
            what="the waits",
        )
        workers = run_workers(server.pid)
        assert len(workers) == 2, workers
        assert api.post("/runs", json={"agent": "refund", "run_id": "dos-late"}).status_code == 429

        # A run that ends gives its slot back.
        assert api.post(f"/runs/{started[0]}/cancel", json={}).status_code == 202
        # Exited, by the pids counted above: a process still tearing down can read an empty command line while
        # the server cannot reap it yet.
        eventually(lambda: len([pid for pid in workers if alive(pid)]) == 1, what="its worker's exit")
        assert api.post("/runs", json={"agent": "refund", "run_id": "dos-late"}).status_code == 201
        workers = run_workers(server.pid)
        assert len(workers) == 2
    server.terminate()
    server.wait(timeout=30)
    eventually(lambda: not [pid for pid in workers if alive(pid)], what="the workers stopped with the server")
