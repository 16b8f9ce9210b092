"""How the workflow holds its transcript: inline (every message in workflow state, the whole list handed to
each model call — simple, and quadratic in history) or by reference (a head ref into the transcript store
plus the few messages added since the last model call — history grows with new content only).

Either way it is a pydantic model, carried whole across continue-as-new.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from activities.inputs import TranscriptPart
from agentic import Message
from stores.transcripts import EMPTY

TranscriptMode = Literal["reference", "inline"]


class WorkflowTranscript(BaseModel):
    mode: TranscriptMode = "reference"
    messages: list[Message] = Field(default_factory=list)  # inline: all; reference: not yet stored
    head: str = EMPTY  # reference: the stored part
    count: int = 0

    def add(self, messages: list[Message]) -> None:
        self.messages += messages
        self.count += len(messages)

    def part(self) -> TranscriptPart | None:
        """What an activity needs by reference: the stored head and what is not stored yet."""
        return TranscriptPart(head=self.head, unsaved=self.messages) if self.mode == "reference" else None

    def stored_through(self, stored_head: str | None, appended: list[Message]) -> None:
        """`appended` (what the loop returned) starts with the activity's own message — the model's reply or
        the tool's result. By reference the activity stored the unsaved messages and that one under
        `stored_head`, so only the loop's follow-ups remain unsaved."""
        self.count += len(appended)
        if self.mode == "reference" and stored_head is not None:
            self.head = stored_head
            self.messages = appended[1:]
        else:
            self.messages += appended
