"""`python -m bench eval` (bench/eval.py): a task counts as completed only when its check holds on what the tools
did and what the run answered — never on the model's word — and the table sums each model's runs. One task is
run end to end on the suite's model server (SmolLM2 under the grammar completes the demo's refund)."""

from __future__ import annotations

import pytest

from bench.eval import TASKS, Effects, Order, Outcome, run_task, table
from duragent._ops.devstack.modelserver import ModelServer

BY_NAME = {task.name: task for task in TASKS}


def effects(*done: tuple[str, dict[str, object]]) -> Effects:
    return Effects(list(done))


@pytest.mark.parametrize(
    ("task", "done", "answer", "completed"),
    [
        ("demo-billing", [("charge", {"invoice": "inv-9"})], "Settled.", True),
        ("demo-billing", [("charge", {"invoice": "1234567890"})], "Settled.", False),  # the wrong invoice
        ("demo-billing", [("charge", {"invoice": "inv-9"})] * 2, "Settled.", False),  # charged twice
        ("demo-billing", [("charge", {"invoice": "inv-9"})], "", False),  # no answer
        ("demo-refund", [("refund", {"order_id": "4471"})], "Done.", True),
        ("lookup-then-refund", [("lookup", {"order_id": "A-1"}), ("refund", {"order_id": "A-1"})], "Done.", True),
        ("lookup-then-refund", [("refund", {"order_id": "A-1"})], "Done.", False),  # never looked up
        ("lookup-then-refund", [("refund", {"order_id": "A-1"}), ("lookup", {"order_id": "A-1"})], "", False),
        ("sum", [("add", {"a": 17, "b": 25})], "It is 42.", True),
        ("sum", [("add", {"a": 17, "b": 25})], "It is 41.", False),
        ("typed-order", [], Order(order_id="C-3", amount=12), True),
        ("typed-order", [], '{"order_id": "C-3", "amount": 12}', False),  # text is not the type
    ],
)
def test_a_task_is_completed_only_when_its_check_holds(
    task: str, done: list[tuple[str, dict[str, object]]], answer: object, completed: bool
) -> None:
    assert BY_NAME[task].check(effects(*done), answer) is completed


def test_the_table_sums_each_model_and_mode() -> None:
    outcomes = [
        Outcome("m", "schema", "a", True, 2, 100, 1.5, "answered", "", []),
        Outcome("m", "schema", "b", False, 3, 50, 2.0, "answered", "", []),
    ]
    assert table(outcomes)[-1] == "| m | schema | 1/2 (50 %) | 5 | 150 | 3.5 |"


def test_the_demo_refund_is_completed_on_the_real_small_model(local_model_server: ModelServer) -> None:
    outcome = run_task(local_model_server.base_url, "smollm2-135m", "schema", BY_NAME["demo-refund"], max_tokens=64)
    assert outcome.completed, outcome
    assert outcome.effects == [("refund", {"order_id": "4471"})]
    assert outcome.steps == 2 and outcome.tokens > 0
