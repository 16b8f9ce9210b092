"""Tools: a function plus what the model and the runners need to know about it.

`@tool(description=..., <param>="doc", ...)` builds the JSON schema from the signature and the
per-parameter docs, and a pydantic model that validates arguments before the function is called.
A parameter annotated `ToolContext` is not shown to the model: the runner injects it, carrying the
idempotency key, the run's services (`deps`), heartbeats and cooperative cancellation.
"""

from __future__ import annotations

import functools
import inspect
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, Field, create_model

from agentic.delegation import DelegateRef
from agentic.errors import AgenticError, ToolDefinitionError
from agentic.models.base import ToolSchema
from agentic.omit_defaults import OmitDefaults


class ToolCancelled(AgenticError):
    """Raised inside a tool by `ToolContext.sleep`/`check_cancelled` once the runner asked it to stop."""


@dataclass
class ToolContext:
    """What a runner hands to a tool call besides its arguments.

    `idempotency_key` is stable for this tool call across retries, replays and new processes; a
    mutating tool must make its effect conditional on it.
    """

    run_id: str
    call_id: str  # the runner's identity of the call (`ToolCall.uid`), unique within the run
    idempotency_key: str
    deps: Any = None  # the services of the worker (or the in-process agent): an HTTP client, a ledger...
    options: Any = None  # the run's options, validated by the agent's options model (None: it has none)
    attempt: int = 1
    compensates: str | None = None  # on a compensation call: the key of the effect being undone
    heartbeat_fn: Callable[[Any], None] | None = None
    cancel_event: threading.Event = field(default_factory=threading.Event)

    def heartbeat(self, details: Any = None) -> None:
        if self.heartbeat_fn is not None:
            self.heartbeat_fn(details)

    @property
    def cancelled(self) -> bool:
        return self.cancel_event.is_set()

    def cancel(self) -> None:
        self.cancel_event.set()

    def check_cancelled(self) -> None:
        if self.cancelled:
            raise ToolCancelled(f"tool call {self.call_id} was cancelled")

    def sleep(self, seconds: float, slice_seconds: float = 0.2) -> None:
        """Wait while staying cancellable and alive: long tools must not block a cancellation."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self.check_cancelled()
            self.heartbeat()
            self.cancel_event.wait(min(slice_seconds, left))
        self.check_cancelled()


class MCPToolRef(BaseModel):
    """Where a tool an MCP server lists lives: the server, by its name in the agent (`MCPServer.name`), and
    the tool's own name there (the model sees it prefixed: `files__read`)."""

    model_config = ConfigDict(frozen=True)

    server: str
    tool: str


class ToolSpec(OmitDefaults):
    """Pure data about a tool: what the agent loop and the durable runners decide with."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    parameters: dict[str, Any]
    mutating: bool = False
    requires_confirmation: bool = False
    timeout: float | None = None
    approval_timeout: float | None = None
    compensable: bool = False
    # Left out of the payload when unset, so the specs of an agent's own tools serialise as they always did.
    mcp: MCPToolRef | None = Field(None, description="Set: a tool of an MCP server.")
    delegate: DelegateRef | None = Field(None, description="Set: another agent, called with a task (`Agent.as_tool`).")
    handoff: str | None = Field(None, description="Set: hands the run to this agent (`Agent(handoffs=...)`).")

    def schema(self) -> ToolSchema:
        return ToolSchema(name=self.name, description=self.description, parameters=self.parameters)


# A compensation receives the original call's arguments and result, and the context of the undo call.
Compensation = Callable[[dict[str, Any], str, ToolContext], Any]


@dataclass(frozen=True)
class Tool:
    """A callable tool. Calling it directly calls the function, unvalidated, as plain Python."""

    name: str
    description: str
    fn: Callable[..., Any]
    args_model: type[BaseModel]
    context_param: str | None = None
    mutating: bool = False
    requires_confirmation: bool = False
    timeout: float | None = None
    approval_timeout: float | None = None
    compensation: Compensation | None = None
    delegate: DelegateRef | None = None  # set by `Agent.as_tool`: this tool hands a task to another agent
    agent: Any = None  # that agent (an `agentic.Agent`), which in-process runs execute inline

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    @property
    def parameters(self) -> dict[str, Any]:
        return _clean_schema(self.args_model.model_json_schema())

    def spec(self) -> ToolSpec:
        return self._spec

    @functools.cached_property
    def _spec(self) -> ToolSpec:
        # Building the JSON schema costs about a millisecond a tool; runners ask for it on every step.
        return ToolSpec(
            name=self.name,
            description=self.description,
            parameters=self.parameters,
            mutating=self.mutating,
            requires_confirmation=self.requires_confirmation,
            timeout=self.timeout,
            approval_timeout=self.approval_timeout,
            compensable=self.compensation is not None or self.delegate is not None,
            delegate=self.delegate,
        )

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Arguments as the function will receive them; raises pydantic.ValidationError."""
        model = self.args_model.model_validate(dict(arguments))
        return {name: getattr(model, name) for name in type(model).model_fields}


@overload
def tool(description: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    description: str | None = None,
    *,
    name: str | None = None,
    mutating: bool = False,
    requires_confirmation: bool = False,
    timeout: float | None = None,
    approval_timeout: float | None = None,
    compensation: Compensation | None = None,
    docs: Mapping[str, str] | None = None,
    **param_docs: str,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    description: str | Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    mutating: bool = False,
    requires_confirmation: bool = False,
    timeout: float | None = None,
    approval_timeout: float | None = None,
    compensation: Compensation | None = None,
    docs: Mapping[str, str] | None = None,
    **param_docs: str,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Declare a tool. Every keyword that is not an option documents the parameter of that name.

        @tool(description="Refund an order.", order_id="The order id.")
        def refund(order_id: str, ctx: ToolContext) -> str: ...

    Bare `@tool` works too: the description is then the function's docstring (a tool needs one).
    `docs=` documents parameters whose names collide with the options (e.g. a parameter `name`).
    A doc for a parameter the function does not have is an error, so a typo cannot go unnoticed.
    """
    if callable(description):  # bare `@tool`: the function itself, described by its docstring
        return tool()(description)
    if timeout is not None and timeout <= 0:
        raise ToolDefinitionError(f"timeout must be positive, got {timeout}")
    if approval_timeout is not None and (approval_timeout <= 0 or not requires_confirmation):
        raise ToolDefinitionError("approval_timeout needs requires_confirmation=True and a positive value")
    if compensation is not None and not mutating:
        raise ToolDefinitionError("only a mutating tool has effects to compensate")
    all_docs = {**param_docs, **(docs or {})}

    def decorate(fn: Callable[..., Any]) -> Tool:
        tool_name = name or fn.__name__
        args_model, context_param = _arguments_model(tool_name, fn, all_docs)
        return Tool(
            name=tool_name,
            description=description if isinstance(description, str) else _described(tool_name, fn),
            fn=fn,
            args_model=args_model,
            context_param=context_param,
            mutating=mutating,
            requires_confirmation=requires_confirmation,
            timeout=timeout,
            approval_timeout=approval_timeout,
            compensation=compensation,
        )

    return decorate


def _described(tool_name: str, fn: Callable[..., Any]) -> str:
    """The description of a tool declared without one: its docstring, which the model reads to choose it."""
    doc = inspect.getdoc(fn)
    if not doc:
        raise ToolDefinitionError(
            f"tool {tool_name!r} has no description: give it a docstring, or @tool(description=...)"
        )
    return doc


# Names that read as the runner's context: a parameter so named but not annotated `ToolContext` would be shown to
# the model as an argument to invent, instead of being injected.
CONTEXT_NAMES = ("ctx", "context", "tool_context")


def _arguments_model(
    tool_name: str, fn: Callable[..., Any], docs: Mapping[str, str]
) -> tuple[type[BaseModel], str | None]:
    signature = inspect.signature(fn)
    hints = get_type_hints(fn, include_extras=True)  # keeps Annotated constraints (a pattern, a range)
    fields: dict[str, Any] = {}
    context_param: str | None = None
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(f"tool {tool_name!r}: *args/**kwargs cannot be described to a model")
        annotation = hints.get(param.name, Any)
        if annotation is ToolContext:
            context_param = param.name
            continue
        if param.name in CONTEXT_NAMES and (param.name == "ctx" or annotation is Any):
            raise ToolDefinitionError(
                f"tool {tool_name!r}: parameter {param.name!r} is not annotated `ToolContext`, so the model would "
                f"have to invent it; annotate it ({param.name}: ToolContext) to have the runner pass the context"
            )
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (annotation, Field(default, description=docs.get(param.name)))
    unknown = sorted(set(docs) - set(fields))
    if unknown:
        raise ToolDefinitionError(f"tool {tool_name!r} documents parameters it does not have: {unknown}")
    model = create_model(  # type: ignore[call-overload]
        f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )
    return model, context_param


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    # Pydantic's titles are noise to a model and cost tokens on every call.
    schema = {k: v for k, v in schema.items() if k != "title"}
    schema["properties"] = {
        prop: {k: v for k, v in body.items() if k != "title"} for prop, body in schema.get("properties", {}).items()
    }
    schema.setdefault("required", [])
    return schema
