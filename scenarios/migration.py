"""`migration`: N sequential mutating steps, one record each, with a simulated delay inside each step
so a crash can land mid-run."""

from __future__ import annotations

from collections.abc import Sequence

from agentic import Budget, FakeModel, Message, Registry, ToolContext, tool, tool_call
from scenarios.base import Scenario, ScenarioOptions
from scenarios.effects import deps_of, record_effect, reference, tool_results


@tool(description="Migrate one record to the new schema.", record="The record id, e.g. rec-3.", mutating=True)
def migrate_record(record: str, ctx: ToolContext) -> str:
    ctx.sleep(deps_of(ctx).options.step_delay)  # the work; cancellable, and heartbeats while it lasts
    return record_effect(
        ctx, "migrate_record", {"record": record}, f"migrated {record} ({reference(ctx.idempotency_key, 'mig')})"
    )


def script(options: ScenarioOptions) -> FakeModel:
    total = options.records

    def next_move(messages: Sequence[Message]) -> object:
        done = sum(1 for content in tool_results(messages) if content.startswith("migrated"))
        if done < total:
            return tool_call("migrate_record", {"record": f"rec-{done + 1}"})
        return f"Migrated {total} records."

    return FakeModel([next_move] * (total + 1), name="migration-script")


SCENARIO = Scenario(
    name="migration",
    description="Migrate records one per step (5 by default); --step-delay makes each step slow.",
    system="Migrate the records one at a time, in order. Never migrate a record twice.",
    task="Migrate the customer records to the new schema.",
    registry=Registry([migrate_record]),
    script=script,
    budget=Budget(max_steps=200),
)
