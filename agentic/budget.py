"""What a run may spend (`Budget`), what it has spent (`Usage`), and why it stopped (`Stop`).

`Usage` is carried forward across resumptions: a run that crashed at step 7 of 8 and resumes with a
fresh allowance has silently been granted fifteen steps. Every runner starts from the consumption it was
given and the budget is checked against the total, before each model call.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, NonNegativeInt, PositiveInt


class Stop(StrEnum):
    """Why a run stopped: it answered, a budget ran out (steps, tokens, cost), the model repeated a call or
    gave up, a tool failed for good, an approval was declined or expired, or the run was cancelled."""

    ANSWERED = "answered"
    STEP_BUDGET = "step_budget"
    TOKEN_BUDGET = "token_budget"
    COST_BUDGET = "cost_budget"
    REPEATED_CALL = "repeated_call"
    GAVE_UP = "gave_up"
    TOOL_FAILED = "tool_failed"
    APPROVAL_DECLINED = "approval_declined"
    APPROVAL_EXPIRED = "approval_expired"
    CANCELLED = "cancelled"
    INVALID_OUTPUT = "invalid_output"  # the answer kept failing validation against the agent's output type
    CHECK_REFUSED = "check_refused"  # a check refused the answer or a call, or kept sending the model back

    @property
    def answered(self) -> bool:
        return self is Stop.ANSWERED


class Budget(BaseModel):
    """Limits on one run, counted including any consumption carried over from earlier processes.

    `None` means unlimited. Token limits apply to input and output separately because providers bill
    them at different prices and because long transcripts exhaust input first.
    """

    model_config = ConfigDict(frozen=True)

    max_steps: PositiveInt | None = None
    max_input_tokens: PositiveInt | None = None
    max_output_tokens: PositiveInt | None = None
    max_cost: NonNegativeFloat | None = None

    def __init__(
        self,
        max_steps: int | None = None,
        max_input_tokens: int | None = None,
        max_output_tokens: int | None = None,
        max_cost: float | None = None,
        **data: object,
    ) -> None:
        super().__init__(
            max_steps=max_steps,
            max_input_tokens=max_input_tokens,
            max_output_tokens=max_output_tokens,
            max_cost=max_cost,
            **data,
        )

    def exhausted_by(self, used: Usage) -> Stop | None:
        """The stop this consumption forces before the next model call, if any."""
        if self.max_steps is not None and used.steps >= self.max_steps:
            return Stop.STEP_BUDGET
        if self.max_input_tokens is not None and used.input_tokens >= self.max_input_tokens:
            return Stop.TOKEN_BUDGET
        if self.max_output_tokens is not None and used.output_tokens >= self.max_output_tokens:
            return Stop.TOKEN_BUDGET
        if self.max_cost is not None and used.cost >= self.max_cost:
            return Stop.COST_BUDGET
        return None


class Usage(BaseModel):
    """Consumption of a run: model calls made (steps), tokens and cost."""

    model_config = ConfigDict(frozen=True)

    steps: NonNegativeInt = 0
    input_tokens: NonNegativeInt = 0
    output_tokens: NonNegativeInt = 0
    cost: NonNegativeFloat = Field(default=0.0)

    def plus(self, other: Usage) -> Usage:
        return Usage(
            steps=self.steps + other.steps,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cost=round(self.cost + other.cost, 10),
        )
