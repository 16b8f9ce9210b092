"""The billing example's arguments are bounded in its tool's JSON schema — which a local model's grammar
follows, so the model cannot write a sentence into the key — and checked before any charge."""

from __future__ import annotations

from agentic import tool_call
from agentic.results import ToolStatus
from examples import billing


def test_the_charge_bounds_reach_the_schema_and_a_longer_key_charges_nothing():
    [charge] = [s for s in billing.agent.schemas() if s.name == "charge"]
    properties = charge.parameters["properties"]
    assert properties["key"]["maxLength"] == 40 and properties["invoice"]["maxLength"] == 32
    assert properties["key"]["minLength"] == properties["invoice"]["minLength"] == 1
    for bad in ({"invoice": "inv-9", "key": "k" * 41}, {"invoice": "", "key": "inv-9:attempt-1"}):
        result = billing.agent.registry.dispatch(tool_call("charge", bad, id="c1"))
        # No ToolContext: had the arguments passed, the tool would have failed on it instead.
        assert result.status is ToolStatus.INVALID_ARGUMENTS, result.content
    within = billing.agent.registry.dispatch(tool_call("charge", {"invoice": "inv-9", "key": "k" * 40}, id="c2"))
    assert within.status is not ToolStatus.INVALID_ARGUMENTS  # at the bound, the arguments pass
