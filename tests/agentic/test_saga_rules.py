"""The saga's rules (`agentic.saga`), pure: which effects an abandoned run undoes, newest first, under which
keys. The durable runners' tests (test_saga.py, test_baseline_compensation.py) show them executed."""

from __future__ import annotations

import pytest

from agentic import Stop, ToolCall, ToolSpec, ToolStatus
from agentic.loop import GIVE_UP, ToolRecord
from agentic.saga import SagaPolicy, abandons, compensation_plan, undo_key


def spec(name: str, *, mutating: bool = True, compensable: bool = True) -> ToolSpec:
    return ToolSpec(name=name, description="", parameters={}, mutating=mutating, compensable=compensable)


def record(name: str, uid: str, status: ToolStatus = ToolStatus.OK, *, mutating: bool = True) -> ToolRecord:
    call = ToolCall(id=f"p-{uid}", name=name, arguments={"n": uid}, uid=uid)
    return ToolRecord(step=int(uid.split(".")[0]), call=call, status=status, content=f"did {uid}", mutating=mutating)


SPECS = {
    "book": spec("book"),
    "charge": spec("charge", compensable=False),
    "read": spec("read", mutating=False, compensable=False),
    GIVE_UP: spec(GIVE_UP),
}


def test_completed_mutating_calls_are_undone_newest_first_under_derived_keys() -> None:
    records = [record("book", "1.1"), record("read", "2.1", mutating=False), record("book", "3.1")]
    plan = compensation_plan("run", records, SPECS)
    assert [s.call.uid for s in plan.steps] == ["3.1", "1.1"]  # newest first
    assert [(s.original_key, s.key) for s in plan.steps] == [
        ("run:3.1", "run:3.1:undo"),
        ("run:1.1", "run:1.1:undo"),
    ]
    assert [s.result for s in plan.steps] == ["did 3.1", "did 1.1"]  # the undo gets the original's result
    assert not any(s.uncertain for s in plan.steps)
    assert plan.not_compensable == []


@pytest.mark.parametrize(
    "status", [s for s in ToolStatus if s not in (ToolStatus.OK, ToolStatus.CANCELLED)], ids=lambda s: s.value
)
def test_a_call_that_made_no_effect_is_not_undone(status: ToolStatus) -> None:
    plan = compensation_plan("run", [record("book", "1.1", status), record("charge", "1.2", status)], SPECS)
    assert plan.steps == [] and plan.not_compensable == []


def test_an_interrupted_call_is_planned_as_uncertain() -> None:
    [step] = compensation_plan("run", [record("book", "1.1", ToolStatus.CANCELLED)], SPECS).steps
    assert step.uncertain and step.key == "run:1.1:undo"


def test_effects_without_an_inverse_are_reported_and_give_up_is_never_undone() -> None:
    records = [record("charge", "1.1"), record(GIVE_UP, "2.1"), record("gone", "3.1")]
    plan = compensation_plan("run", records, SPECS)
    assert plan.steps == []
    assert plan.not_compensable == ["charge", "gone"]  # a tool no longer known cannot be undone either


def test_every_stop_but_an_answer_abandons() -> None:
    assert [s for s in Stop if not abandons(s)] == [Stop.ANSWERED]


def test_undo_keys_are_derived_and_distinct() -> None:
    assert undo_key("run:1.1") == "run:1.1:undo" != undo_key("run:1.2")


def test_the_default_saga_policy_is_the_documented_one() -> None:
    policy = SagaPolicy()
    assert (policy.max_attempts, policy.initial_interval_seconds, policy.maximum_interval_seconds) == (5, 1.0, 30.0)
