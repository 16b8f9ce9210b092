"""Whether a run named as a conversation's turn (`{conversation}~turn-{n}`) was started by that conversation: the
server's record (the run's parent link, which only the server writes when a workflow starts a child), asked once per
run and remembered. A run id is a name its starter picks: a stranger's own run can be called `V~turn-99`; only the
parent link says it is one of V's turns, and so may read V's transcript (duragent/_activities/transcripts.py)."""

from __future__ import annotations

from collections import OrderedDict

from duragent._activities.caller import describe

TURN = "~turn-"  # a conversation's turn run is `{conversation}~turn-{n}` (duragent/_workflows/turns.py)
REMEMBERED = 10_000  # runs whose answer is kept: a turn's model calls after its first ask nothing


class TurnParents:
    def __init__(self, remembered: int = REMEMBERED) -> None:
        self.remembered = remembered
        self._known: OrderedDict[str, str | None] = OrderedDict()

    async def conversation_of(self, run_id: str) -> str | None:
        """The conversation whose turn `run_id` is, as the server records it; None for any other run."""
        if TURN not in run_id:
            return None
        if run_id in self._known:
            self._known.move_to_end(run_id)
            return self._known[run_id]
        named = run_id.rsplit(TURN, 1)[0]
        parent = (await describe(run_id)).raw_description.workflow_execution_info.parent_execution.workflow_id
        conversation = named if parent == named else None
        self._known[run_id] = conversation
        if len(self._known) > self.remembered:
            self._known.popitem(last=False)
        return conversation
