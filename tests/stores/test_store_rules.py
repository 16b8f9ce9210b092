"""The checkpoint store's rules (`duragent._baseline.store`, `duragent._baseline.journal`), in-process on a real SQLite
file: ids are
never reused, unknown ids and missing outputs are named, progress and cancellation requests are kept as
written, steps are numbered from one."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from duragent._baseline import jobs
from duragent._baseline.crash import CrashHook
from duragent._baseline.errors import CheckpointMismatch, DeadLettered, LeaseLost, RunExists, UnknownRun
from duragent._baseline.journal import Journal
from duragent._baseline.lease import acquire, release
from duragent._baseline.options import RunOptions
from duragent._baseline.store import Progress, StepSpec, Store
from duragent._stores.ledger import EffectsLedger
from tests.support.baseline_helpers import agents_recording_to


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    store = Store(tmp_path / "baseline.db")
    yield store
    store.close()


def create(store: Store, run_id: str = "r1", owner: str = "w1") -> None:
    store.create_run(
        run_id, "billing", "{}", owner=owner, lease_seconds=30, webhook_url=None, progress=Progress(0, 3, "starting")
    )


def test_a_new_run_is_held_by_its_creator_and_its_id_is_never_reused(store: Store) -> None:
    create(store)
    row = store.require("r1")
    assert row.lease_owner == "w1" and row.lease_expires > time.time() + 25 and not row.terminal
    with pytest.raises(RunExists, match="never reused"):
        create(store, owner="w2")
    with pytest.raises(UnknownRun, match="unknown run id 'nope'"):
        store.require("nope")


def test_status_and_progress_are_written_as_given(store: Store) -> None:
    create(store)
    store.set_status("r1", "w1", "compensating")
    assert (store.require("r1").status, store.require("r1").progress_label) == ("compensating", "starting")
    store.set_status("r1", "w1", "running", Progress(2, 3, "model call 2"))
    assert store.require("r1").progress == Progress(2, 3, "model call 2")
    with pytest.raises(LeaseLost, match="held by w1"):
        store.set_status("r1", "w2", "running")
    store.finish("r1", "w1", "completed", progress=Progress(3, 3, "done"))
    with pytest.raises(LeaseLost, match="held by nobody"):
        store.set_status("r1", "w1", "running")
    assert store.require("r1").terminal


def test_a_step_is_completed_once_with_its_defaults(store: Store) -> None:
    create(store)
    store.request_cancel("r1", "first")
    store.request_cancel("r1", "second")
    spec = StepSpec(1, "model_call", "h", "model call 1")
    store.complete("r1", "w1", spec, {"b": 1, "a": 2}, started_at="t0", progress=Progress(1, 3, "model call 1"))
    [step] = store.steps("r1")
    assert (step.step, step.status, step.attempts) == (1, "completed", 1)
    assert store.output(step.output_ref) == {"a": 2, "b": 1}  # type: ignore[arg-type]
    pending = store.pending_cancel("r1")
    assert pending is not None and pending["detail"] == "first"  # not handled by an ordinary step
    with pytest.raises(LookupError, match="output 999 is missing"):
        store.output(999)


def test_steps_are_numbered_from_one_and_a_step_without_output_is_a_mismatch(tmp_path: Path, store: Store) -> None:
    agents = agents_recording_to(EffectsLedger(tmp_path / "ledger.db"))
    jobs.start(store, agents, "r1", "billing", RunOptions())
    steps = store.steps("r1")
    assert [s.step for s in steps] == list(range(1, len(steps) + 1))
    with store.transaction() as db:
        db.execute("UPDATE steps SET output_ref = NULL WHERE run_id = 'r1' AND step = 1")
    journal = Journal(store, "r1", "", None, CrashHook(), None)
    with pytest.raises(CheckpointMismatch, match="completed step 1 has no output"):
        journal.output(journal.recorded[0])


def test_the_progress_total_is_the_estimate_or_what_is_known_whichever_is_larger(store: Store) -> None:
    create(store)
    journal = Journal(store, "r1", "w1", None, CrashHook(), 10)
    assert journal.total() == 10
    journal.cursor = 14
    assert journal.total() == 15  # past the estimate: the step under way counts
    assert Journal(store, "r1", "w1", None, CrashHook(), None).total() is None


def test_a_journal_writes_nothing_once_its_lease_is_lost(store: Store) -> None:
    from duragent._baseline.lease import LeaseKeeper

    create(store)
    keeper = LeaseKeeper(store, "r1", "w1", lease_seconds=30)  # not started: its state is set by hand
    journal = Journal(store, "r1", "w1", keeper, CrashHook(), None)
    spec = StepSpec(1, "model_call", "h", "model call 1")
    journal.before(spec)
    keeper.lost.set()
    with pytest.raises(LeaseLost):
        journal.before(spec)


def test_a_journal_step_completes_with_one_attempt_and_leaves_cancellations_pending(store: Store) -> None:
    create(store)
    store.request_cancel("r1", "stop")
    journal = Journal(store, "r1", "w1", None, CrashHook(), None)
    journal.complete(StepSpec(1, "model_call", "h", "model call 1"), {"ok": True}, started_at="t0")
    [step] = store.steps("r1")
    assert step.attempts == 1 and journal.cursor == 1
    assert store.pending_cancel("r1") is not None


def test_a_mismatch_names_both_steps_with_short_hashes(store: Store) -> None:
    create(store)
    store.complete(
        "r1", "w1", StepSpec(1, "model_call", "a" * 64, "m"), {}, started_at="t", progress=Progress(1, 1, "m")
    )
    journal = Journal(store, "r1", "w1", None, CrashHook(), None)
    with pytest.raises(CheckpointMismatch) as raised:
        journal.match(StepSpec(1, "tool:charge", "b" * 64, "charge"))
    assert f"recorded model_call (input {'a' * 12}), but the loop now asks tool:charge (input {'b' * 12});" in str(
        raised.value
    )


def test_the_worker_that_creates_a_run_is_its_first_attempt_and_a_handed_over_run_has_none(store: Store) -> None:
    """`max_attempts` counts the workers that took a run: its creator is the first; a run created for
    another process to drive (`job serve`) has had no worker yet, so its first taker is attempt one."""
    create(store, "owned", owner="w1")
    create(store, "handed", owner=None)
    assert (store.require("owned").attempts, store.require("handed").attempts) == (1, 0)
    handed = store.require("handed")
    # Free to take at once, and its row is the one of any run nobody holds (as `release` leaves it): no owner,
    # expiry 0 — however it got there.
    assert (handed.lease_owner, handed.lease_expires) == (None, 0)

    release(store, "owned", "w1")
    acquire(store, "owned", "w2", 30, max_attempts=2)  # the second worker: allowed
    release(store, "owned", "w2")
    with pytest.raises(DeadLettered, match="2 workers took this run"):
        acquire(store, "owned", "w3", 30, max_attempts=2)

    acquire(store, "handed", "w1", 30, max_attempts=1)  # the first worker of a handed-over run: allowed
    assert store.require("handed").attempts == 1
