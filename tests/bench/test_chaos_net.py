"""`python -m bench chaos-net --short` as a person runs it: the network fault matrix on a lab of namespaces made for
the run (a worker cut off from the Temporal frontend mid tool call, a worker cut off from PostgreSQL mid append,
the tool provider cut off mid request, 200 ms and 5 % loss on every link), every fault clean — and nothing of the
lab left behind. The long matrix is `make chaos`'s. Skipped, with one line, where network namespaces cannot be made
(not root, no `ip`)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.chaos.net_command import LAST_LINE
from duragent._ops.devstack.netlab import PREFIX, why_unavailable
from tests.support.postgres_server import binaries
from tests.support.processes import run_to_end, stop_gracefully

# Processes of its own: a dev server, PostgreSQL, the orders service and two workers, in namespaces.
pytestmark = [pytest.mark.system, pytest.mark.postgres]

NAMES = ["frontend-cut", "postgres-cut", "provider-cut", "slow-lossy"]
FAULTS = len(NAMES)
GATED_PER_FAULT = 2  # the refund demo run and the orders run each wait for one approval


def namespaces() -> set[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    return {name for name in listed if name.startswith(PREFIX)}


def lab_devices() -> set[str]:
    listed = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return {line.split(":")[1].strip().split("@")[0] for line in listed.splitlines() if ": nf" in line}


def test_the_short_network_fault_matrix_is_clean_and_leaves_nothing(tmp_path: Path):
    reason = why_unavailable() or (None if binaries() else "no PostgreSQL binaries (apt-get install postgresql)")
    if reason:
        pytest.skip(f"network fault matrix: {reason}")
    before_namespaces, before_devices = namespaces(), lab_devices()
    done = run_to_end(
        [sys.executable, "-m", "bench", "chaos-net", "--short", "--out", str(tmp_path)],
        timeout=150,
        env=os.environ | {"TMPDIR": str(tmp_path)},  # a failed run keeps its scratch directory: the test's
    )
    lines = done.stdout.strip().splitlines()
    assert lines, done.stderr[-3000:]
    match = LAST_LINE.match(lines[-1])
    assert match, f"last line {lines[-1]!r} is not the summary:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    result = {k: int(v) for k, v in match.groupdict().items()}
    assert result["faults"] == FAULTS and result["clean"] == FAULTS, done.stdout[-3000:]
    assert result["lost"] == 0 and result["duplicate_effects"] == 0 and result["missed_deadlines"] == 0
    assert result["approvals"] == FAULTS * GATED_PER_FAULT == result["honoured"], done.stdout[-3000:]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # One row per fault, printed: its lost / duplicate / approvals-honoured counts.
    for fault in NAMES:
        assert any(line.startswith(fault) and line.rstrip().split()[-2] == "ok" for line in lines), fault
    rows = json.loads((tmp_path / "chaos-net.json").read_text())["rows"]
    assert [row["fault"] for row in rows] == NAMES
    for row in rows:  # every run of the mix ended answered or compensated (1 in 5 demo runs is the failing trip)
        assert row["answered"] + row["compensated"] == row["runs"] and row["compensated"] == 1, row
    # The cut really came mid-call and mid-append (else the fault itself reports a failure, above) ...
    assert "cut off from temporal" in done.stdout and "in the middle of an append" in done.stdout
    assert re.search(r"the provider cut off from the workers at a refund request \(\['w\d>provider'\]\)", done.stdout)
    # ... and the lab is gone: its namespaces, its devices, its scratch directory.
    assert namespaces() <= before_namespaces
    assert lab_devices() <= before_devices
    assert not list(tmp_path.glob("chaos-net-*"))


def test_a_matrix_stopped_by_sigterm_leaves_nothing_running(tmp_path: Path):
    """SIGTERM once the lab's servers and workers are up: every process that ran in its namespaces is gone, and so
    are the namespaces and devices (the command cancels its work where it awaits; the finallys stop all by pid)."""
    reason = why_unavailable() or (None if binaries() else "no PostgreSQL binaries (apt-get install postgresql)")
    if reason:
        pytest.skip(f"network fault matrix: {reason}")
    before_devices = lab_devices()
    command = [sys.executable, "-m", "bench", "chaos-net", "--short", "--out", str(tmp_path)]
    with subprocess.Popen(
        command, env=os.environ | {"TMPDIR": str(tmp_path)}, stdout=subprocess.PIPE, text=True
    ) as process:
        try:
            assert process.stdout is not None
            for line in process.stdout:
                if line.startswith("fault frontend-cut"):  # the lab is up, with every server and worker in it
                    break
            ours = [name for name in namespaces() if name.startswith(f"{PREFIX}{process.pid}-")]
            assert len(ours) == 5, ours
            pids = {
                int(pid)
                for name in ours
                for pid in subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True).stdout.split()
            }
            assert len(pids) >= 5  # the dev server, PostgreSQL's processes, the orders service, two workers
            process.terminate()
            process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                stop_gracefully(process)
    assert not [name for name in namespaces() if name.startswith(f"{PREFIX}{process.pid}-")]
    assert lab_devices() <= before_devices
    assert not [pid for pid in pids if alive(pid)]


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper is not)."""
    try:
        return not Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].startswith("Z")
    except FileNotFoundError:
        return False
