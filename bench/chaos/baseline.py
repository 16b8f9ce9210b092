"""Chaos on the checkpoint baseline: one `job run` process per run (the baseline's model), SIGKILLed at
random moments; a supervisor loop — what `job recover` run in a loop would do — starts `job resume` for
every run whose worker is gone once its lease has expired (or `job run` again if the run was killed
before it was even created). Refunds are approved through the store's own decision path."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.chaos.invariants import EffectRow, RunSpec
from bench.chaos.plan import gaps
from bench.served import JOB_AGENTS
from duragent._baseline import approvals
from duragent._baseline.errors import BaselineError
from duragent._baseline.store import Store
from duragent._config.settings import ROOT
from duragent._stores.ledger import EffectsLedger

LEASE_SECONDS = 1.0
LOCKED = "database is locked"


@dataclass
class Outcome:
    statuses: dict[str, str | None]
    effects: list[EffectRow]
    kills: int = 0
    resumes: int = 0
    reruns: int = 0
    lock_errors: int = 0
    exits: dict[int, int] = field(default_factory=dict)  # exit code -> count, kills excluded
    notes: list[str] = field(default_factory=list)


class BaselineChaos:
    def __init__(
        self, specs: list[RunSpec], workdir: Path, *, kills: int, seed: int, timeout: float, say: Callable[[str], None]
    ) -> None:
        self.specs, self.workdir, self.say, self.timeout = specs, workdir, say, timeout
        self.rng = random.Random(seed * 7919 + 2)
        self.kill_gaps = gaps(self.rng, kills, 0.3, 1.5)
        self.db, self.ledger = workdir / "baseline.db", workdir / "ledger.db"
        self.logs = workdir / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.stderr: dict[str, Path] = {}
        self.killed: set[int] = set()
        self.approved: set[str] = set()
        self.outcome = Outcome(statuses={}, effects=[])
        self.spawned = 0

    def _spawn(self, spec: RunSpec, command: str) -> None:
        argv = [sys.executable, "-m", "duragent._ops.cli.job", command, "--id", spec.run_id]
        if command == "run":
            argv += ["--agent", spec.agent]
            argv += [arg for key, value in spec.options.items() for arg in ("--option", f"{key}={value}")]
            argv += ["--lease-seconds", str(LEASE_SECONDS), "--max-attempts", "1000", "--poll-interval", "0.1"]
        else:
            argv += ["--lease-seconds", str(LEASE_SECONDS)]
        argv += [*JOB_AGENTS, "--db", str(self.db), "--ledger", str(self.ledger)]
        self.spawned += 1
        err = self.logs / f"{spec.run_id}-{self.spawned}-{command}.err"
        with open(err, "wb") as stderr:
            self.processes[spec.run_id] = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr)
        self.stderr[spec.run_id] = err

    def _reap(self, run_id: str, process: subprocess.Popen[bytes]) -> None:
        if process.pid in self.killed:
            return
        code = process.returncode
        self.outcome.exits[code] = self.outcome.exits.get(code, 0) + 1
        text = self.stderr[run_id].read_text(errors="replace")
        self.outcome.lock_errors += text.count(LOCKED)
        if code not in (0, 3) and text.strip():
            self.say(f"{run_id}: worker exited {code}: {text.strip().splitlines()[-1]}")

    def run(self) -> Outcome:
        Store(self.db).close()  # the schema, before the workers arrive
        EffectsLedger(self.ledger)
        store = Store(self.db)
        started = time.monotonic()
        next_kill = started + (self.kill_gaps[0] if self.kill_gaps else 0.0)
        try:
            for spec in self.specs:
                self._spawn(spec, "run")
            self.say(f"started {len(self.specs)} job processes")
            while time.monotonic() - started < self.timeout:
                now = time.monotonic()
                self._approve(store, now - started)
                if self.outcome.kills < len(self.kill_gaps) and now >= next_kill and self._kill(store):
                    next_kill = now + self.kill_gaps[self.outcome.kills % len(self.kill_gaps)]
                if self._supervise(store):
                    break
                time.sleep(0.05)
            else:
                self.outcome.notes.append(f"timed out after {self.timeout:.0f}s with runs still active")
            for spec in self.specs:
                row = store.run(spec.run_id)
                self.outcome.statuses[spec.run_id] = row.status if row else None
        finally:
            for process in self.processes.values():
                if process.poll() is None:
                    process.kill()
                    process.wait()
            store.close()
        self.outcome.effects = [EffectRow.of(e) for e in EffectsLedger(self.ledger).effects()]
        return self.outcome

    def _kill(self, store: Store) -> bool:
        """SIGKILL a worker in the middle of its run (created, not ended); False if none is there now."""
        alive = []
        for run_id, process in self.processes.items():
            row = store.run(run_id)
            if process.poll() is None and row is not None and not row.terminal:
                alive.append((run_id, process))
        if not alive:
            return False
        run_id, victim = self.rng.choice(alive)
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        self.killed.add(victim.pid)
        self.outcome.kills += 1
        self.say(f"kill {self.outcome.kills}: SIGKILL job pid {victim.pid} ({run_id})")
        return True

    def _supervise(self, store: Store) -> bool:
        """Restart what is gone; True once every run ended and no worker is left."""
        done = True
        for spec in self.specs:
            process = self.processes.get(spec.run_id)
            if process is not None and process.poll() is None:
                done = False
                continue
            if process is not None:
                self._reap(spec.run_id, process)
                del self.processes[spec.run_id]
            row = store.run(spec.run_id)
            if row is None:
                self._spawn(spec, "run")  # it died before the run was even created: start it again
                self.outcome.reruns += 1
                done = False
            elif not row.terminal:
                done = False
                if row.lease_owner is None or row.lease_expires <= time.time():
                    self._spawn(spec, "resume")
                    self.outcome.resumes += 1
        return done

    def _approve(self, store: Store, elapsed: float) -> None:
        for spec in self.specs:
            if spec.agent != "refund" or spec.run_id in self.approved or elapsed < spec.approve_after:
                continue
            try:
                approvals.decide(
                    store, spec.run_id, approve=True, approver="chaos", reason="auto-approved by the chaos driver"
                )
            except BaselineError:
                continue  # not requested yet (or the run is not created yet): try again later
            self.approved.add(spec.run_id)
            self.say(f"approved {spec.run_id}")


def run(
    specs: list[RunSpec], workdir: Path, *, kills: int, seed: int, timeout: float, say: Callable[[str], None]
) -> Outcome:
    return BaselineChaos(specs, workdir, kills=kills, seed=seed, timeout=timeout, say=say).run()
