"""One planned undo (`CompensationStep`): which call's effect, under which key, in whose run.

It lives apart from `agentic.saga` because a delegation's outcome carries the child's planned undos
(`agentic.delegation.Delegated`), and the loop's records carry delegation outcomes: the data sits below
both. `agentic.saga` decides which steps a run plans.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from agentic.messages import ToolCall
from agentic.omit_defaults import OmitDefaults


def undo_key(original_key: str) -> str:
    return f"{original_key}:undo"


class CompensationStep(OmitDefaults):
    model_config = ConfigDict(frozen=True)

    call: ToolCall
    result: str
    result_ref: str | None = None  # the full result, when `result` is a claim-check preview
    original_key: str
    key: str
    uncertain: bool = False  # the original was interrupted: its effect may not exist
    # Set on the undos of a delegated run's effects, which its parent executes: whose effect it is (the
    # child's run id), which agent's tool declares the compensation, and that run's options. Unset: the
    # planning run's own effect (and the payload is what it always was).
    run_id: str | None = Field(None, description="The run that made the effect.")
    agent: str | None = Field(None, description="The agent whose tool undoes it.")
    options: dict[str, Any] = Field(default_factory=dict, description="That run's options.")
