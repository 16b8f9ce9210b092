"""Custom search attributes: how Temporal visibility finds runs (e.g. all runs awaiting approval)
without asking each workflow. Defined once; the dev server, the test servers and a real cluster
register these same keys."""

from __future__ import annotations

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest, ListSearchAttributesRequest
from temporalio.client import Client
from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes
from temporalio.service import RPCError, RPCStatusCode

from agentic import Usage

AGENT_STATUS = SearchAttributeKey.for_keyword("AgentStatus")
AGENT_NAME = SearchAttributeKey.for_keyword("AgentName")
AGENT_STEP = SearchAttributeKey.for_int("AgentStep")
AGENT_PENDING_APPROVALS = SearchAttributeKey.for_int("AgentPendingApprovals")
AGENT_TOKENS = SearchAttributeKey.for_int("AgentTokens")
AGENT_COST = SearchAttributeKey.for_float("AgentCost")
AGENT_STOP = SearchAttributeKey.for_keyword("AgentStop")
# The agent a run was handed to (handoffs): written only by runs that hand over, so a run that never does
# writes nothing more, and replaying one recorded before it issues the commands it did.
AGENT_ACTIVE = SearchAttributeKey.for_keyword("AgentActive")

ALL: tuple[SearchAttributeKey, ...] = (  # type: ignore[type-arg]
    AGENT_STATUS,
    AGENT_NAME,
    AGENT_STEP,
    AGENT_PENDING_APPROVALS,
    AGENT_TOKENS,
    AGENT_COST,
    AGENT_STOP,
    AGENT_ACTIVE,
)


def status_values(
    status: str, agent: str, pending: int, stop: str, active: str | None = None
) -> dict[SearchAttributeKey, object]:  # type: ignore[type-arg]
    """What a run shows of its state whenever it changes (duragent/_workflows/visibility.py); `active`: the
    agent it was handed to, once it was."""
    values: dict[SearchAttributeKey, object] = {  # type: ignore[type-arg]
        AGENT_STATUS: status,
        AGENT_NAME: agent,
        AGENT_PENDING_APPROVALS: pending,
        AGENT_STOP: stop,
    }
    if active is not None:
        values[AGENT_ACTIVE] = active
    return values


def progress_values(consumed: Usage) -> dict[SearchAttributeKey, object]:  # type: ignore[type-arg]
    """What a run shows of its progress, refreshed by workflow time and on status changes (visibility.py)."""
    return {
        AGENT_STEP: consumed.steps,
        AGENT_TOKENS: consumed.input_tokens + consumed.output_tokens,
        AGENT_COST: consumed.cost,
    }


def at_start(agent: str, consumed: Usage) -> TypedSearchAttributes:
    """What a run shows as it starts, set by the client with the start: exactly what the workflow's first
    publish would upsert, so that upsert — a history event and a visibility write per run — is not needed.
    A run started without them (an older client, a raw start) upserts them itself."""
    values = {**status_values("running", agent, 0, ""), **progress_values(consumed)}
    return TypedSearchAttributes([SearchAttributePair(key, value) for key, value in values.items()])  # type: ignore[misc]


# The server's names for each indexed value type, as the CLI flag spells them.
_CLI_TYPE = {
    IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD: "Keyword",
    IndexedValueType.INDEXED_VALUE_TYPE_INT: "Int",
    IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE: "Double",
}


def dev_server_flags() -> list[str]:
    """`--search-attribute Name=Type` flags for `temporal server start-dev`."""
    flags: list[str] = []
    for key in ALL:
        flags += ["--search-attribute", f"{key.name}={_CLI_TYPE[key.indexed_value_type]}"]
    return flags


async def register(client: Client) -> None:
    """Register the attributes through the operator service (what the time-skipping server and a fresh
    cluster need; the dev server takes them as flags). Already-registered keys are left alone."""
    try:
        existing = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=client.namespace)
        )
        registered = set(existing.custom_attributes)
    except RPCError as exc:
        if exc.status != RPCStatusCode.UNIMPLEMENTED:  # the time-skipping server cannot list them
            raise
        registered = set()
    missing = {key.name: key.indexed_value_type for key in ALL if key.name not in registered}
    if missing:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(namespace=client.namespace, search_attributes=missing)
        )
