"""What a run shows the outside without being asked: search attributes (filterable in visibility and
the Web UI), a memo (pending approvals, readable with no worker running), and current details."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal

from temporalio import workflow
from temporalio.common import SearchAttributeKey, TypedSearchAttributes

with workflow.unsafe.imports_passed_through():
    from agentic import LoopState
    from agentic.approvals import ApprovalBook
    from duragent._workflows import search_attributes as sa


# Step, tokens and cost change every step. They are published when the status changes (the end included),
# and otherwise once the activities have worked PROGRESS_INTERVAL since they were last published: a
# run of fast steps publishes them once, at its end, instead of paying an upsert — a history event and a
# visibility write that slow the steps around it — every few steps, while a step that works for seconds (a real
# model) still shows at once. The `progress` query is exact at any time.
PROGRESS_INTERVAL = timedelta(seconds=2)

# The time counted is what the model and tool activities report they worked (`Worked.worked_ms`), not workflow
# time. The rule before counted workflow time; under load that counts the waits in the server's queues too, so
# every run of a loaded worker lasted over the interval and published its progress mid-run (~1.8 upserts a run at
# 1,000 concurrent runs), adding visibility writes just when the server had least to spare (docs/benchmarks.md).
# Before that, progress was refreshed every PROGRESS_EVERY steps.
#
# A run follows the rule its start's record names (`DescribedAgent.progress_by_work`, `.progress_by_time`, set
# by the workers of each change), asking nothing, so replaying any recorded history issues the commands it was
# recorded with. A run whose record predates both asks `workflow.patched(PROGRESS_BY_TIME)` where the time and
# step rules would upsert differently (a marker when it runs on; false when replaying a history older than issue
# 36; true replaying one that recorded the marker) and follows the answer to its end. The records replaced the
# marker because a marker comes with an upsert of `TemporalChangeVersion`: two events more per run.
PROGRESS_EVERY = 5
PROGRESS_BY_TIME = "progress-by-time"


Values = dict[SearchAttributeKey[Any], object]

# The memo key of the approvals a run waits for: readable with no worker running (duragent/_client.py).
PENDING_APPROVALS = "pending_approvals"


class Publisher:
    """Remembers what it last put in the memo (decoding the memo back on every step would cost more than
    the comparison saves) and when it last published progress. A run `AgentClient` started writes no memo
    until it waits for an approval (one event and one visibility write fewer per run). Rebuilt
    identically on replay (workflow time is the history's), so the commands it issues are deterministic."""

    def __init__(self, search_attributes: bool = True) -> None:
        self.pending: list[dict[str, object]] | None = None
        self.started = False
        self.search_attributes = search_attributes  # False: the run asked to publish none (AgentInput)
        self.progress_at: datetime | None = None  # workflow time progress was last due (by time)
        self.worked = timedelta()  # the activities' work since progress was last due (by work)
        # The rule the run's start record names (set once the spec is recorded): by work, by time, or None (an
        # older record: ask the patch between the time and step rules).
        self.rule: Literal["work", "time"] | None = None

    def add_work(self, worked_ms: int) -> None:
        """An activity finished a step, having worked `worked_ms` on it (its result says, so a replay adds the same)."""
        self.worked += timedelta(milliseconds=worked_ms)

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
        wanted = sa.status_values(status, agent, len(book.pending), state.stop.value if state.stop else "", state.agent)
        changed = any(current.get(key) != value for key, value in wanted.items())  # type: ignore[call-overload]
        now = workflow.now()
        if changed or charged or self.progress_at is None:
            due = True
        elif self.rule == "work":
            due = self.worked >= PROGRESS_INTERVAL
        else:
            due = now - self.progress_at >= PROGRESS_INTERVAL
        if due:
            self.progress_at, self.worked = now, timedelta()
        if not self.search_attributes:
            return
        progress = sa.progress_values(state.consumed)
        updates = _changes(wanted | progress if due else wanted, current)
        if self.rule is None:
            # A record older than both: where the time rule and the old step rule differ, the patch decides.
            every_few_steps = changed or charged or state.consumed.steps % PROGRESS_EVERY == 0
            by_steps = _changes(wanted | progress if every_few_steps else wanted, current)
            if updates != by_steps and not workflow.patched(PROGRESS_BY_TIME):
                updates = by_steps
        if updates:
            workflow.upsert_search_attributes([key.value_set(value) for key, value in updates.items()])  # type: ignore[attr-defined]


def _changes(wanted: Values, current: TypedSearchAttributes) -> Values:
    """The attributes whose wanted value is not the one shown."""
    return {key: value for key, value in wanted.items() if current.get(key) != value}
