"""A delegation's reservation (agentic/delegation.py): what the parent has left, capped per delegation — every
cap, not just steps. The rules at work in runs of all three runners: tests/temporal/test_delegation.py."""

from __future__ import annotations

import pytest

from agentic import Budget, Usage
from agentic.delegation import limit_of, reserve

PARENT = Budget(max_steps=10, max_input_tokens=1_000, max_output_tokens=500, max_cost=1.0)
LEFT = Budget(max_steps=6, max_input_tokens=600, max_output_tokens=300, max_cost=0.5)  # after USED
USED = Usage(steps=4, input_tokens=400, output_tokens=200, cost=0.5)


@pytest.mark.parametrize(
    "cap",
    [Budget(max_cost=0.1), Budget(max_input_tokens=100), Budget(max_output_tokens=50), Budget(max_steps=2)],
    ids=["cost", "input tokens", "output tokens", "steps"],
)
def test_each_per_delegation_cap_limits_the_childs_reservation(cap: Budget) -> None:
    capped = {field: value for field, value in cap.model_dump().items() if value is not None}
    assert reserve(PARENT, USED, cap) == LEFT.model_copy(update=capped)
    # A cap above what the parent has left does not raise the reservation.
    generous = Budget(**{field: value * 100 for field, value in capped.items()})
    assert reserve(PARENT, USED, generous) == LEFT


def test_a_delegations_limit_is_the_smaller_of_the_childs_own_budget_and_the_cap() -> None:
    own = Budget(max_steps=5, max_input_tokens=800, max_cost=0.2)
    cap = Budget(max_steps=3, max_output_tokens=40, max_cost=0.5)
    assert limit_of(own, cap) == Budget(max_steps=3, max_input_tokens=800, max_output_tokens=40, max_cost=0.2)
    assert limit_of(Budget(), Budget()) == Budget()  # unlimited stays unlimited
