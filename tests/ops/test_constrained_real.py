"""`ConstrainedModel` on the real local model (SmolLM2-135M, the suite's model server): llama.cpp enforces the
step grammar, so whatever the model's weights prefer, every step is a call to an offered tool with arguments the
user gave, or an answer that fits. The demo's refund task is completed by construction: the only identifier the
user said is the one the call can carry."""

from __future__ import annotations

import json

from pydantic import BaseModel

from agentic import Agent, Budget, ModelSettings, Registry, tool
from agentic.models.local import constrained_local_model
from duragent._ops.devstack.modelserver import ModelServer


class Order(BaseModel):
    order_id: str
    amount: int


def test_the_small_model_completes_the_demo_refund_under_the_grammar(local_model_server: ModelServer) -> None:
    refunded: list[str] = []

    @tool(description="Refund an order.", order_id="The order id.")
    def refund(order_id: str) -> str:
        refunded.append(order_id)
        return f"refunded {order_id}"

    settings = ModelSettings(first_tool_choice="required", temperature=0.0, max_tokens=64)
    model = constrained_local_model(local_model_server.base_url, settings=settings)
    run = Agent(model, Registry([refund]), system="Handle refunds.", budget=Budget(max_steps=3)).run(
        "Refund order 4471."
    )
    assert refunded == ["4471"]
    assert run.stop.value == "answered" and run.output
    assert run.usage.output_tokens > 0


def test_a_typed_answer_validates_whatever_the_model_writes(local_model_server: ModelServer) -> None:
    model = constrained_local_model(local_model_server.base_url, settings=ModelSettings(temperature=0.0, max_tokens=64))
    model.answer_schema = Order.model_json_schema()
    run = Agent(model, Registry([]), system="Extract the order.", budget=Budget(max_steps=2)).run(
        "Order C-3 costs 12 EUR."
    )
    order = Order.model_validate_json(run.output or "")
    assert (order.order_id, order.amount) == ("C-3", 12)  # the only identifier and the only integer said
    assert json.loads(run.output or "") == order.model_dump()


def test_a_typed_agent_gets_its_type_from_the_small_model_through_the_grammar(local_model_server: ModelServer) -> None:
    """`Agent(output_type=...)` offers the `final_answer` tool with the type's schema; under the grammar it is the
    model's only way to answer, and llama.cpp constrains the answer to the schema: the run's output is the type."""
    model = constrained_local_model(local_model_server.base_url, settings=ModelSettings(temperature=0.0, max_tokens=64))
    agent = Agent(model, Registry([]), system="Extract the order.", budget=Budget(max_steps=3), output_type=Order)
    run = agent.run("Order C-3 costs 12 EUR.")
    assert isinstance(run.output, Order), run.stop_detail
    assert (run.output.order_id, run.output.amount) == ("C-3", 12)
    [call] = [c for m in run.messages for c in m.tool_calls]
    assert call.name == "final_answer"
