"""Delegation, as pure rules: an agent called as another agent's tool (`Agent.as_tool`).

Every runner executes the same rules. The parent **reserves** the child's allowance out of what its own
budget has left (capped per delegation), the child runs with that reservation as its whole budget, and
when it ends its actual consumption is **charged** to the parent (the loop adds `Delegated.usage`); the
unused rest of the reservation simply was never spent. A child's run id is derived from the parent's
identity of the call, so a retry, a replay or a new worker finds the same child instead of making another;
the child's own tool calls get keys under that id.

What the parent's model reads about a child is its answer, or why it stopped without one — the same words
from every runner.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ConfigDict, Field

from agentic.budget import Budget, Stop, Usage
from agentic.messages import ToolCall
from agentic.omit_defaults import OmitDefaults
from agentic.undo import CompensationStep

TASK = "task"
"""The one argument a delegation tool takes: the task, in words, for the other agent."""

SEPARATOR = "~"
"""Between a parent's run id and its call's uid in a child's run id (`support-1a2b~2.1`)."""

_BUDGET_STOPS = (Stop.STEP_BUDGET, Stop.TOKEN_BUDGET, Stop.COST_BUDGET)


def child_run_id(parent_run_id: str, call_uid: str) -> str:
    """The run id of the child that answers the parent's call `call_uid`: the parent's idempotency key for
    that call (`{run_id}:{uid}`) made safe for workflow ids, URLs and the command line. The same on every
    retry, replay and resume of the parent, so there is only ever one child per call."""
    return f"{parent_run_id}{SEPARATOR}{call_uid}"


class DelegateRef(OmitDefaults):
    """What a tool spec records about a delegation: the agent it hands the task to (by name: durable runners
    find it among the agents they serve), the most one call may reserve (the per-delegation cap combined
    with the child agent's own budget), and the options its runs get."""

    model_config = ConfigDict(frozen=True)

    agent: str
    limit: Budget = Field(default_factory=Budget)
    options: dict[str, object] = Field(default_factory=dict)


class Delegation(OmitDefaults):
    """Set on a delegated run: where it sits in the tree, so its approvals name their root and path."""

    model_config = ConfigDict(frozen=True)

    path: list[str] = Field(description="Run ids from the root down to the parent.")
    call_id: str = Field(description="The parent's call (`ToolCall.uid`) this run answers.")
    tool: str = Field(description="The parent's tool that delegated.")

    @property
    def parent(self) -> str:
        return self.path[-1]

    @property
    def root(self) -> str:
        return self.path[0]

    def lineage(self, run_id: str) -> list[str]:
        """Run ids from the root down to `run_id` (the delegated run itself)."""
        return [*self.path, run_id]


def child_delegation(parent: Delegation | None, parent_run_id: str, call: ToolCall) -> Delegation:
    """What a run passes to the child it starts for `call`."""
    path = parent.lineage(parent_run_id) if parent is not None else [parent_run_id]
    return Delegation(path=path, call_id=call.identity, tool=call.name)


class Delegated(OmitDefaults):
    """What came of a delegation, attached to the parent's tool result and record: the child's run, how it
    stopped, what it consumed (charged to the parent) and, when it answered, what undoing it would take —
    its effects newest first, its own children's at their positions — should the parent be abandoned later.
    A child that stopped without an answer undid its own effects: nothing is left to the parent."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    agent: str
    stop: Stop
    usage: Usage = Field(default_factory=Usage)
    undo: list[CompensationStep] = Field(default_factory=list)
    not_compensable: list[str] = Field(default_factory=list)


def limit_of(own: Budget, cap: Budget) -> Budget:
    """The most one delegation may reserve: the child agent's own budget and the per-delegation cap, each
    limit the smaller of the two (None: unlimited)."""
    return Budget(
        max_steps=_smaller(own.max_steps, cap.max_steps),
        max_input_tokens=_smaller(own.max_input_tokens, cap.max_input_tokens),
        max_output_tokens=_smaller(own.max_output_tokens, cap.max_output_tokens),
        max_cost=_smaller(own.max_cost, cap.max_cost),
    )


def reserve(budget: Budget, consumed: Usage, limit: Budget) -> Budget | str:
    """The child's whole budget: what the parent has left, capped by `limit` — or, when some limit has
    nothing left, why no child may start. The child cannot spend more than this (its loop checks it before
    each model call, as any run's), so the parent's total stays within its own budget but for the one model
    call that crosses a token or cost limit, which no runner can know in advance."""
    steps = _left(budget.max_steps, consumed.steps)
    input_tokens = _left(budget.max_input_tokens, consumed.input_tokens)
    output_tokens = _left(budget.max_output_tokens, consumed.output_tokens)
    cost = None if budget.max_cost is None else round(budget.max_cost - consumed.cost, 10)
    for left, what in ((steps, "steps"), (input_tokens, "input tokens"), (output_tokens, "output tokens")):
        if left is not None and left < 1:
            return f"no {what} left"
    if cost is not None and cost <= 0:
        return "no cost left"
    return Budget(
        max_steps=_smaller(steps, limit.max_steps),
        max_input_tokens=_smaller(input_tokens, limit.max_input_tokens),
        max_output_tokens=_smaller(output_tokens, limit.max_output_tokens),
        max_cost=_smaller(cost, limit.max_cost),
    )


def task_of(call: ToolCall) -> str | None:
    """The task the model gave the delegation, or None when its arguments are not one non-empty string."""
    arguments = call.arguments
    if not isinstance(arguments, dict) or set(arguments) != {TASK}:
        return None
    task = arguments[TASK]
    return task if isinstance(task, str) and task.strip() else None


def invalid_task_text(tool: str) -> str:
    return f'Error: invalid arguments for {tool}: give exactly one argument, "{TASK}": a non-empty string.'


def refused_text(tool: str, why: str) -> str:
    return f"Error: {tool} was not started: this run has no budget left to reserve for it ({why})."


def failed_text(tool: str, why: str) -> str:
    return f"Error: {tool} failed: {why}"


def reply_text(tool: str, stop: Stop, output: str | None, detail: str | None) -> str:
    """What the parent's model reads: the child's answer, or why there is none."""
    if stop is Stop.ANSWERED:
        return output or ""
    why = f"{stop.value}: {detail}" if detail else stop.value
    if stop in _BUDGET_STOPS:
        return f"Error: {tool} stopped before finishing: it used up the budget reserved for it ({why})."
    return f"Error: {tool} stopped without an answer ({why})."


def owned(
    steps: Sequence[CompensationStep], run_id: str, agent: str, options: dict[str, object]
) -> list[CompensationStep]:
    """A child's planned undos, each naming the run, agent and options it belongs to (a grandchild's are
    already named), so the parent can execute them with the right tools."""
    # A step naming its run is a grandchild's; one naming only its agent, an agent the child was handed to.
    return [s if s.run_id is not None else _owned_by(s, run_id, agent, options) for s in steps]


def _owned_by(step: CompensationStep, run_id: str, agent: str, options: dict[str, object]) -> CompensationStep:
    return step.model_copy(update={"run_id": run_id, "agent": step.agent or agent, "options": options})


def _left(limit: int | None, used: int) -> int | None:
    return None if limit is None else limit - used


def _smaller(a: float | int | None, b: float | int | None):  # type: ignore[no-untyped-def]
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)
