"""`Agent`: one agent definition — model, tools, instructions, budget, policies — and the in-process
runner, which executes the loop directly with no durability of its own.

The same object runs durably: a worker serves it (`duragent.build_worker(agents=[agent])`) and a client
starts runs of it by name. Resumption in-process is the caller's: pass the saved transcript as `history=`
and the saved consumption as `consumed=`, so the budget continues counting instead of granting a fresh
allowance.
"""

from __future__ import annotations

import dataclasses
import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from agentic.approvals import ApprovalPolicy
from agentic.budget import Budget, Usage
from agentic.checks import Check, judge
from agentic.delegation import (
    TASK,
    DelegateRef,
    Delegation,
    child_delegation,
    child_run_id,
    failed_text,
    invalid_task_text,
    limit_of,
    refused_text,
    reply_text,
    reserve,
    task_of,
)
from agentic.errors import AgenticError, ModelError
from agentic.handoffs import Role, as_seen_by, transfer_spec
from agentic.loop import (
    AgentLoop,
    CallModel,
    Finish,
    LoopState,
    RunTool,
    idempotency_key,
    initial_messages,
    tool_schemas,
)
from agentic.mcp.server import MCPServer, MCPUnavailable
from agentic.mcp.toolset import checked_off_loop, merged
from agentic.messages import Message, ToolCall
from agentic.models.base import Model, ModelReply, ModelSettings, ToolSchema, ask
from agentic.output import FINAL_ANSWER, OutputType, as_text
from agentic.registry import Registry, run_sync
from agentic.results import ToolResult, ToolStatus
from agentic.run import Run
from agentic.saga import SagaPolicy, delegated, undo_plan
from agentic.spec import AgentSpec
from agentic.tools import Tool, ToolContext, ToolSpec, tool

if TYPE_CHECKING:
    from agentic.conversation import Conversation

# A name becomes part of run ids, search attributes and activity labels: keep it plain.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# What model providers accept as a function name.
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def effective_settings(agent: ModelSettings | None, run: ModelSettings | None) -> ModelSettings | None:
    """The agent's model settings with the run's explicitly set fields taking precedence."""
    if agent is None:
        return run
    return agent.override(run)


class InvalidOptions(AgenticError, ValueError):
    """A run's options do not fit the agent's options model: bad input, never worth retrying."""


@dataclass
class Agent:
    model: Model
    """Any `Model`: a scripted `FakeModel`, the OpenAI-compatible adapter, or your own."""
    registry: Registry = field(default_factory=Registry)
    """The tools the model may call; its `confirm` gates tools that require confirmation in-process."""
    system: str = ""
    """The standing instruction, prepended to every run."""
    budget: Budget = field(default_factory=Budget)
    """Limits checked before each model call, against consumption including any carried over."""
    deps: Any = None
    """Services handed to tools through `ToolContext.deps` (an HTTP client, a ledger...). A worker may
    supply its own (`build_worker(deps=...)`); in-process, these are used."""
    tool_attempts: int = 3
    """Attempts for a tool that raises `ToolRetry`, with the same idempotency key each time."""
    model_attempts: int = 3
    """Attempts for a model call failing retryably (429, 5xx, timeouts)."""
    max_retry_wait: float = 30.0
    """Cap on a provider's retry-after, so one answer cannot stall the process indefinitely."""
    name: str | None = None
    """How workers, clients and the Web UI know this agent; required to run it durably."""
    description: str = ""
    """One line for people: shown in run summaries and listings."""
    task: str | None = None
    """The task a run gets when it is started without one."""
    approvals: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    """Durable runs: how long an approval may wait and whether a decline or expiry abandons the run."""
    saga: SagaPolicy = field(default_factory=SagaPolicy)
    """Durable runs: how hard each compensation is retried before the run is `compensation_failed`."""
    options: type[BaseModel] | None = None
    """The pydantic model of this agent's per-run options, if it takes any; tools read the run's
    validated options as `ToolContext.options`. The engine never knows their fields."""
    model_settings: ModelSettings | None = None
    """How the model is asked (temperature, seed, max_tokens, tool_choice...), in every runner; a run may
    override fields of it."""
    estimate: Callable[[Any], int] | None = None
    """How many actions (model calls, tool calls, compensations) a run will probably take, given its
    validated options: the total behind progress percentages. None: no estimate."""
    mcp: Sequence[MCPServer] = ()
    """MCP servers whose tools the model may call, named `<server>__<tool>` (`agentic.mcp.MCPServer`). A run
    lists them once, when it starts, and keeps that list to its end (durable runners record it)."""
    output_type: Any = None
    """The type of the answer (a pydantic model, or any type pydantic validates): the model answers by calling
    `final_answer` with it (or with structured output), the answer is validated, and `Run.output` is the typed
    value. None: the answer is the model's text (`agentic.output`)."""
    output_retries: int = 2
    """Times the model may be sent back — an answer that fails validation, a check that says `SendBack` — before
    the run stops (`Stop.INVALID_OUTPUT`, `Stop.CHECK_REFUSED`)."""
    output_checks: Sequence[Check] = ()
    """Checks of the final answer (the typed value, or the text): each returns None, `SendBack(reason)` or
    `Refuse(reason)` (`agentic.checks`)."""
    argument_checks: Mapping[str, Sequence[Check]] = field(default_factory=dict)
    """Checks of a tool's arguments (a dict), by tool name; judged before the call is approved or runs."""
    handoffs: Sequence[Agent | str] = ()
    """Agents this one may hand the run to (`transfer_to_<name>` tools; `agentic.handoffs`): the objects, or
    names a worker serves."""

    def __post_init__(self) -> None:
        # Zero attempts would fail mid-run (after a model call was paid for) instead of here.
        if self.tool_attempts < 1 or self.model_attempts < 1:
            raise ValueError("tool_attempts and model_attempts must be at least 1")
        if self.name is not None and not _NAME.match(self.name):
            raise ValueError(
                f"agent name {self.name!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
            )
        self.mcp = tuple(self.mcp)
        names = [server.name for server in self.mcp]
        if len(set(names)) != len(names):
            raise ValueError(f"agent {self.label}: two MCP servers share a name ({', '.join(names)})")
        self._output = OutputType(self.output_type) if self.output_type is not None else None
        if self.output_retries < 0:
            raise ValueError("output_retries must be at least 0")
        self.output_checks = tuple(self.output_checks)
        self.argument_checks = {name: tuple(checks) for name, checks in dict(self.argument_checks).items()}
        self.handoffs = tuple(self.handoffs)
        for target in self.handoffs:
            if isinstance(target, Agent) and target.name is None:
                raise ValueError(f"agent {self.label} hands off to an unnamed agent: Agent(..., name='billing')")
        if self._output is not None:
            if FINAL_ANSWER in self.registry.names:
                raise ValueError(f"agent {self.label} has a typed answer: no tool of its may be named {FINAL_ANSWER!r}")
            # The answer is a tool call: a model that may answer in text would answer in text. Unless the agent
            # says otherwise, it must call a tool (`final_answer` or another) every turn.
            if self.model_settings is None or "tool_choice" not in self.model_settings.model_fields_set:
                self.model_settings = (self.model_settings or ModelSettings()).override(
                    ModelSettings(tool_choice="required")
                )

    # -- typed answers, checks, handoffs ----------------------------------------------------------------

    def judge(self, reply: ModelReply) -> ModelReply:
        """The reply with what this agent's answer type and checks say of it (`agentic.checks.judge`)."""
        return judge(reply, self._output, self.output_checks, self.argument_checks)

    def output_of(self, answer: str | None) -> Any:
        """An answer as a run keeps it (text; JSON for a typed agent) as this agent's output: the typed value."""
        if answer is None or self._output is None:
            return answer
        return self._output.load(answer)

    def output_check(self, check: Check) -> Check:
        """A decorator: `@agent.output_check` adds `check` to the answer's checks."""
        self.output_checks = (*self.output_checks, check)
        return check

    def argument_check(self, *tools: str) -> Callable[[Check], Check]:
        """A decorator: `@agent.argument_check("refund")` adds the function to those tools' argument checks."""

        def add(check: Check) -> Check:
            for name in tools:
                self.argument_checks[name] = (*self.argument_checks.get(name, ()), check)  # type: ignore[index]
            return check

        return add

    def handoff_names(self) -> list[str]:
        return [target if isinstance(target, str) else str(target.name) for target in self.handoffs]

    def tool_specs(self) -> dict[str, ToolSpec]:
        """The registry's tools and a `transfer_to_<name>` tool per handoff."""
        specs = self.registry.specs()
        for target in self.handoffs:
            name = target if isinstance(target, str) else str(target.name)
            spec = transfer_spec(name, "" if isinstance(target, str) else target.description)
            if spec.name in specs:
                raise ValueError(f"agent {self.label}: a tool is named {spec.name!r}, the handoff to {name}'s name")
            specs[spec.name] = spec
        return specs

    def role(self, tools: Mapping[str, ToolSpec] | None = None) -> Role:
        """This agent as the loop knows it."""
        return Role(
            name=self.label,
            system=self.system,
            tools=dict(tools) if tools is not None else self.tool_specs(),
            output=self._output.spec if self._output is not None else None,
            output_retries=self.output_retries,
            model_settings=self.model_settings,
        )

    def team(self, lookup: Callable[[str], Agent] | None = None) -> dict[str, Agent]:
        """Every agent a run of this one may be handed to, transitively, by name (this one included when the
        team has any): handoffs given as objects, or by name through `lookup` (a worker's served agents)."""
        found: dict[str, Agent] = {}
        waiting: list[Agent] = [self]
        while waiting:
            agent = waiting.pop()
            if agent.label in found:
                continue
            found[agent.label] = agent
            for target in agent.handoffs:
                if isinstance(target, Agent):
                    waiting.append(target)
                elif target not in found:
                    known = next((a for a in [*found.values(), *waiting] if a.name == target), None)
                    if known is None and lookup is None:
                        raise ValueError(
                            f"agent {agent.label} hands off to {target!r} by name: in-process, give the Agent object"
                        )
                    waiting.append(known if known is not None else lookup(target))  # type: ignore[misc]
        for agent in found.values():
            if agent is not self and agent.mcp:
                raise ValueError(f"agent {agent.label} has MCP servers: it cannot take a run handed over (not yet)")
        return found if len(found) > 1 else {}

    # -- the definition, as data ----------------------------------------------------------------------

    def parse_options(self, raw: Mapping[str, Any] | BaseModel | None) -> BaseModel | None:
        """The run's options as the agent's options model; raises InvalidOptions naming the bad field."""
        if self.options is None:
            values = raw.model_dump() if isinstance(raw, BaseModel) else dict(raw or {})
            if values:
                raise InvalidOptions(f"agent {self.label} takes no options; got {', '.join(sorted(values))}")
            return None
        if isinstance(raw, self.options):
            return raw
        try:
            return self.options.model_validate(raw.model_dump() if isinstance(raw, BaseModel) else dict(raw or {}))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'options'}: {e['msg']}" for e in exc.errors())
            raise InvalidOptions(f"invalid options for agent {self.label}: {problems}") from None

    def spec(
        self,
        options: Mapping[str, Any] | BaseModel | None = None,
        *,
        model: str | None = None,
        lookup: Callable[[str], Agent] | None = None,
    ) -> AgentSpec:
        """What a durable runner records about this agent when a run starts (options validated); `lookup` finds
        the agents it hands off to by name (a worker's)."""
        parsed = self.parse_options(options)
        return AgentSpec(
            name=self.label,
            description=self.description,
            system=self.system,
            task=self.task,
            budget=self.budget,
            approvals=self.approvals,
            saga=self.saga,
            model=model or getattr(self.model, "name", type(self.model).__name__),
            options=parsed.model_dump(mode="json", exclude_defaults=True) if parsed is not None else {},
            estimated_actions=self.estimate(parsed) if self.estimate is not None else None,
            model_settings=self.model_settings,
            mcp_servers=[server.name for server in self.mcp],
            output=self._output.spec if self._output is not None else None,
            output_retries=self.output_retries,
            tools=self.tool_specs(),
            team={name: agent.role() for name, agent in self.team(lookup).items()},
        )

    @property
    def label(self) -> str:
        return self.name or "(unnamed)"

    def as_tool(
        self,
        name: str | None = None,
        description: str | None = None,
        *,
        max_steps: int | None = None,
        max_input_tokens: int | None = None,
        max_output_tokens: int | None = None,
        max_cost: float | None = None,
        options: Mapping[str, Any] | BaseModel | None = None,
        requires_confirmation: bool = False,
        approval_timeout: float | None = None,
    ) -> Tool:
        """This agent as a tool of another agent: the model calls it with a task string, and a run of this
        agent answers it (in-process and in the checkpoint runner inline; on Temporal as a child workflow).

        The child's whole budget is reserved out of what the calling run has left, capped by this agent's
        own budget and by `max_*` here; what it consumes is charged to the calling run. `options` are the
        options its runs get (validated now)."""
        if self.name is None:
            raise ValueError("an agent used as a tool needs a name: Agent(..., name='billing')")
        tool_name = name or self.name.replace(".", "_")
        if not _TOOL_NAME.match(tool_name):
            raise ValueError(f"tool name {tool_name!r}: use 1-64 letters, digits, '_' or '-'")
        parsed = self.parse_options(options)
        cap = Budget(max_steps, max_input_tokens, max_output_tokens, max_cost)
        ref = DelegateRef(
            agent=self.name,
            limit=limit_of(self.budget, cap),
            options=parsed.model_dump(mode="json", exclude_defaults=True) if parsed is not None else {},
        )
        child = self

        def delegate(task: str, ctx: ToolContext) -> str:
            # Dispatched by a registry outside any runner: the child runs with its cap alone. The runners
            # reserve out of the calling run's budget and charge the child's consumption to it instead.
            run = child.run(task, run_id=child_run_id(ctx.run_id or "local", ctx.call_id), budget=ref.limit)
            return reply_text(tool_name, run.stop, as_text(run.output), run.stop_detail)

        declared = tool(
            description or self.description or f"Hand a task to the agent {self.name}; it answers with its result.",
            name=tool_name,
            mutating=True,  # the other agent may change things; undoing it is undoing its effects
            requires_confirmation=requires_confirmation,
            approval_timeout=approval_timeout,
            docs={TASK: f"The task for {self.name}, with everything it needs to know."},
        )(delegate)
        return dataclasses.replace(declared, delegate=ref, agent=self)

    def schemas(self, recorded: Sequence[ToolSchema] = ()) -> list[ToolSchema]:
        """What the model is offered: the registry's tools, its handoffs, the MCP tools the run `recorded`,
        `final_answer` for a typed agent, and `give_up`."""
        return tool_schemas(self.tool_specs(), recorded, self._output.spec if self._output is not None else None)

    # -- tools from MCP servers -----------------------------------------------------------------------

    def mcp_server(self, name: str) -> MCPServer | None:
        return next((server for server in self.mcp if server.name == name), None)

    async def list_mcp_tools_async(self) -> dict[str, ToolSpec]:
        """Every MCP server's tools now, as this agent exposes them. Raises MCPUnavailable, MCPConfigError."""
        from agentic.mcp import client  # the SDK, loaded by runners that talk to servers

        return merged(self.registry.names, [await client.list_tools(server) for server in self.mcp])

    def list_mcp_tools(self) -> dict[str, ToolSpec]:
        """The same, with `tool_attempts` tries while a server is unreachable."""
        for attempt in range(1, self.tool_attempts + 1):
            try:
                return run_sync(self.list_mcp_tools_async)
            except MCPUnavailable:
                if attempt == self.tool_attempts:
                    raise
                time.sleep(min(2 ** (attempt - 1), self.max_retry_wait))
        raise AssertionError("unreachable")

    # -- one tool call, whatever its source -------------------------------------------------------------

    def dispatch(
        self, call: ToolCall, context: ToolContext, *, spec: ToolSpec | None = None, approved: bool | None = None
    ) -> ToolResult:
        """Run one call: an MCP tool when the run's recorded `spec` says so, else one of the registry's."""
        if spec is None or spec.mcp is None:
            return self.registry.dispatch(call, context, approved=approved)
        return run_sync(lambda: self.dispatch_mcp(call, context, spec, approved=approved))

    async def dispatch_mcp(
        self, call: ToolCall, context: ToolContext, spec: ToolSpec, *, approved: bool | None = None
    ) -> ToolResult:
        """An MCP tool call under the rules of the agent's own tools: arguments checked against the schema
        the server gave (in a thread, in bounded time), confirmation when required, then the call under the
        idempotency key."""
        from agentic.mcp import client

        assert spec.mcp is not None
        arguments = await checked_off_loop(spec, call)
        if isinstance(arguments, ToolResult):
            return arguments
        if spec.requires_confirmation and (denied := self.registry.denied(call, approved)) is not None:
            return denied
        server = self.mcp_server(spec.mcp.server)
        if server is None:
            return ToolResult.of(
                call, ToolStatus.ERROR, f"Error: {call.name} is gone: the agent has no MCP server {spec.mcp.server!r}."
            )
        return await client.call_tool(server, spec, call, arguments, context.idempotency_key)

    # -- conversations --------------------------------------------------------------------------------

    def conversation(self, budget: Budget | None = None, *, turn_budget: Budget | None = None) -> Conversation:
        """An in-process conversation with this agent: each `send` a run on the transcript so far
        (`agentic.conversation`). `budget` bounds the whole conversation; each turn gets `turn_budget` (default:
        the agent's) capped by what it has left."""
        from agentic.conversation import Conversation

        return Conversation(self, budget=budget, turn_budget=turn_budget)

    # -- the in-process runner ------------------------------------------------------------------------

    def run(
        self,
        task: str | None = None,
        history: Sequence[Message] | None = None,
        *,
        consumed: Usage | None = None,
        run_id: str | None = None,
        options: Mapping[str, Any] | BaseModel | None = None,
        model_settings: ModelSettings | None = None,
        budget: Budget | None = None,
        delegation: Delegation | None = None,
    ) -> Run:
        """Run to the end. `budget` overrides the agent's (a delegated run gets its reservation); `delegation`
        says which run delegated this one (set by the parent's runner)."""
        task = task if task is not None else self.task
        if task is None:
            raise ValueError(f"agent {self.label} has no default task: pass one to run()")
        parsed = self.parse_options(options)
        run_id = run_id or uuid.uuid4().hex
        team = self.team()
        specs = self.tool_specs()
        if self.mcp:  # listed once: the run keeps this tool set, whatever the servers list later
            specs = {**specs, **self.list_mcp_tools()}
        loop = AgentLoop(
            budget or self.budget,
            specs,
            LoopState(consumed=consumed or Usage()),
            role=self.role(specs),
            team={name: agent.role() for name, agent in team.items()},
        )
        messages = initial_messages(self.system, task, history)
        schemas = tool_schemas(loop.specs, (), self._output.spec if self._output is not None else None)
        settings = effective_settings(self.model_settings, model_settings)
        children: dict[str, Run] = {}
        while True:
            step = loop.next_step()
            # The agent whose turn it is: this one, or the one the run was handed to (its model, tools, type).
            active = team[loop.state.agent] if loop.state.agent is not None else self
            if isinstance(step, Finish):
                undo = None
                if delegation is not None and step.stop.answered:
                    raw = parsed.model_dump(mode="json", exclude_defaults=True) if parsed is not None else {}
                    undo = undo_plan(run_id, self.label, raw, loop.state.records, loop.own.tools, loop.team)
                run = Run.from_loop(messages, loop.state, undo=undo, children=children)
                # The answer as kept (JSON for a typed agent) becomes the answering agent's typed value.
                return run.model_copy(update={"output": active.output_of(run.output)})
            if isinstance(step, CallModel):
                if active is self:
                    reply = self._complete(messages, schemas, step.call_index, settings)
                else:
                    seen = as_seen_by(messages, active.system)
                    reply = active._complete(seen, active.schemas(), step.call_index, active.model_settings)
                messages += loop.model_replied(active.judge(reply))
            elif isinstance(step, RunTool) and step.spec is not None and step.spec.delegate is not None:
                messages += loop.tool_finished(active._delegate(step, run_id, loop, delegation, children))
            elif isinstance(step, RunTool):
                own_options = parsed if active is self else active.parse_options(options)
                messages += loop.tool_finished(active._dispatch(step, run_id, own_options))

    def _complete(
        self, messages: list[Message], schemas: list[Any], call_index: int, settings: ModelSettings | None
    ) -> ModelReply:
        for attempt in range(1, self.model_attempts + 1):
            try:
                # The call's index in this run, as the durable runners pass it: a scripted model answers
                # each run from its start, however many runs the same agent object has made before.
                return ask(self.model, messages, schemas, call_index=call_index, settings=settings)
            except ModelError as exc:
                if not exc.retryable or attempt == self.model_attempts:
                    raise
                # retry_after=0 means "retry now", not "no hint": only None falls back to backoff.
                wait = exc.retry_after if exc.retry_after is not None else 2 ** (attempt - 1)
                time.sleep(min(wait, self.max_retry_wait))
        raise AssertionError("unreachable")

    def _delegate(
        self,
        step: RunTool,
        run_id: str,
        loop: AgentLoop,
        delegation: Delegation | None,
        children: dict[str, Run],
    ) -> ToolResult:
        """A delegation, inline: a run of the other agent with a reservation out of this run's budget."""
        call, ref = step.call, step.spec.delegate if step.spec else None
        assert ref is not None
        declared = self.registry.get(call.name)
        task = task_of(call)
        if task is None:
            return ToolResult.of(call, ToolStatus.INVALID_ARGUMENTS, invalid_task_text(call.name))
        if step.needs_approval and (denied := self.registry.denied(call, None)) is not None:
            return denied
        reservation = reserve(loop.budget, loop.state.consumed, ref.limit)
        if isinstance(reservation, str):
            return ToolResult.of(call, ToolStatus.ERROR, refused_text(call.name, reservation))
        child: Agent | None = declared.agent if declared is not None else None
        if child is None:
            return ToolResult.of(call, ToolStatus.ERROR, failed_text(call.name, f"no agent {ref.agent!r} here"))
        child_id = child_run_id(run_id, call.identity)
        try:
            run = child.run(
                task,
                run_id=child_id,
                budget=reservation,
                options=ref.options,
                delegation=child_delegation(delegation, run_id, call),
            )
        except AgenticError as exc:  # its model failed for good: the durable runners report a failed child
            return ToolResult.of(call, ToolStatus.ERROR, failed_text(call.name, str(exc)))
        children[child_id] = run
        outcome = delegated(child_id, ref.agent, run.stop, run.usage, run.undo)
        return ToolResult.delegated(
            call, outcome, reply_text(call.name, run.stop, as_text(run.output), run.stop_detail)
        )

    def _dispatch(self, step: RunTool, run_id: str, options: BaseModel | None) -> ToolResult:
        call = step.call
        context = ToolContext(
            run_id=run_id,
            call_id=call.identity,
            idempotency_key=idempotency_key(run_id, call.identity),
            deps=self.deps,
            options=options,
        )
        for attempt in range(1, self.tool_attempts + 1):
            context.attempt = attempt
            result = self.dispatch(call, context, spec=step.spec)
            if result.status is not ToolStatus.RETRYABLE:
                break
        return result
