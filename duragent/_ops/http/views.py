"""The JSON shapes of the runs API, the same for both engines. `GET /runs/{id}` keeps the field names of
`job status --json` (`status`, `percent_complete`, `progress`, `steps`, `consumption`, ...) and adds
`pending_approvals` and `audit`; a field one engine cannot know is null (e.g. `lease` under Temporal)."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, field_validator

EngineName = Literal["temporal", "checkpoints"]


class ProgressView(BaseModel):
    """What the SSE `progress` events carry: actions done, the estimate of all actions, what happens now."""

    step: int
    total: int | None
    label: str


class Consumption(BaseModel):
    steps: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0


class StepView(BaseModel):
    """One action: a model call, a tool call or an undo (`step_name`: model_call | tool:NAME | compensate:NAME)."""

    step: int
    step_name: str
    status: str  # in_progress | completed | failed | cancelled
    label: str
    started_at: str | None
    finished_at: str | None
    attempts: int
    idempotency_key: str | None = None


class PendingView(BaseModel):
    call_id: str
    tool: str
    arguments: dict[str, Any] | str
    arguments_hash: str
    requested_at: str
    deadline: str


class AuditView(BaseModel):
    """One decision, rejection or expiry. `approver` is who the server authenticated, never a request field."""

    call_id: str
    outcome: str  # approved | declined | expired | rejected | withdrawn
    approver: str | None
    reason: str
    at: str
    tool: str | None = None
    arguments_hash: str | None = None
    rejection: str | None = None
    signed: bool = False


class CompensationView(BaseModel):
    tool: str
    status: str  # compensated | failed | pending
    key: str | None = None


class LeaseView(BaseModel):
    owner: str | None
    expires_at: str | None
    live: bool


class WebhookView(BaseModel):
    url: str  # without credentials or query string
    status: str  # pending | delivered | failed
    attempts: int
    delivered_at: str | None = None
    history: list[dict[str, Any]] = Field(default_factory=list)


class RunView(BaseModel):
    engine: EngineName
    run_id: str
    agent: str | None
    status: str
    stop: str | None = None
    stop_detail: str | None = None
    output: str | None = None
    error: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    finished_at: str | None = None
    attempts: int | None = None
    percent_complete: float | None = None
    progress: ProgressView
    consumption: Consumption
    steps: list[StepView]
    pending_approvals: list[PendingView]
    audit: list[AuditView]
    compensations: list[CompensationView] = Field(default_factory=list)
    remaining_compensations: list[str] = Field(default_factory=list)
    not_compensable: list[str] = Field(default_factory=list)
    cancel_requested: bool = False
    lease: LeaseView | None = None
    webhooks: list[WebhookView] = Field(default_factory=list)
    options: dict[str, Any] = Field(default_factory=dict)
    worker_answered: bool = Field(True, description="False: no worker answered; live fields are the last known.")


class RunListItem(BaseModel):
    """One run in `GET /runs`."""

    run_id: str
    agent: str | None
    status: str
    stop: str | None = None
    created_at: str | None = None
    finished_at: str | None = None
    step: int | None = None
    pending_approvals: int = 0


class InboxItem(PendingView):
    """A pending approval across runs, for the inbox."""

    run_id: str
    agent: str | None
    # Where the run sits in a delegation tree: a run nobody delegated is its own root, path [run_id].
    # Deciding is done on `run_id` itself; the root says which top-level run waits on it.
    root_run_id: str
    path: list[str] = Field(description="Run ids from the root down to `run_id`.")


# -- requests ------------------------------------------------------------------------------------------


class _Request(BaseModel):
    """A request body: unknown fields refused, and no text that JSON can spell but nothing can store."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("*")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        # JSON may spell a lone surrogate ("\ud800"); no UTF-8 store, Temporal payload or log line can hold
        # one, so the engines failed on it (a 500) long after the request was accepted.
        try:
            json.dumps(value, ensure_ascii=False).encode()
        except UnicodeEncodeError:
            raise ValueError("text must be valid Unicode (a lone surrogate such as \\ud800 is not)") from None
        return value


class StartRequest(_Request):
    """`POST /runs`. Unknown fields are refused (a misspelt option must not be silently dropped)."""

    agent: StrictStr = Field(min_length=1, max_length=200, description="An agent the engine serves, by name.")
    task: StrictStr | None = Field(None, max_length=20_000, description="Overrides the agent's default task.")
    run_id: StrictStr | None = Field(
        None, min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:@-]*$", description="Never reused."
    )
    options: dict[str, Any] = Field(default_factory=dict, description="The agent's per-run options.")
    model: StrictStr | None = Field(None, description="A model the workers declare, by name.")
    webhook: StrictStr | None = Field(
        None, max_length=2000, description="POSTed once, signed, when the run ends: https, or http to loopback."
    )
    stream: StrictBool = Field(
        False, description="The model's text on the run's event stream as it is written (Temporal engine)."
    )


class DecisionRequest(_Request):
    """`POST /runs/{id}/approvals/{call_id}`. Who decides is the caller's token identity, never a field here."""

    approve: StrictBool
    reason: StrictStr = Field("", max_length=2000)
    arguments_hash: StrictStr | None = Field(
        None,
        pattern=r"^[0-9a-f]{64}$",
        description="The sha256 of the arguments the approver saw (required to approve).",
    )


class CancelRequest(_Request):
    """`POST /runs/{id}/cancel`: no body, or `{}`. Anything else is refused (422) rather than ignored, so a
    body of random bytes never cancels a run."""


class Started(BaseModel):
    run_id: str


class Cancelled(BaseModel):
    run_id: str
    cancel_requested: bool
    by: str
