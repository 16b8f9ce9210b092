"""What must hold after chaos, checked from the effects ledger and the engine's own record of each run.

* **lost**: a run that is not in a terminal state at the end (still active, or unknown to the engine).
* **duplicate effects**: ledger rows that must not exist — a second row under one idempotency key, a
  second effect for the same logical step (the same record migrated twice, the invoice charged twice,
  the order refunded twice, a trip leg booked or cancelled twice), or a compensation of an effect that
  does not exist. Each offending row counts once, whichever rules it breaks.
* **anomalies**: a terminal run that ended otherwise than its agent and options say (e.g. a trip with a failing
  car that was not compensated), a completed run missing an effect, a compensated trip with a booking
  left uncancelled, a booking of the leg that always fails, effects of a run nobody started.

Pure functions over plain rows, so each rule is tested on synthetic ledgers (tests/bench/test_bench.py).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

TERMINAL = frozenset({"completed", "compensated", "abandoned", "compensation_failed", "failed", "dead_letter"})
LEGS = ("flight", "hotel", "car")

# The demo agents (examples/) the chaos mix runs.
AgentName = Literal["billing", "migration", "refund", "trip"]


@dataclass(frozen=True)
class RunSpec:
    """One run the chaos driver starts: which demo agent, with which of its options."""

    run_id: str
    agent: AgentName
    records: int = 5
    step_delay: float = 0.0
    after_effect_delay: float = 0.0
    fail_at: str = "car"
    approve_after: float = 0.0  # refund: seconds after the start at which the driver approves

    @property
    def options(self) -> dict[str, Any]:
        """The agent's per-run options (`examples.DemoOptions`), as both engines are handed them."""
        return {
            "records": self.records,
            "step_delay": self.step_delay,
            "after_effect_delay": self.after_effect_delay,
            "fail_at": self.fail_at,
        }

    @property
    def expected_status(self) -> str:
        return "compensated" if self.agent == "trip" and self.fail_at != "none" else "completed"

    @property
    def label(self) -> str:
        if self.agent == "trip":
            return f"trip(fail-at {self.fail_at})"
        if self.agent == "migration":
            return f"migration({self.records} records)"
        return self.agent


@dataclass(frozen=True)
class EffectRow:
    key: str
    run_id: str
    tool: str
    args: Mapping[str, Any] = field(default_factory=dict)
    compensates: str | None = None

    @classmethod
    def of(cls, effect: Any) -> EffectRow:
        """From an `duragent._stores.ledger.Effect`."""
        return cls(effect.key, effect.run_id, effect.tool, dict(effect.args), effect.compensates)


@dataclass
class Verdict:
    runs: int
    statuses: dict[str, str | None]
    lost: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)  # one line per offending row
    anomalies: list[str] = field(default_factory=list)

    @property
    def completed(self) -> int:
        return sum(1 for s in self.statuses.values() if s == "completed")

    @property
    def compensated(self) -> int:
        return sum(1 for s in self.statuses.values() if s == "compensated")

    @property
    def duplicate_effects(self) -> int:
        return len(self.duplicates)

    @property
    def ok(self) -> bool:
        return not self.lost and not self.duplicates and not self.anomalies

    def outcomes(self) -> dict[str, int]:
        return dict(Counter(s or "missing" for s in self.statuses.values()))

    def line(self, engine: str, kills: int) -> str:
        return (
            f"chaos {engine}: runs={self.runs} completed={self.completed} compensated={self.compensated} "
            f"lost={len(self.lost)} duplicate_effects={self.duplicate_effects} kills={kills}"
        )


class _Offences:
    """Offending rows by position, each described once (a row breaking two rules is one duplicate)."""

    def __init__(self) -> None:
        self.rows: dict[int, str] = {}

    def flag(self, index: int, why: str) -> None:
        self.rows.setdefault(index, why)


def check(specs: Sequence[RunSpec], statuses: Mapping[str, str | None], effects: Sequence[EffectRow]) -> Verdict:
    verdict = Verdict(runs=len(specs), statuses={s.run_id: statuses.get(s.run_id) for s in specs})
    offences = _Offences()
    by_key: dict[str, list[int]] = defaultdict(list)
    for index, effect in enumerate(effects):
        by_key[effect.key].append(index)
    for key, rows in by_key.items():
        for index in rows[1:]:
            offences.flag(index, f"idempotency key {key} has {len(rows)} effects")

    by_run: dict[str, list[int]] = defaultdict(list)
    for index, effect in enumerate(effects):
        by_run[effect.run_id].append(index)
    known = {s.run_id for s in specs}
    for run_id in sorted(set(by_run) - known):
        verdict.anomalies.append(f"{run_id}: {len(by_run[run_id])} effect(s) of a run the driver never started")

    for spec in specs:
        status = verdict.statuses[spec.run_id]
        if status not in TERMINAL:
            verdict.lost.append(f"{spec.run_id} ({spec.label}): {status or 'missing'}")
        elif status != spec.expected_status:
            verdict.anomalies.append(f"{spec.run_id} ({spec.label}) ended {status}, expected {spec.expected_status}")
        rows = [(i, effects[i]) for i in by_run.get(spec.run_id, [])]
        if spec.agent == "trip":
            _check_trip(spec, status, rows, offences, verdict.anomalies)
        else:
            _check_once_each(spec, status, rows, offences, verdict.anomalies)
    verdict.duplicates = [f"{effects[i].run_id}: {why}" for i, why in sorted(offences.rows.items())]
    return verdict


# The one effect each logical step of the linear agents makes: (tool, the argument naming the step).
_STEP_OF = {
    "billing": ("charge", "invoice"),
    "migration": ("migrate_record", "record"),
    "refund": ("refund", "order_id"),
}


def _expected_steps(spec: RunSpec) -> list[str]:
    if spec.agent == "migration":
        return [f"rec-{n}" for n in range(1, spec.records + 1)]
    return ["inv-9"] if spec.agent == "billing" else ["4471"]


def _check_once_each(
    spec: RunSpec,
    status: str | None,
    rows: Iterable[tuple[int, EffectRow]],
    offences: _Offences,
    anomalies: list[str],
) -> None:
    tool, argument = _STEP_OF[spec.agent]
    seen: dict[str, int] = {}
    expected = set(_expected_steps(spec))
    for index, effect in rows:
        if effect.tool != tool:
            anomalies.append(f"{spec.run_id}: unexpected {effect.tool} effect ({effect.key})")
            continue
        step = str(effect.args.get(argument))
        if step not in expected:
            anomalies.append(f"{spec.run_id}: effect for {argument}={step}, which the agent never asks for")
        seen[step] = seen.get(step, 0) + 1
        if seen[step] > 1:
            offences.flag(index, f"{tool} {argument}={step} made {seen[step]} times")
    if status == "completed":
        missing = [s for s in _expected_steps(spec) if s not in seen]
        if missing:
            anomalies.append(f"{spec.run_id} completed without effects for {', '.join(missing)}")


def _check_trip(
    spec: RunSpec,
    status: str | None,
    rows: Sequence[tuple[int, EffectRow]],
    offences: _Offences,
    anomalies: list[str],
) -> None:
    bookings: dict[str, EffectRow] = {}  # key -> first booking row
    booked_legs: Counter[str] = Counter()
    for index, effect in rows:
        if effect.tool.startswith("book_"):
            leg = effect.tool.removeprefix("book_")
            booked_legs[leg] += 1
            if booked_legs[leg] > 1:
                offences.flag(index, f"{leg} booked {booked_legs[leg]} times")
            bookings.setdefault(effect.key, effect)
            if leg == spec.fail_at:
                anomalies.append(f"{spec.run_id}: the {leg}, which always fails, was booked")
    cancels: Counter[str] = Counter()
    for index, effect in rows:
        if effect.tool.startswith("book_"):
            continue
        if not effect.tool.startswith("cancel_"):
            anomalies.append(f"{spec.run_id}: unexpected {effect.tool} effect ({effect.key})")
            continue
        leg = effect.tool.removeprefix("cancel_")
        original = bookings.get(effect.compensates or "")
        if original is None or original.tool != f"book_{leg}":
            offences.flag(
                index, f"cancel_{leg} compensates {effect.compensates}, which is no {leg} booking of this run"
            )
            continue
        cancels[original.key] += 1
        if cancels[original.key] > 1:
            offences.flag(index, f"{leg} booking {original.key} cancelled {cancels[original.key]} times")
    if status == "completed":
        missing = [leg for leg in LEGS if not booked_legs[leg]]
        if missing or cancels:
            anomalies.append(f"{spec.run_id} completed with bookings missing {missing} or cancelled {dict(cancels)}")
    if status == "compensated":
        left = [b.tool for key, b in bookings.items() if not cancels[key]]
        if left:
            anomalies.append(f"{spec.run_id} compensated but left {', '.join(left)} uncancelled")
