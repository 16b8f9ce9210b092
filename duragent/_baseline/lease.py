"""Leases: a worker owns a run while its lease is live, renews it from a background thread, and a new
worker takes a run over only once the lease expired — in one conditional UPDATE, so two never both win."""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
import time
import uuid

from duragent._baseline.errors import DeadLettered, LeaseHeld, LeaseLost, RunNotResumable, UnknownRun
from duragent._baseline.schema import ACTIVE, TERMINAL
from duragent._baseline.store import Progress, RunRow, Store, close_run, iso
from duragent._stores.errors import StoreUnavailable

DEFAULT_LEASE_SECONDS = 15.0


def new_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def acquire(store: Store, run_id: str, owner: str, lease_seconds: float, max_attempts: int) -> RunRow:
    """Take over `run_id` if its lease expired (or was released). Raises why not, otherwise."""
    now = time.time()
    placeholders = ", ".join("?" for _ in ACTIVE)
    with store.transaction() as db:
        taken = db.execute(
            f"UPDATE runs SET lease_owner = ?, lease_expires = ?, attempts = attempts + 1, updated_at = ?"
            f" WHERE run_id = ? AND status IN ({placeholders}) AND (lease_owner IS NULL OR lease_expires <= ?)"
            f" AND attempts < ?",
            (owner, now + lease_seconds, iso(now), run_id, *ACTIVE, now, max_attempts),
        ).rowcount
        if not taken:
            refusal = _refusal(db, run_id, now, max_attempts)
    if taken:
        return store.require(run_id)
    raise refusal


def _refusal(db: sqlite3.Connection, run_id: str, now: float, max_attempts: int) -> Exception:
    """Why the takeover did not happen; dead-letters the run when that is why (inside the transaction)."""
    row = db.execute("SELECT status, lease_owner, lease_expires, attempts FROM runs WHERE run_id = ?", (run_id,))
    found = row.fetchone()
    if found is None:
        return UnknownRun(f"unknown run id {run_id!r}")
    status, holder, expires, attempts = found
    if status in TERMINAL:
        return RunNotResumable(f"run {run_id} already ended ({status}); there is nothing to resume")
    if holder is not None and expires > now:
        return LeaseHeld(
            f"run {run_id} is held by {holder} until {iso(expires)} ({expires - now:.1f}s left); "
            "resume it after the lease expires"
        )
    error = f"moved to dead_letter: {attempts} workers took this run and none finished it (limit {max_attempts})"
    close_run(db, run_id, "dead_letter", Progress(0, None, "dead letter"), error=error)
    return DeadLettered(f"run {run_id} {error}")


def renew(store: Store, run_id: str, owner: str, lease_seconds: float) -> bool:
    with store.transaction() as db:
        return bool(
            db.execute(
                "UPDATE runs SET lease_expires = ? WHERE run_id = ? AND lease_owner = ?",
                (time.time() + lease_seconds, run_id, owner),
            ).rowcount
        )


def release(store: Store, run_id: str, owner: str) -> None:
    with store.transaction() as db:
        db.execute(
            "UPDATE runs SET lease_owner = NULL, lease_expires = 0 WHERE run_id = ? AND lease_owner = ?",
            (run_id, owner),
        )


class LeaseKeeper:
    """Renews the lease every `lease_seconds / 3` on a daemon thread; `check()` raises once it was lost."""

    def __init__(self, store: Store, run_id: str, owner: str, lease_seconds: float) -> None:
        self.store, self.run_id, self.owner, self.lease_seconds = store, run_id, owner, lease_seconds
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew_until_stopped, name=f"lease-{run_id}", daemon=True)

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def check(self) -> None:
        if self.lost.is_set():
            raise LeaseLost(f"run {self.run_id}: this worker's lease was taken over; stopping")

    def _renew_until_stopped(self) -> None:
        while not self._stop.wait(self.lease_seconds / 3):
            try:
                kept = renew(self.store, self.run_id, self.owner, self.lease_seconds)
            except (sqlite3.OperationalError, StoreUnavailable):
                # Busy, or the disk is full for a moment: two more renewals fit in the lease before it can
                # expire. If it does expire, the next write is fenced (`Store.owned`) and this worker stops.
                continue
            if not kept and not self._stop.is_set():
                self.lost.set()
                return
