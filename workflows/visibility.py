"""What a run shows the outside without being asked: search attributes (filterable in visibility and
the Web UI), a memo (pending approvals, readable with no worker running), and current details."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributeKey, TypedSearchAttributes

with workflow.unsafe.imports_passed_through():
    from agentic import LoopState
    from agentic.approvals import ApprovalBook
    from duragent.workflows import search_attributes as sa


# Step, tokens and cost change every step. They are published when the status changes (the end included),
# and otherwise at most once per PROGRESS_INTERVAL of workflow time (issue 36): a run of fast steps publishes
# them once, at its end, instead of paying an upsert — a history event and a visibility write that slow
# the steps around it — every few steps, while a step that takes seconds (a real model) still shows at once.
# The `progress` query is exact at any time.
PROGRESS_INTERVAL = timedelta(seconds=2)

# Before issue 36 they were refreshed every PROGRESS_EVERY steps. A run whose history was written so keeps
# that rule. A run knows which rule it follows from its start's record (`DescribedAgent.progress_by_time`,
# set by today's workers): by time, asking nothing. A run whose record predates that field asks
# `workflow.patched(PROGRESS_BY_TIME)` where the two rules would upsert differently (a marker when it runs
# on; false when replaying a history older than issue 36; true replaying one that recorded the marker) and
# follows the answer to its end. The record replaces the marker because a marker comes with an upsert of
# `TemporalChangeVersion`: on a loaded worker every run lasts over the interval, and so paid two events more
# (and their reads on the server; the upsert shares its visibility write with the progress upsert beside it)
# than before issue 36 (issue 50, docs/benchmarks.md).
PROGRESS_EVERY = 5
PROGRESS_BY_TIME = "progress-by-time"


Values = dict[SearchAttributeKey[Any], object]

# The memo key of the approvals a run waits for: readable with no worker running (duragent/client.py).
PENDING_APPROVALS = "pending_approvals"


class Publisher:
    """Remembers what it last put in the memo (decoding the memo back on every step would cost more than
    the comparison saves) and when it last published progress. A run `AgentClient` started writes no memo
    until it waits for an approval (issue 20: one event and one visibility write fewer per run). Rebuilt
    identically on replay (workflow time is the history's), so the commands it issues are deterministic."""

    def __init__(self, search_attributes: bool = True) -> None:
        self.pending: list[dict[str, object]] | None = None
        self.started = False
        self.search_attributes = search_attributes  # False: the run asked to publish none (AgentInput)
        self.progress_at: datetime | None = None  # workflow time progress was last due (by time)
        self.by_time_recorded = False  # the run's start record says: by time (set once the spec is recorded)

    def __call__(
        self, status: str, agent: str, state: LoopState, book: ApprovalBook, label: str, *, charged: bool = False
    ) -> None:
        if not self.started:  # from the start event only: the same on every replay
            self.started = True
            # A run that `AgentClient` started carries its search attributes from the start: it starts with no
            # approvals pending, and a memo without the key reads as none (every reader defaults to []). One
            # started otherwise, or continued as new (it inherits the attributes), or by an older client (in a
            # recorded history), writes the empty memo as before: replaying those histories must issue it.
            info = workflow.info()
            attributes_at_start = info.typed_search_attributes.get(sa.AGENT_STATUS) is not None
            # (A run without search attributes asked for it in an input field today's clients alone know.)
            by_our_client = info.continued_run_id is None and (attributes_at_start or not self.search_attributes)
            self.pending = workflow.memo_value(PENDING_APPROVALS, default=[] if by_our_client else None, type_hint=list)
        self._upsert(status, agent, state, book, charged)
        workflow.set_current_details(
            f"**{status}** — step {state.consumed.steps}: {label}\n\n"
            f"tokens {state.consumed.input_tokens}+{state.consumed.output_tokens}, cost ${state.consumed.cost:.6f}"
        )
        pending = [p.model_dump(mode="json") for p in book.pending.values()]
        if pending != self.pending:
            workflow.upsert_memo({PENDING_APPROVALS: pending})
            self.pending = pending

    def _upsert(self, status: str, agent: str, state: LoopState, book: ApprovalBook, charged: bool) -> None:
        """Upsert only what changed: each upsert is a history event. `charged`: a delegated run's consumption
        was just added to this run's, so its tokens and cost are shown now, children included."""
        current = workflow.info().typed_search_attributes
        wanted = sa.status_values(status, agent, len(book.pending), state.stop.value if state.stop else "")
        changed = any(current.get(key) != value for key, value in wanted.items())  # type: ignore[call-overload]
        now = workflow.now()
        due = changed or charged or self.progress_at is None or now - self.progress_at >= PROGRESS_INTERVAL
        if due:
            self.progress_at = now
        if not self.search_attributes:
            return
        progress = sa.progress_values(state.consumed)
        by_time = _changes(wanted | progress if due else wanted, current)
        every_few_steps = changed or charged or state.consumed.steps % PROGRESS_EVERY == 0
        by_steps = _changes(wanted | progress if every_few_steps else wanted, current)
        by_time_rule = by_time == by_steps or self.by_time_recorded or workflow.patched(PROGRESS_BY_TIME)
        updates = by_time if by_time_rule else by_steps
        if updates:
            workflow.upsert_search_attributes([key.value_set(value) for key, value in updates.items()])  # type: ignore[attr-defined]


def _changes(wanted: Values, current: TypedSearchAttributes) -> Values:
    """The attributes whose wanted value is not the one shown."""
    return {key: value for key, value in wanted.items() if current.get(key) != value}
