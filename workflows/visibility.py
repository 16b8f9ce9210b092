"""What a run shows the outside without being asked: search attributes (filterable in visibility and
the Web UI), a memo (pending approvals, readable with no worker running), and current details."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from agentic import LoopState
    from agentic.approvals import ApprovalBook
    from workflows import search_attributes as sa


# Step, tokens and cost change every step; refreshing them every few steps (and whenever the status
# changes) keeps a long run's history from paying an upsert event per step. The query is exact.
PROGRESS_EVERY = 5


# The memo key of the approvals a run waits for: readable with no worker running (durable_agents/client.py).
PENDING_APPROVALS = "pending_approvals"


class Publisher:
    """Remembers what it last put in the memo: decoding the memo back on every step would cost more than
    the comparison saves. A run `AgentClient` started writes no memo until it waits for an approval (issue 20:
    one event and one visibility write fewer per run). Rebuilt identically on replay, so the commands it
    issues are deterministic."""

    def __init__(self, search_attributes: bool = True) -> None:
        self.pending: list[dict[str, object]] | None = None
        self.started = False
        self.search_attributes = search_attributes  # False: the run asked to publish none (AgentInput)

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
        publish(status, agent, state, book, label, charged=charged, search_attributes=self.search_attributes)
        pending = [p.model_dump(mode="json") for p in book.pending.values()]
        if pending != self.pending:
            workflow.upsert_memo({PENDING_APPROVALS: pending})
            self.pending = pending


def publish(
    status: str,
    agent: str,
    state: LoopState,
    book: ApprovalBook,
    label: str,
    *,
    charged: bool = False,
    search_attributes: bool = True,
) -> None:
    """Upsert only what changed: each upsert is a history event. `charged`: a delegated run's consumption was
    just added to this run's, so its tokens and cost are shown now, children included."""
    current = workflow.info().typed_search_attributes
    wanted = sa.status_values(status, agent, len(book.pending), state.stop.value if state.stop else "")
    changed = any(current.get(key) != value for key, value in wanted.items())  # type: ignore[call-overload]
    if changed or charged or state.consumed.steps % PROGRESS_EVERY == 0:
        wanted |= sa.progress_values(state.consumed)
    updates = [key.value_set(value) for key, value in wanted.items() if current.get(key) != value]  # type: ignore[attr-defined]
    if updates and search_attributes:
        workflow.upsert_search_attributes(updates)
    workflow.set_current_details(
        f"**{status}** — step {state.consumed.steps}: {label}\n\n"
        f"tokens {state.consumed.input_tokens}+{state.consumed.output_tokens}, cost ${state.consumed.cost:.6f}"
    )
