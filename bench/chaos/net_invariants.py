"""What must hold after each network fault: one row per fault, from the engine's record of each run, the effects
ledger (the demo agents' stand-in provider), the orders service (a real provider over HTTP) and the transcript
store. The demo agents' rules are `invariants.check`'s (a lost run, a duplicate effect, a wrong ending); on top:

* **approvals honoured exactly once**: every call the driver approved has exactly one `approved` entry in its
  run's audit and made exactly one effect under its key (the ledger's or the provider's).
* **deadlines kept**: every run ended before its fault's deadline, and no approval expired.
* **one append per step**: a run's transcript is one chain: no two nodes it wrote continue the same node (a
  discarded late completion that had written its own continuation would fork the chain).
* **provider**: the orders service holds one refund per key, and a completed orders run has its one refund.

Pure functions over plain values (tests/bench/test_net_invariants.py checks each rule on made-up records).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from bench.chaos.invariants import TERMINAL, EffectRow, RunSpec, check


@dataclass(frozen=True)
class Approval:
    """A call the driver approved: in which run, of which tool (each gated demo run has one such call)."""

    run_id: str
    call_id: str
    tool: str


@dataclass
class Record:
    """What the driver gathered about one fault's runs once they ended (or its deadline passed)."""

    specs: list[RunSpec]  # the demo agents' runs
    orders: list[str]  # the orders agent's runs (its refund goes to the orders service)
    statuses: dict[str, str | None]
    effects: list[EffectRow]
    refunds: list[tuple[str, str]]  # the orders service's rows: (key, order id)
    approvals: list[Approval]
    audits: dict[str, list[tuple[str, str]]]  # run id -> [(call id, event)]
    chains: dict[str, list[tuple[str, str]]]  # run id -> its transcript nodes [(node, previous)]
    late: list[str] = field(default_factory=list)  # runs still open at the deadline
    failures: list[str] = field(default_factory=list)  # what the fault itself found wrong (a cut that never came)


@dataclass
class Row:
    fault: str
    runs: int
    answered: int
    compensated: int
    lost: list[str]
    duplicates: list[str]
    approvals: int
    honoured: int
    missed_deadlines: list[str]
    forks: list[str]
    anomalies: list[str]
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        clean = not (self.lost or self.duplicates or self.missed_deadlines or self.forks or self.anomalies)
        return clean and self.honoured == self.approvals

    def cells(self) -> list[str]:
        return [
            self.fault,
            str(self.runs),
            str(self.answered),
            str(self.compensated),
            str(len(self.lost)),
            str(len(self.duplicates)),
            f"{self.honoured}/{self.approvals}",
            str(len(self.missed_deadlines)),
            str(len(self.forks)),
            "ok" if self.ok else "FAIL",
            f"{self.seconds:.1f}",
        ]


HEADER = ["fault", "runs", "answered", "compensated", "lost", "duplicate", "approvals honoured", "deadlines missed",
          "forked transcripts", "verdict", "seconds"]  # fmt: skip


def table(rows: Sequence[Row]) -> str:
    lines = [HEADER, *(row.cells() for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADER))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)) for line in lines)


def forks_of(chain: Sequence[tuple[str, str]]) -> list[str]:
    """Nodes that two of a run's nodes continue: the chain forked there."""
    continued = Counter(previous for _, previous in set(chain))
    return sorted(node for node, count in continued.items() if count > 1)


def evaluate(fault: str, record: Record) -> Row:
    verdict = check(record.specs, record.statuses, record.effects)
    lost, duplicates, anomalies = list(verdict.lost), list(verdict.duplicates), list(verdict.anomalies)
    refunds_by_key = Counter(key for key, _ in record.refunds)
    duplicates += [f"orders service: key {key} refunded {n} times" for key, n in refunds_by_key.items() if n > 1]
    for run_id in record.orders:
        status = record.statuses.get(run_id)
        if status not in TERMINAL:
            lost.append(f"{run_id} (orders): {status or 'missing'}")
        elif status != "completed":
            anomalies.append(f"{run_id} (orders) ended {status}, expected completed")
        mine = [key for key in refunds_by_key if key.startswith(f"{run_id}:")]
        if status == "completed" and len(mine) != 1:
            anomalies.append(f"{run_id} (orders) completed with {len(mine)} refunds at the provider")
    honoured = 0
    missed = [f"{run_id}: still open at the deadline" for run_id in record.late]
    for approval in record.approvals:
        events = [event for call, event in record.audits.get(approval.run_id, []) if call == approval.call_id]
        made = sum(1 for e in record.effects if e.run_id == approval.run_id and e.tool == approval.tool)
        made += sum(n for key, n in refunds_by_key.items() if key.startswith(f"{approval.run_id}:"))
        if events.count("approved") == 1 and made == 1:
            honoured += 1
        else:
            anomalies.append(f"{approval.run_id}/{approval.call_id}: audit {events}, {approval.tool} made {made} times")
    for run_id, events in record.audits.items():
        missed += [f"{run_id}/{call}: the approval expired" for call, event in events if event == "expired"]
    forks = [f"{run_id}: forks at {node}" for run_id, chain in record.chains.items() for node in forks_of(chain)]
    statuses = Counter(record.statuses.values())
    return Row(
        fault,
        runs=len(record.specs) + len(record.orders),
        answered=statuses["completed"],
        compensated=statuses["compensated"],
        lost=lost,
        duplicates=duplicates,
        approvals=len(record.approvals),
        honoured=honoured,
        missed_deadlines=missed,
        forks=forks,
        anomalies=anomalies + record.failures,
    )
