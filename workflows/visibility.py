"""What a run shows the outside without being asked: search attributes (filterable in visibility and
the Web UI), a memo (pending approvals, readable with no worker running), and current details."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from agentic import LoopState
    from agentic.approvals import ApprovalBook
    from workflows import search_attributes as sa


def publish(status: str, scenario: str, state: LoopState, book: ApprovalBook, label: str) -> None:
    """Upsert only what changed: each upsert is a history event."""
    wanted = {
        sa.AGENT_STATUS: status,
        sa.AGENT_SCENARIO: scenario,
        sa.AGENT_STEP: state.consumed.steps,
        sa.AGENT_PENDING_APPROVALS: len(book.pending),
        sa.AGENT_TOKENS: state.consumed.input_tokens + state.consumed.output_tokens,
        sa.AGENT_COST: state.consumed.cost,
        sa.AGENT_STOP: state.stop.value if state.stop else "",
    }
    current = workflow.info().typed_search_attributes
    updates = [key.value_set(value) for key, value in wanted.items() if current.get(key) != value]  # type: ignore[attr-defined]
    if updates:
        workflow.upsert_search_attributes(updates)
    pending = [p.model_dump(mode="json") for p in book.pending.values()]
    if workflow.memo_value("pending_approvals", default=None) != pending:
        workflow.upsert_memo({"pending_approvals": pending})
    workflow.set_current_details(
        f"**{status}** — step {state.consumed.steps}: {label}\n\n"
        f"tokens {state.consumed.input_tokens}+{state.consumed.output_tokens}, cost ${state.consumed.cost:.6f}"
    )
