"""The checkpoint runner's lease rules (`duragent._baseline.lease`), in-process on a real SQLite store: who may take a
run over, when, and what a worker that lost its lease can still do. (tests/baseline/test_baseline_lease.py shows them
with real `job` processes, killed and racing.)"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from duragent._baseline import jobs
from duragent._baseline.errors import DeadLettered, LeaseHeld, LeaseLost, RunNotResumable, UnknownRun
from duragent._baseline.lease import LeaseKeeper, acquire, release, renew
from duragent._baseline.options import RunOptions
from duragent._baseline.store import Store
from duragent._stores.ledger import EffectsLedger
from tests.support.baseline_helpers import agents_recording_to, eventually


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    store = Store(tmp_path / "baseline.db")
    jobs.start(store, agents_recording_to(EffectsLedger(tmp_path / "ledger.db")), "r1", "billing", RunOptions())
    yield store
    store.close()


def reopen(store: Store, owner: str | None, expires: float, attempts: int = 1) -> None:
    """As if the run were still active, held by `owner` until `expires` (epoch seconds)."""
    with store.transaction() as db:
        db.execute(
            "UPDATE runs SET status = 'running', lease_owner = ?, lease_expires = ?, attempts = ? WHERE run_id = 'r1'",
            (owner, expires, attempts),
        )


def test_a_live_lease_is_not_taken_over_and_an_expired_one_is(store: Store) -> None:
    reopen(store, "a", time.time() + 60)
    with pytest.raises(LeaseHeld, match="held by a until"):
        acquire(store, "r1", "b", lease_seconds=30, max_attempts=5)
    reopen(store, "a", time.time() - 1)
    row = acquire(store, "r1", "b", lease_seconds=30, max_attempts=5)
    assert row.lease_owner == "b" and row.attempts == 2 and row.lease_expires > time.time() + 25


def test_a_released_lease_is_taken_at_once(store: Store) -> None:
    reopen(store, "a", time.time() + 60)
    release(store, "r1", "someone-else")  # only the owner releases
    assert store.require("r1").lease_owner == "a"
    release(store, "r1", "a")
    assert acquire(store, "r1", "b", lease_seconds=30, max_attempts=5).lease_owner == "b"


def test_unknown_and_finished_runs_are_refused_by_name(store: Store) -> None:
    with pytest.raises(UnknownRun, match="unknown run id 'nope'"):
        acquire(store, "nope", "b", lease_seconds=30, max_attempts=5)
    with pytest.raises(RunNotResumable, match="already ended \\(completed\\)"):
        acquire(store, "r1", "b", lease_seconds=30, max_attempts=5)


def test_a_run_taken_over_too_often_is_dead_lettered(store: Store) -> None:
    reopen(store, None, 0, attempts=4)
    acquire(store, "r1", "w4", lease_seconds=30, max_attempts=5)  # the fifth worker may still try
    reopen(store, None, 0, attempts=5)
    with pytest.raises(DeadLettered, match="5 workers took this run"):
        acquire(store, "r1", "w5", lease_seconds=30, max_attempts=5)
    assert store.require("r1").status == "dead_letter"


def test_renewal_extends_only_the_owners_lease(store: Store) -> None:
    reopen(store, "a", time.time() + 1)
    assert renew(store, "r1", "a", lease_seconds=60) is True
    assert store.require("r1").lease_expires > time.time() + 50
    assert renew(store, "r1", "b", lease_seconds=600) is False


def test_a_keeper_that_lost_its_lease_says_so(store: Store) -> None:
    reopen(store, "a", time.time() + 0.3)
    with LeaseKeeper(store, "r1", "a", lease_seconds=0.3) as keeper:
        keeper.check()  # still ours
        reopen(store, "b", time.time() + 60)  # taken over
        eventually(keeper.lost.is_set, what="the keeper to notice")
        with pytest.raises(LeaseLost, match="lease was taken over"):
            keeper.check()
    with pytest.raises(LeaseLost):  # and the store refuses its writes
        store.set_status("r1", "a", "running")


def test_a_run_nobody_holds_at_its_attempt_limit_is_dead_lettered_not_reported_held(store: Store) -> None:
    reopen(store, None, time.time() + 60, attempts=5)
    with pytest.raises(DeadLettered):
        acquire(store, "r1", "w6", lease_seconds=30, max_attempts=5)
    row = store.require("r1")
    assert (row.progress.step, row.progress.label) == (0, "dead letter")


def test_a_held_lease_says_how_long_it_has_left(store: Store) -> None:
    reopen(store, "a", time.time() + 60)
    with pytest.raises(LeaseHeld) as held:
        acquire(store, "r1", "b", lease_seconds=30, max_attempts=5)
    left = float(str(held.value).split("(")[1].split("s left")[0])
    assert 50 < left <= 60


def test_a_keeper_renews_while_it_owns_the_lease_and_never_says_it_lost_it(store: Store) -> None:
    reopen(store, "a", time.time() + 0.3)
    first = store.require("r1").lease_expires
    with LeaseKeeper(store, "r1", "a", lease_seconds=0.3) as keeper:
        seen = {first}
        eventually(lambda: seen.add(store.require("r1").lease_expires) or len(seen) >= 4, what="three renewals")
        assert not keeper.lost.is_set()
