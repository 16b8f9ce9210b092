"""`Run`: what a finished (or stopped) run hands back, the same from every runner."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, TypeAdapter

from agentic.budget import Stop, Usage
from agentic.handoffs import HandoffRecord
from agentic.loop import LoopState, ToolRecord, trajectory
from agentic.messages import Message
from agentic.omit_defaults import OmitDefaults
from agentic.saga import CompensationPlan, CompensationRecord
from agentic.verdicts import CheckRecord


class Run(OmitDefaults):
    """How a run ended: why it stopped (`stop`, `stop_detail`), its answer (`output`), the tokens and cost it
    used (`usage`), every tool call resolved (`records`; `trajectory()` names the successful ones), the
    compensations a saga ran, and the transcript (`messages`). `Agent.run` returns one; a durable run's
    `AgentResult` has the same fields."""

    model_config = ConfigDict(frozen=True)

    messages: list[Message]
    stop: Stop
    output: Any = Field(
        None,
        description="The answer: text, or for a typed agent the typed value (JSON text where the type is not known).",
    )
    stop_detail: str | None = None
    usage: Usage = Field(default_factory=Usage)
    records: list[ToolRecord] = Field(default_factory=list)
    compensations: list[CompensationRecord] = Field(default_factory=list)
    not_compensable: list[str] = Field(default_factory=list)
    undo: CompensationPlan | None = Field(
        None,
        description="A delegated run that answered: what undoing it would take, should its parent be abandoned.",
    )
    handoffs: list[HandoffRecord] = Field(default_factory=list, description="The run's handoffs, in order.")
    checks: list[CheckRecord] = Field(default_factory=list, description="Every verdict of the agents' checks.")
    children: dict[str, Run] = Field(
        default_factory=dict,
        description="In-process: the runs this run delegated to, by run id (durable runners keep them as runs).",
    )

    @classmethod
    def from_loop(cls, messages: list[Message], state: LoopState, **extra: object) -> Run:
        if state.stop is None:
            raise ValueError("the loop has not finished")
        return cls(
            messages=messages,
            stop=state.stop,
            output=state.output,
            stop_detail=state.stop_detail,
            usage=state.consumed,
            records=state.records,
            handoffs=state.handoffs,
            checks=state.checks,
            **extra,
        )

    def output_as(self, output_type: Any) -> Any:
        """The answer as `output_type`: decodes the JSON a typed answer is kept as (what a durable run's result
        holds when the client did not know the agent's type); an already typed answer is validated as it is."""
        if self.output is None:
            return None
        adapter: TypeAdapter[Any] = TypeAdapter(output_type)
        if isinstance(self.output, str):
            return adapter.validate_json(self.output)
        return adapter.validate_python(self.output)

    @property
    def answered_by(self) -> str | None:
        """The agent that had the run last: the last handoff's target (None: never handed over)."""
        return self.handoffs[-1].target if self.handoffs else None

    @property
    def step_count(self) -> int:
        """Steps consumed, including any carried over from the run this one resumed."""
        return self.usage.steps

    @property
    def input_tokens(self) -> int:
        return self.usage.input_tokens

    @property
    def output_tokens(self) -> int:
        return self.usage.output_tokens

    @property
    def cost(self) -> float:
        return self.usage.cost

    def trajectory(self) -> list[str]:
        """Names of the tools that executed successfully, in order."""
        return trajectory(self.records)

    def blocked_tools(self) -> list[str]:
        """Names of the tools that did not run because approval was declined or never came."""
        return [r.call.name for r in self.records if r.status.blocked]
