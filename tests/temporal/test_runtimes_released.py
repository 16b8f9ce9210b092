"""`duragent.run` (duragent/_clean_exit.py): once a program is done with its clients, no Temporal
runtime outlives it — the default one (what `quiet_core_logs` installs for the command lines) and one built
for a worker (`worker_runtime`) alike — so no SDK thread is left to wake during interpreter shutdown. Checked
by reference and by counting the process's native threads, not by timing (test_clean_exit.py runs the
scripts themselves many times); each case in a process of its own, as a script is."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from duragent._config.settings import ROOT

# Processes of its own (servers, command lines, Python interpreters): tests/support/cost_markers.py.
pytestmark = pytest.mark.system

PROGRAM = """
import json, os, sys, threading, time, weakref
import temporalio.runtime
from temporalio.api.workflowservice.v1 import GetSystemInfoRequest
from temporalio.client import Client
from duragent._config.observability import quiet_core_logs, worker_runtime
from duragent import DurableAgentsPlugin, run


def native_threads():  # threads Python does not know of: the runtimes' Tokio pools
    return len(os.listdir("/proc/self/task")) - threading.active_count()

case, address = sys.argv[1], sys.argv[2]
before = native_threads()
runtimes, kept = [], []
if case == "default":
    quiet_core_logs()  # what starter.py does before its first client
    runtimes.append(weakref.ref(temporalio.runtime.Runtime.default()))

async def main():
    runtime = None
    if case in ("worker", "kept"):
        runtime = worker_runtime()  # what worker.py builds
        runtimes.append(weakref.ref(runtime))
    client = await Client.connect(address, runtime=runtime, plugins=[DurableAgentsPlugin()])
    if case == "kept":
        kept.append(client)  # a client held by a global
    await client.workflow_service.get_system_info(GetSystemInfoRequest())
    return native_threads()

during = run(main())
after = native_threads()
# A thread already joined leaves /proc/self/task when the kernel finishes its exit, which on a machine loaded
# past its cores came after this count (once in eight full runs on 2026-12-02); a pool never shut down stays.
deadline = time.monotonic() + 5
while case != "kept" and after > before and time.monotonic() < deadline:
    time.sleep(0.01)
    after = native_threads()
seen = {"released": [r() is None for r in runtimes], "before": before, "during": during, "after": after}
print(json.dumps(seen))
"""


def released(case: str, address: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, case, address],
        cwd=ROOT,
        env=os.environ | {"PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", ["default", "worker"])
def test_run_releases_the_runtime_and_joins_its_threads(skipping_env, case):
    seen = released(case, skipping_env.client.service_client.config.target_host)
    assert seen["released"] == [True]
    assert seen["during"] > seen["before"]  # the runtime's pool was up ...
    assert seen["after"] <= seen["before"]  # ... and is gone


def test_a_client_a_global_still_holds_keeps_its_runtime(skipping_env):
    """The limit the README states: keep clients inside `main`."""
    seen = released("kept", skipping_env.client.service_client.config.target_host)
    assert seen["released"] == [False] and seen["after"] > seen["before"]
