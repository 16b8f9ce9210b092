"""How the workflow holds its transcript: by reference — a head ref into the transcript store plus the few
messages added since the last activity stored it — so history grows with new content only, never with the
whole transcript at every model call (`python -m bench history` measures the naive way next to it).

A pydantic model, carried whole across continue-as-new.
"""

from __future__ import annotations

from pydantic import Field

from agentic import Message
from agentic.omit_defaults import OmitDefaults
from duragent._activities.inputs import TranscriptPart
from duragent._stores.transcripts import EMPTY


class WorkflowTranscript(OmitDefaults):
    # (A run recorded before the transcript was always by reference may carry `mode: "inline"`, dropped here: its
    # messages are all unsaved, and its next activity stores them.)
    messages: list[Message] = Field(default_factory=list)  # added since `head`, not stored yet
    head: str = EMPTY  # the stored part
    count: int = 0

    def add(self, messages: list[Message]) -> None:
        self.messages += messages
        self.count += len(messages)

    def part(self) -> TranscriptPart:
        """What an activity gets: the stored head and what is not stored yet."""
        return TranscriptPart(head=self.head, unsaved=self.messages)

    def advance(self, stored_head: str | None, appended: list[Message]) -> None:
        """After an activity: `appended` (what the loop returned) starts with the activity's own message — the
        model's reply or the tool's result — which the activity stored, with the unsaved messages, under
        `stored_head`. So `appended[0]` is dropped and only the loop's follow-ups stay unsaved. A step recorded
        without a head (a run started before the transcript was always by reference) stored nothing: all of
        `appended` stays unsaved."""
        self.count += len(appended)
        if stored_head is None:
            self.messages += appended
        else:
            self.head = stored_head
            self.messages = appended[1:]
