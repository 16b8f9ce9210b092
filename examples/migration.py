"""`migration`: N sequential mutating steps (`records`, 5 by default), one record each, with a simulated
delay inside each step (`step_delay`) so a crash can land mid-run."""

from __future__ import annotations

import re
from collections.abc import Sequence

from agentic import Agent, Budget, FakeModel, Message, Registry, ToolContext, tool, tool_call
from examples.effects import options_of, record_effect, reference, tool_results
from examples.options import DemoOptions

_PROGRESS = re.compile(r"^migrated rec-(\d+) of (\d+)")


@tool(description="Migrate one record to the new schema.", record="The record id, e.g. rec-3.", mutating=True)
def migrate_record(record: str, ctx: ToolContext) -> str:
    options = options_of(ctx)
    ctx.sleep(options.step_delay)  # the work; cancellable, and heartbeats while it lasts
    ref = reference(ctx.idempotency_key, "mig")
    return record_effect(ctx, "migrate_record", {"record": record}, f"migrated {record} of {options.records} ({ref})")


def next_move(messages: Sequence[Message]) -> object:
    """Migrate the next record until the tool says the last one is done: the model learns the total from
    what the tool reports, as a real model would."""
    done = [m for content in tool_results(messages) if (m := _PROGRESS.match(content))]
    if not done:
        return tool_call("migrate_record", {"record": "rec-1"})
    number, total = (int(g) for g in done[-1].groups())
    if len(done) < total:
        return tool_call("migrate_record", {"record": f"rec-{number + 1}"})
    return f"Migrated {total} records."


agent = Agent(
    FakeModel.replying(next_move, name="migration-script"),
    Registry([migrate_record]),
    system="Migrate the records one at a time, in order. Never migrate a record twice.",
    budget=Budget(max_steps=200),
    name="migration",
    description="Migrate records one per step (5 by default); the option step_delay makes each step slow.",
    task="Migrate the customer records to the new schema.",
    options=DemoOptions,
    estimate=lambda options: 2 * options.records + 1,
)
