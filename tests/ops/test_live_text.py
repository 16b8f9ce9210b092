"""What `watch --text` and `chat` print of live events: the text as it comes, a line per tool call and
approval, a restarted model call said and written again — and a model's control characters never reach the
terminal as such."""

from __future__ import annotations

import io
from datetime import UTC, datetime

from agentic.live import (
    ApprovalDecided,
    ApprovalRequested,
    LiveEvent,
    StepFinished,
    StepRestarted,
    StepStarted,
    TextDelta,
    ToolCallFinished,
)
from duragent._ops.cli.live_text import LiveText


def printed(events: list[LiveEvent]) -> str:
    out = io.StringIO()
    text = LiveText(out)
    for event in events:
        text.show(event)
    text._end_line()
    return out.getvalue()


def test_text_comes_as_written_then_tool_calls_and_approvals_on_lines_of_their_own() -> None:
    deadline = datetime(2026, 12, 6, tzinfo=UTC)
    assert printed(
        [
            TextDelta(step=1, text="Paying "),
            TextDelta(step=1, text="now."),
            StepFinished(step=1, kind="model", text="Paying now."),
            ApprovalRequested(
                call_id="1.1", tool="pay", arguments={"supplier": "s-9"}, arguments_hash="a" * 64, deadline=deadline
            ),
            ApprovalDecided(call_id="1.1", outcome="approved", approver="maria"),
            StepStarted(step=1, kind="tool", label="pay(supplier=s-9)", call_id="1.1"),
            ToolCallFinished(call_id="1.1", name="pay", status="ok"),
            StepFinished(step=2, kind="model", text="Paid."),  # a step that did not stream: its text whole
        ]
    ) == (
        "Paying now.\n"
        'waiting for approval: pay {"supplier": "s-9"} (call 1.1)\n'
        "approved by maria\n"
        "-> pay(supplier=s-9)\n"
        "<- pay: ok\n"
        "Paid.\n"
    )


def test_a_restarted_call_is_said_and_its_text_written_again() -> None:
    out = printed(
        [
            TextDelta(step=1, text="The inv"),
            StepRestarted(step=1, attempt=2),
            TextDelta(step=1, text="The invoice is paid.", attempt=2),
            StepFinished(step=1, kind="model", text="The invoice is paid."),
        ]
    )
    assert out == "The inv\n[the model call restarted (attempt 2): its text again]\nThe invoice is paid.\n"


def test_a_models_escape_sequences_are_shown_not_obeyed() -> None:
    out = printed([TextDelta(step=1, text="\x1b[2Jcleared?\u202e")])
    assert "\x1b" not in out and "\u202e" not in out and "\\x1b[2Jcleared?" in out
