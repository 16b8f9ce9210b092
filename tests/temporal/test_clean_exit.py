"""Client scripts exit cleanly. With `asyncio.run` alone a short script that used a Temporal client
aborts at interpreter exit now and then (exit 134 or 139: sdk-python issue 300; duragent/_clean_exit.py
says why); the documented patterns end with `duragent.run(main())` instead. Each is run many times in
a row against a real dev server, and every exit must be 0: the client script of docs/approvals.md (lists pending
approvals) 50 times, the README's whole program (a worker, a run, an approval) 20 times. Those full counts are a
statistical proof of minutes of CPU, so they run under `make test-slow` (`-m slow`); `make test` runs each a
bounded number of times (at the abort rate measured without the fix, 3 in 20 to a quarter of runs, 12 script runs
all exit 0 by chance 3-14 % of the time). The mechanism itself is proven deterministically, by counting threads, in
test_runtimes_released.py."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from duragent._stores.ledger import EffectsLedger
from duragent.testing import agent_server
from examples.options import DemoDeps
from examples.refund import agent as refund_agent
from tests.support.docs import code_block_after
from tests.temporal.test_own_agent import readme_snippet, service  # noqa: F401 (the orders service fixture)

pytestmark = pytest.mark.system

# (bounded, full): the bounded counts in `make test`, the full ones under `-m slow`.
SCRIPT_RUNS = (12, 50)
PROGRAM_RUNS = (6, 20)


def counts(runs: tuple[int, int]) -> list[object]:
    bounded, full = runs
    return [pytest.param(bounded, id=f"{bounded}x"), pytest.param(full, id=f"{full}x", marks=pytest.mark.slow)]


def run_many(script: Path, times: int, env: dict[str, str]) -> list[subprocess.CompletedProcess[str]]:
    """`python script` `times` times, two at a time (as a user's cron or shell loop would, on a busy host)."""

    def once(_: int) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(once, range(times)))


def exit_codes(done: list[subprocess.CompletedProcess[str]]) -> Counter[int]:
    return Counter(d.returncode for d in done)


@pytest.mark.parametrize("times", counts(SCRIPT_RUNS))
async def test_the_documented_client_script_exits_0_every_time(dev_env, tmp_path, times):
    script = tmp_path / "pending.py"
    script.write_text(code_block_after("docs/approvals.md", "From a script of your own"))
    deps = DemoDeps(ledger=EffectsLedger(tmp_path / "ledger.db"))
    async with agent_server([refund_agent], deps=deps, env=dev_env) as agents:
        run = await agents.start(refund_agent)
        [waiting] = await run.wait_for_approval()  # so that the script has something to list
        # The script's AgentClient lists the approvals on the task queue its plugin read (TEMPORAL_TASK_QUEUE).
        env = os.environ | {"TEMPORAL_ADDRESS": agents.address, "TEMPORAL_TASK_QUEUE": agents.task_queue}
        done = run_many(script, times, env)
        await run.cancel()
    assert exit_codes(done) == {0: times}, [d.stderr[-300:] for d in done if d.returncode]
    assert all(f"{run.run_id} {waiting.call_id} refund" in d.stdout for d in done)


@pytest.mark.parametrize("times", counts(PROGRAM_RUNS))
def test_the_readmes_program_exits_0_every_time(dev_env, tmp_path, service, times):  # noqa: F811
    script = tmp_path / "program.py"
    script.write_text(readme_snippet())
    env = os.environ | {
        "TEMPORAL_ADDRESS": dev_env.client.service_client.config.target_host,
        "ORDERS_URL": service.url,
        "AGENT_DATA_DIR": str(tmp_path),
    }
    done = run_many(script, times, env)
    assert exit_codes(done) == {0: times}, [d.stderr[-300:] for d in done if d.returncode]
    assert all(d.stdout.strip().splitlines()[-1] == "Refunded A-1." for d in done)
    assert [r["order_id"] for r in service.refunds()] == ["A-1"] * times  # one refund per run
