"""Verdicts: what an agent's answer validation and checks decided about one model reply (`agentic.checks`
judges; the loop reads), and the audit record of each. Plain data, below the model interface, because a
`ModelReply` carries its verdicts."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from agentic.omit_defaults import OmitDefaults

Outcome = Literal["ok", "invalid", "send_back", "refuse"]


class Verdict(OmitDefaults):
    """What was decided about one part of a reply: its answer, or one of its tool calls."""

    model_config = ConfigDict(frozen=True)

    outcome: Outcome = "ok"
    check: str = Field("", description="The check that decided; empty: the answer's validation, or all passed.")
    reason: str = ""
    answer: str | None = Field(None, description="An accepted answer, as the run keeps it (JSON for a typed one).")
    checks: list[str] = Field(default_factory=list, description="The checks that passed before the decision.")


class Verdicts(OmitDefaults):
    """A reply's verdicts: of its text answer, and of its tool calls by position (from 1)."""

    model_config = ConfigDict(frozen=True)

    answer: Verdict | None = None
    calls: dict[int, Verdict] = Field(default_factory=dict)


class CheckRecord(OmitDefaults):
    """The audit of one verdict: which step, what was judged (`answer`, or a tool call), the outcome and why."""

    model_config = ConfigDict(frozen=True)

    step: int
    target: str = Field(description="`answer`, or the tool's name.")
    call_id: str = Field("", description="The call's `uid`, for an argument check.")
    agent: str = Field("", description="The agent whose checks judged (a run handed between agents).")
    outcome: Outcome
    check: str = ""
    reason: str = ""
    passed: list[str] = Field(default_factory=list, description="The checks that passed.")
