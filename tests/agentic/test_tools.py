"""@tool: the schema the model sees, definition errors, the hidden ToolContext, and the spec runners use."""

from __future__ import annotations

from typing import Any

import pytest

from agentic import Agent, FakeModel, Registry, Tool, ToolContext, ToolSpec, tool, tool_call
from agentic.errors import ToolDefinitionError
from agentic.models.base import ToolSchema
from agentic.results import ToolStatus


@tool(
    description="Look up an order.",
    order_id="The order id.",
    verbose="Include the line items.",
    tags="Labels to filter by.",
)
def lookup(order_id: str, quantity: int, price: float, verbose: bool = False, tags: list[str] | None = None) -> str:
    return f"order {order_id} x{quantity}"


def test_schema_types_descriptions_and_required() -> None:
    schema = lookup.parameters
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    props = schema["properties"]
    assert list(props) == ["order_id", "quantity", "price", "verbose", "tags"]
    assert props["order_id"] == {"type": "string", "description": "The order id."}
    assert props["quantity"] == {"type": "integer"}
    assert props["price"] == {"type": "number"}
    assert props["verbose"] == {"type": "boolean", "default": False, "description": "Include the line items."}
    assert props["tags"]["description"] == "Labels to filter by."
    assert {"type": "array", "items": {"type": "string"}} in props["tags"]["anyOf"]
    assert schema["required"] == ["order_id", "quantity", "price"]


def test_schema_has_no_pydantic_titles() -> None:
    schema = lookup.parameters
    assert "title" not in schema
    assert all("title" not in body for body in schema["properties"].values())


def test_tool_without_parameters_has_an_empty_object_schema() -> None:
    @tool(description="Ping.")
    def ping() -> str:
        return "pong"

    assert ping.parameters["properties"] == {}
    assert ping.parameters["required"] == []
    assert ping.parameters["additionalProperties"] is False


def test_name_and_description() -> None:
    assert lookup.name == "lookup"
    assert lookup.description == "Look up an order."

    @tool(description="Renamed.", name="find_order")
    def whatever(order_id: str) -> str:
        return order_id

    assert whatever.name == "find_order"


def test_doc_for_a_missing_parameter_is_a_definition_error() -> None:
    with pytest.raises(ToolDefinitionError, match="ordr_id"):

        @tool(description="Look up.", ordr_id="Typo of order_id.")
        def bad(order_id: str) -> str:
            return order_id


def test_doc_for_a_missing_parameter_via_docs_is_a_definition_error() -> None:
    with pytest.raises(ToolDefinitionError, match="nmae"):

        @tool(description="Greet.", docs={"nmae": "Typo."})
        def greet(name: str) -> str:
            return name


def test_var_args_are_a_definition_error() -> None:
    with pytest.raises(ToolDefinitionError):

        @tool(description="Anything.")
        def anything(*args: Any) -> str:
            return ""

    with pytest.raises(ToolDefinitionError):

        @tool(description="Anything.")
        def anything_kw(**kwargs: Any) -> str:
            return ""


@pytest.mark.parametrize("timeout", [0, -1.0])
def test_non_positive_timeout_is_a_definition_error(timeout: float) -> None:
    with pytest.raises(ToolDefinitionError):
        tool(description="x", timeout=timeout)


def test_docs_for_names_that_collide_with_options() -> None:
    @tool(description="Greet a customer.", name="greet", docs={"name": "The customer's name.", "mutating": "Why."})
    def hello(name: str, mutating: bool = False) -> str:
        return f"hello {name}"

    assert hello.name == "greet"
    assert hello.mutating is False
    props = hello.parameters["properties"]
    assert props["name"]["description"] == "The customer's name."
    assert props["mutating"]["description"] == "Why."
    assert hello.parameters["required"] == ["name"]
    result = Registry([hello]).dispatch(tool_call("greet", {"name": "Ada"}, id="c1"))
    assert result.status is ToolStatus.OK
    assert result.content == "hello Ada"


def test_tool_context_is_hidden_from_the_schema() -> None:
    @tool(description="Charge.", amount="Amount in cents.", mutating=True)
    def charge(amount: int, ctx: ToolContext) -> str:
        return ctx.idempotency_key

    assert charge.context_param == "ctx"
    assert list(charge.parameters["properties"]) == ["amount"]
    assert charge.parameters["required"] == ["amount"]


def test_tool_context_is_injected_at_dispatch() -> None:
    seen: list[ToolContext] = []

    @tool(description="Charge.", amount="Amount in cents.", mutating=True)
    def charge(amount: int, context: ToolContext) -> str:
        seen.append(context)
        context.deps["ledger"].append((context.idempotency_key, amount))
        return f"charged {amount}"

    ledger: list[tuple[str, int]] = []
    context = ToolContext(run_id="run-1", call_id="c7", idempotency_key="run-1:c7", deps={"ledger": ledger})
    result = Registry([charge]).dispatch(tool_call("charge", {"amount": 250}, id="c7"), context)
    assert result.status is ToolStatus.OK
    assert result.content == "charged 250"
    assert seen == [context]
    assert seen[0] is context
    assert ledger == [("run-1:c7", 250)]


def test_a_standalone_dispatch_still_gets_a_context() -> None:
    keys: list[str] = []

    @tool(description="Record.")
    def record(ctx: ToolContext) -> str:
        keys.append(ctx.idempotency_key)
        return "ok"

    result = Registry([record]).dispatch(tool_call("record", {}, id="c9"))
    assert result.status is ToolStatus.OK
    assert keys == ["local:c9"]


def test_the_model_cannot_supply_the_context_parameter() -> None:
    calls: list[Any] = []

    @tool(description="Record.")
    def record(ctx: ToolContext) -> str:
        calls.append(ctx)
        return "ok"

    result = Registry([record]).dispatch(tool_call("record", {"ctx": "forged"}, id="c1"))
    assert result.status is ToolStatus.INVALID_ARGUMENTS
    assert calls == []


def test_compensation_on_a_non_mutating_tool_is_rejected() -> None:
    def undo(args: dict[str, Any], result: str, ctx: ToolContext) -> None:
        return None

    with pytest.raises(ToolDefinitionError):
        tool(description="Read.", compensation=undo)

    @tool(description="Write.", mutating=True, compensation=undo)
    def write() -> str:
        return "ok"

    assert write.compensation is undo


def test_calling_a_tool_directly_calls_the_function() -> None:
    assert isinstance(lookup, Tool)
    assert lookup("A1", 2, 9.5) == "order A1 x2"
    assert lookup(order_id="B2", quantity=3, price=1.0, verbose=True) == "order B2 x3"


def test_validate_applies_defaults_and_coerces() -> None:
    assert lookup.validate({"order_id": "A1", "quantity": 2, "price": 3}) == {
        "order_id": "A1",
        "quantity": 2,
        "price": 3.0,
        "verbose": False,
        "tags": None,
    }


def test_spec_flags() -> None:
    def undo(args: dict[str, Any], result: str, ctx: ToolContext) -> None:
        return None

    @tool(description="Refund.", order_id="The order.", mutating=True, requires_confirmation=True, timeout=2.5)
    def refund(order_id: str) -> str:
        return order_id

    @tool(description="Charge.", mutating=True, compensation=undo)
    def charge() -> str:
        return ""

    spec = refund.spec()
    assert isinstance(spec, ToolSpec)
    assert spec.name == "refund"
    assert spec.description == "Refund."
    assert spec.parameters == refund.parameters
    assert spec.mutating is True
    assert spec.requires_confirmation is True
    assert spec.timeout == 2.5
    assert spec.compensable is False
    assert charge.spec().compensable is True
    assert charge.spec().requires_confirmation is False
    plain = lookup.spec()
    assert (plain.mutating, plain.requires_confirmation, plain.timeout, plain.compensable) == (
        False,
        False,
        None,
        False,
    )
    assert spec.schema() == ToolSchema(name="refund", description="Refund.", parameters=refund.parameters)


def test_spec_survives_json() -> None:
    spec = lookup.spec()
    assert ToolSpec.model_validate_json(spec.model_dump_json()) == spec


def test_registry_exposes_specs_and_schemas_by_name() -> None:
    @tool(description="Ping.")
    def ping() -> str:
        return "pong"

    registry = Registry([lookup, ping])
    assert registry.names == ["lookup", "ping"]
    assert "ping" in registry
    assert "pong" not in registry
    assert len(registry) == 2
    assert registry.get("ping") is ping
    assert registry.get("nope") is None
    assert registry.specs() == {"lookup": lookup.spec(), "ping": ping.spec()}
    assert [s.name for s in registry.schemas()] == ["lookup", "ping"]


def test_a_ctx_parameter_not_annotated_tool_context_is_refused_at_definition_saying_how() -> None:
    with pytest.raises(ToolDefinitionError) as refused:

        @tool(description="Look an order up.", order_id="The order id.")
        def lookup(order_id: str, ctx) -> str:  # type: ignore[no-untyped-def]
            return order_id

    assert str(refused.value) == (
        "tool 'lookup': parameter 'ctx' is not annotated `ToolContext`, so the model would have to invent it; "
        "annotate it (ctx: ToolContext) to have the runner pass the context"
    )
    with pytest.raises(ToolDefinitionError, match="'context' is not annotated `ToolContext`"):

        @tool(description="Look an order up.")
        def lookup_too(order_id: str, context) -> str:  # type: ignore[no-untyped-def]
            return order_id


def test_a_context_the_model_fills_may_keep_its_name_when_its_type_says_so() -> None:
    @tool(description="Search.", context="Words around the query.")
    def search(query: str, context: str, ctx: ToolContext) -> str:
        return query

    assert search.context_param == "ctx"
    assert set(search.parameters["properties"]) == {"query", "context"}


def test_a_bare_tool_decorator_works_described_by_the_docstring() -> None:
    @tool
    def lookup(order_id: str, ctx: ToolContext) -> str:
        """Look an order up."""
        return order_id

    assert lookup.description == "Look an order up." and lookup.context_param == "ctx"
    assert Registry([lookup]).names == ["lookup"]
    run = Agent(FakeModel([tool_call("lookup", {"order_id": "A-1"}), "Done."]), Registry([lookup])).run("Go")
    assert [r.content for r in run.records] == ["A-1"]


def test_a_bare_tool_without_a_docstring_says_to_describe_it() -> None:
    with pytest.raises(ToolDefinitionError, match=r"tool 'lookup' has no description: give it a docstring"):

        @tool
        def lookup(order_id: str) -> str:
            return order_id
