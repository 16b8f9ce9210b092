"""The effects ledger on both backends (SQLite files and a real PostgreSQL): at most one effect per key,
even when two calls of one key overlap in two threads or two processes."""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from duragent._stores.ledger import Ledger
from tests.support.backends import Backend


def test_an_effect_happens_once_per_key_and_a_repeat_returns_the_first_result(backend: Backend) -> None:
    ledger = backend.ledger()
    performed: list[str] = []

    def perform() -> str:
        performed.append("charge")
        return f"charged #{len(performed)}"

    first = ledger.apply("run-1/c1", run_id="run-1", tool="charge", args={"invoice": "inv-9"}, perform=perform)
    again = backend.ledger().apply("run-1/c1", run_id="run-1", tool="charge", args={}, perform=perform)
    assert first == ("charged #1", True)
    assert again == ("charged #1", False)  # a retry, a replay, another worker: the first result, nothing done
    assert performed == ["charge"] and backend.rows("effects") == 1


def test_rows_read_back_whole_in_order_and_by_run(backend: Backend) -> None:
    ledger = backend.ledger()
    ledger.apply("a/1", run_id="a", tool="book", args={"what": "flight", "n": 2}, perform=lambda: "booked F1")
    ledger.apply("b/1", run_id="b", tool="charge", args={}, perform=lambda: "nul \x00 and ü")
    ledger.apply("a/2", run_id="a", tool="cancel", args={"what": "flight"}, perform=lambda: "ok", compensates="a/1")

    reader = backend.ledger()
    assert [e.key for e in reader.effects()] == ["a/1", "b/1", "a/2"]
    assert [e.key for e in reader.effects("a")] == ["a/1", "a/2"]
    flight = reader.get("a/1")
    assert flight is not None
    assert (flight.run_id, flight.tool, flight.result) == ("a", "book", "booked F1")
    assert flight.args == {"what": "flight", "n": 2}
    assert flight.at.endswith("+00:00") and flight.compensates is None
    assert reader.get("a/2").compensates == "a/1"  # type: ignore[union-attr]
    assert reader.get("b/1").result == "nul \x00 and ü"  # type: ignore[union-attr]
    assert reader.get("nope") is None
    assert reader.effects("nobody") == []


def test_a_failed_perform_records_nothing_and_the_next_attempt_performs(backend: Backend) -> None:
    ledger = backend.ledger()

    def fails() -> str:
        raise ConnectionError("provider down")

    with pytest.raises(ConnectionError):
        ledger.apply("k", run_id="r", tool="t", args={}, perform=fails)
    assert ledger.get("k") is None and backend.rows("effects") == 0
    assert ledger.apply("k", run_id="r", tool="t", args={}, perform=lambda: "done") == ("done", True)


# -- two applies of one key at the same time ----------------------------------------------------------

HOLD = 0.5  # how long the first perform keeps its transaction open after the other call has started


class Overlap:
    """Makes two `apply` calls of one key really overlap: both open their ledger, meet at a barrier, and say
    when they enter `apply`; a perform waits until both have entered, then holds its transaction open a while
    longer. Performs are counted in a file, so calls in other processes count too."""

    def __init__(self, directory: Path, start: Any, entered: list[Any]) -> None:
        self.performs = directory / "performs.log"
        self.start = start
        self.entered = entered

    def call(self, ledger: Ledger, me: int) -> tuple[str, bool]:
        self.start.wait(120)  # both ledgers are open (a spawned interpreter is slow to start on a busy machine)
        self.entered[me].set()
        return ledger.apply("run/c1", run_id="run", tool="charge", args={"amount": 5}, perform=self.perform)

    def perform(self) -> str:
        for event in self.entered:
            assert event.wait(60), "the other call never started"
        time.sleep(HOLD)  # the other call is inside apply now, racing us
        with self.performs.open("a") as log:
            log.write("charged\n")
        return "charged once"

    def count(self) -> int:
        return len(self.performs.read_text().splitlines()) if self.performs.exists() else 0


def in_threads(backend: Backend, wrap: Callable[[Ledger], Ledger] = lambda ledger: ledger) -> tuple[Overlap, list]:
    overlap = Overlap(backend.directory, threading.Barrier(2), [threading.Event(), threading.Event()])
    outcomes: list[Any] = [None, None]

    def run(me: int) -> None:
        try:
            outcomes[me] = overlap.call(wrap(backend.ledger()), me)
        except Exception as exc:
            outcomes[me] = exc

    threads = [threading.Thread(target=run, args=(me,)) for me in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return overlap, outcomes


def test_two_threads_applying_one_key_at_once_perform_it_once(backend: Backend) -> None:
    overlap, outcomes = in_threads(backend)
    assert overlap.count() == 1
    assert sorted(outcomes, key=lambda o: o[1]) == [("charged once", False), ("charged once", True)]
    assert backend.rows("effects") == 1


def _apply_in_a_process(backend: Backend, overlap: Overlap, me: int, results: Any) -> None:
    try:
        results.put((me, overlap.call(backend.ledger(), me)))
    except Exception as exc:  # reported, so the test fails at its assertion instead of waiting
        overlap.start.abort()  # and the other process stops waiting for this one at the barrier
        results.put((me, repr(exc)))
    finally:
        backend.close()


@pytest.mark.system
def test_two_processes_applying_one_key_at_once_perform_it_once(backend: Backend) -> None:
    spawn = multiprocessing.get_context("spawn")  # a fresh interpreter, as another worker would be
    overlap = Overlap(backend.directory, spawn.Barrier(2), [spawn.Event(), spawn.Event()])
    results = spawn.Queue()
    processes = [spawn.Process(target=_apply_in_a_process, args=(backend, overlap, me, results)) for me in (0, 1)]
    for p in processes:
        p.start()
    outcomes = dict(results.get(timeout=120) for _ in processes)
    for p in processes:
        p.join(30)
        assert p.exitcode == 0
    assert overlap.count() == 1, outcomes  # an error a process met is shown here
    assert sorted(outcomes.values(), key=lambda o: o[1]) == [("charged once", False), ("charged once", True)]
    assert backend.rows("effects") == 1


class CheckOutsideTheTransaction:
    """A broken ledger for the control test: the check and the perform are not in one transaction."""

    def __init__(self, inner: Ledger) -> None:
        self.inner = inner

    def apply(self, key: str, *, perform: Callable[[], str], **row: Any) -> tuple[str, bool]:
        found = self.inner.get(key)
        if found is not None:
            return found.result, False
        result = perform()
        return self.inner.apply(key, perform=lambda: result, **row)

    def get(self, key: str) -> Any:
        return self.inner.get(key)

    def effects(self, run_id: str | None = None) -> Any:
        return self.inner.effects(run_id)


def test_control_the_overlap_catches_a_ledger_without_one_transaction(backend: Backend) -> None:
    # The same race against a ledger that checks outside its transaction: both calls perform. So the tests
    # above would fail if `apply` lost its transaction (or its lock).
    overlap, _ = in_threads(backend, CheckOutsideTheTransaction)  # type: ignore[arg-type]
    assert overlap.count() == 2
