"""A run's (or a turn's) live events printed for a person at a terminal: the model's text as it is written,
a line per tool call and per approval (agentic/live.py). What `watch --text` and `chat` print.

A terminal cannot take back what it printed: when a model call starts again (its worker died mid-sentence), a
line says so and the text is written again from its start."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, TextIO

from agentic import live
from duragent._ops.cli.output import printable


class LiveText:
    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.written: dict[int, str] = {}  # model step -> the text printed of it
        self.at_line_start = True

    async def follow(self, events: AsyncIterator[tuple[Any, live.LiveEvent]]) -> None:
        async for _, event in events:
            self.show(event)
        self._end_line()

    def show(self, event: live.LiveEvent) -> None:
        if isinstance(event, live.TextDelta):
            self._text(event.step, event.text)
        elif isinstance(event, live.StepRestarted) and self.written.get(event.step):
            self._line(f"[the model call restarted (attempt {event.attempt}): its text again]")
            self.written[event.step] = ""
        elif isinstance(event, live.StepFinished) and event.kind == "model":
            shown = self.written.get(event.step, "")
            if event.text.startswith(shown):
                self._text(event.step, event.text.removeprefix(shown))  # a step that did not stream: all of it
            else:
                self._line(f"[corrected] {event.text}")
            self._end_line()
        elif isinstance(event, live.StepStarted) and event.kind == "tool":
            self._line(f"-> {event.label}")
        elif isinstance(event, live.ToolCallFinished):
            self._line(f"<- {event.name}: {event.status}")
        elif isinstance(event, live.ApprovalRequested):
            arguments = (
                json.dumps(event.arguments, sort_keys=True) if isinstance(event.arguments, dict) else event.arguments
            )
            self._line(f"waiting for approval: {event.tool} {arguments} (call {event.call_id})")
        elif isinstance(event, live.ApprovalDecided):
            self._line(
                f"{event.outcome} by {event.approver or 'someone'}" + (f": {event.reason}" if event.reason else "")
            )
        elif isinstance(event, live.ApprovalExpired):
            self._line(f"approval of call {event.call_id} expired")
        elif isinstance(event, live.Compensation):
            self._line(f"undo {event.tool}: {event.status}")
        elif isinstance(event, live.Delegation):
            self._line(f"delegated to {event.agent} (run {event.child_run_id}): {event.status}")

    def _text(self, step: int, text: str) -> None:
        if not text:
            return
        self.written[step] = self.written.get(step, "") + text
        self.out.write(printable(text))
        self.out.flush()
        self.at_line_start = text.endswith("\n")

    def _line(self, text: str) -> None:
        self._end_line()
        self.out.write(printable(text, one_line=True) + "\n")
        self.out.flush()

    def _end_line(self) -> None:
        if not self.at_line_start:
            self.out.write("\n")
            self.out.flush()
            self.at_line_start = True
