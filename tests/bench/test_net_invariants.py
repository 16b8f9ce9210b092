"""The network fault matrix's invariant checker (bench/chaos/net_invariants.py), rule by rule, on made-up records:
each rule flags the record that breaks it and passes the one that keeps it."""

from __future__ import annotations

import dataclasses

from bench.chaos.invariants import EffectRow, RunSpec
from bench.chaos.net_invariants import Approval, Record, evaluate, forks_of, table

REFUND = RunSpec("f-refund", "refund")
BILLING = RunSpec("f-billing", "billing")
ORDERS = "f-orders"


def clean() -> Record:
    return Record(
        specs=[REFUND, BILLING],
        orders=[ORDERS],
        statuses={REFUND.run_id: "completed", BILLING.run_id: "completed", ORDERS: "completed"},
        effects=[
            EffectRow(f"{REFUND.run_id}:1.1", REFUND.run_id, "refund", {"order_id": "4471"}),
            EffectRow(f"{BILLING.run_id}:1.1", BILLING.run_id, "charge", {"invoice": "inv-9"}),
        ],
        refunds=[(f"{ORDERS}:2.1", "A-1")],
        approvals=[Approval(REFUND.run_id, "c1", "refund"), Approval(ORDERS, "c2", "refund_order")],
        audits={REFUND.run_id: [("c1", "approved")], ORDERS: [("c2", "approved")], BILLING.run_id: []},
        chains={ORDERS: [("n1", "empty"), ("n2", "n1"), ("n3", "n2")]},
    )


def test_a_clean_record_is_one_clean_row():
    row = evaluate("frontend-cut", clean())
    assert row.ok and (row.runs, row.answered, row.approvals, row.honoured) == (3, 3, 2, 2)
    assert row.cells()[:9] == ["frontend-cut", "3", "3", "0", "0", "0", "2/2", "0", "0"]
    assert "approvals honoured" in table([row]).splitlines()[0]


def test_a_second_refund_at_the_provider_under_one_key_is_a_duplicate():
    record = clean()
    record.refunds.append((f"{ORDERS}:2.1", "A-1"))
    row = evaluate("frontend-cut", record)
    assert not row.ok and row.duplicates == [f"orders service: key {ORDERS}:2.1 refunded 2 times"]
    assert row.honoured == 1  # the orders approval made two refunds: not honoured exactly once


def test_a_completed_orders_run_without_its_refund_is_an_anomaly():
    record = dataclasses.replace(clean(), refunds=[])
    row = evaluate("slow-lossy", record)
    assert not row.ok and any("completed with 0 refunds" in a for a in row.anomalies)


def test_an_approval_recorded_twice_is_not_honoured_once():
    record = clean()
    record.audits[REFUND.run_id] = [("c1", "approved"), ("c1", "approved")]
    row = evaluate("postgres-cut", record)
    assert not row.ok and row.honoured == 1


def test_an_expired_approval_and_a_run_open_at_the_deadline_miss_their_deadlines():
    record = clean()
    record.audits[REFUND.run_id] = [("c1", "expired")]
    record.statuses[BILLING.run_id] = "running"
    record.late = [BILLING.run_id]
    row = evaluate("slow-lossy", record)
    assert not row.ok and len(row.missed_deadlines) == 2
    assert row.lost == [f"{BILLING.run_id} (billing): running"]


def test_a_transcript_that_forks_is_flagged():
    assert forks_of([("n1", "empty"), ("n2", "n1"), ("n2", "n1")]) == []  # the same row twice: one append
    record = clean()
    record.chains[ORDERS].append(("n2-late", "n1"))  # a second continuation of n1: a step appended twice
    row = evaluate("frontend-cut", record)
    assert not row.ok and row.forks == [f"{ORDERS}: forks at n1"]


def test_what_the_fault_itself_found_wrong_fails_its_row():
    record = dataclasses.replace(clean(), failures=["postgres-cut: w1 sent no transcript append to cut"])
    assert not evaluate("postgres-cut", record).ok
