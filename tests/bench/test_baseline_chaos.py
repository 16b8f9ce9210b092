"""Repeated kill -9 of the checkpoint runner at arbitrary moments: every record migrated exactly once,
and the transcript is still the in-process agent's. The default run is bounded; `-m slow` goes wide."""

from __future__ import annotations

import dataclasses
import random
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentic.agent_set import AgentSet
from duragent._baseline.runner import transcript
from duragent._stores.ledger import EffectsLedger
from examples.options import DemoDeps
from tests.conftest import agent_named
from tests.support.baseline_helpers import Job, eventually, open_job

# Processes of its own: `job` command lines, SIGKILLed.
pytestmark = pytest.mark.system


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Job]:
    yield from open_job(tmp_path)


def survive_kills(job: Job, records: int, kill_after_effects: list[int], delay: float = 0.2) -> None:
    options = (
        "--option",
        f"records={records}",
        "--option",
        f"step_delay={delay}",
        "--lease-seconds",
        "0.5",
        "--max-attempts",
        "50",
    )
    worker = job.spawn("run", "--id", "chaos", "--agent", "migration", *options)
    for target in kill_after_effects:
        eventually(lambda t=target: len(job.effects("chaos")) >= t, what=f"{target} effects")
        job.kill(worker)
        assert worker.returncode == -signal.SIGKILL
        job.wait_lease_expired("chaos")
        worker = job.spawn("resume", "--id", "chaos")
    _, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err

    effects = job.effects("chaos")
    assert [e.args["record"] for e in effects] == [f"rec-{n}" for n in range(1, records + 1)]
    assert len({e.key for e in effects}) == records
    assert job.status("chaos")["attempts"] == len(kill_after_effects) + 1
    # The same agent in-process, on a ledger of its own, gives the transcript the store rebuilds.
    migration = agent_named("migration")
    local = dataclasses.replace(migration, deps=DemoDeps(EffectsLedger(job.tmp / "local.db")))
    expected = local.run(run_id="chaos", options={"records": records})
    served = AgentSet([migration], DemoDeps(EffectsLedger(job.ledger_path)))
    assert transcript(job.store, served, "chaos").messages == expected.messages


def test_survives_two_kills(job: Job) -> None:
    survive_kills(job, records=4, kill_after_effects=[1, 2])


@pytest.mark.slow
def test_survives_many_kills_at_random_moments(job: Job) -> None:
    rng = random.Random(4)
    records = 12
    survive_kills(job, records, sorted(rng.sample(range(1, records - 1), 8)), delay=0.3)
