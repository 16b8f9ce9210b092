""" "one budget", at every depth and on every limit: a root whose budget is only input tokens, only
output tokens or only cost hands reservations down a three-level tree (desk → accounts → clerk, from
tests/support/delegation_agents.py). Swept over every limit from nothing to more than the tree needs, in-process:
the tree never spends more than its root's limit plus one model call (the call that crosses it, which no
runner can know in advance), and every run is charged what its children spent. Then the tightest limits
through the checkpoint runner and the Temporal workflow, which must end exactly as the in-process tree."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from agentic import Budget, Message, Run, Stop, Usage
from agentic.agent_set import AgentSet
from agentic.models.base import estimate_tokens
from duragent._baseline import jobs
from duragent._baseline.options import RunOptions
from duragent._baseline.store import Store
from duragent._client import AgentClient
from duragent._stores.ledger import EffectsLedger
from examples.options import DemoDeps
from tests.support import delegation_agents
from tests.temporal.test_delegation import AGENTS, agent, worker

ROOT = "d-desk"
LIMITS = ("max_input_tokens", "max_output_tokens", "max_cost")


def message_tokens(message: Message) -> int:
    """What `FakeModel` counts for a message (agentic/models/fake.py)."""
    tokens = 4 + estimate_tokens(message.content)
    for call in message.tool_calls:
        tokens += estimate_tokens(call.name) + estimate_tokens(call.canonical_arguments)
    return tokens


def calls(run: Run) -> list[Usage]:
    """What each model call of `run` and of every run below it consumed, as `FakeModel` counts it."""
    pricing = agent(ROOT).model.pricing  # every agent of the tree is priced alike
    found: list[Usage] = []
    for i, message in enumerate(run.messages):
        if message.role == "assistant":
            read = sum(message_tokens(m) for m in run.messages[:i])
            wrote = message_tokens(message)
            found.append(Usage(input_tokens=read, output_tokens=wrote, cost=pricing.cost(read, wrote), steps=1))
    for child in run.children.values():
        found += calls(child)
    return found


def spent(usage: Usage, limit: str) -> float:
    return {"max_input_tokens": usage.input_tokens, "max_output_tokens": usage.output_tokens}.get(limit, usage.cost)


def tree(budget: Budget, ledger: EffectsLedger) -> Run:
    for each in delegation_agents.agents:  # in-process, every agent of the tree records into this ledger
        each.deps = DemoDeps(ledger)
    return agent(ROOT).run(budget=budget, run_id=f"budget-{uuid.uuid4().hex[:6]}")


def charged_up(run: Run) -> None:
    """Every run's consumption is its own model calls plus what its children were charged."""
    own = Usage()
    for call in calls(run):  # the whole subtree's calls, counted independently of the runner's sums
        own = own.plus(call)
    assert (run.usage.input_tokens, run.usage.output_tokens, run.usage.steps) == (
        own.input_tokens,
        own.output_tokens,
        own.steps,
    )
    assert run.usage.cost == pytest.approx(own.cost, abs=1e-9)
    for child in run.children.values():
        charged_up(child)


def limits_to_sweep(limit: str, full: Usage) -> list[Any]:
    if limit == "max_cost":
        return [round(full.cost * i / 24, 10) for i in range(1, 27)]
    whole = int(spent(full, limit))
    return sorted({1, 2, 3, *range(5, whole + 20, max(1, whole // 40))})


@pytest.mark.parametrize("limit", LIMITS)
def test_a_tree_never_spends_more_than_its_roots_limit_plus_one_model_call(tmp_path: Path, limit: str) -> None:
    unlimited = tree(Budget(), EffectsLedger(tmp_path / "full.db"))
    assert unlimited.stop is Stop.ANSWERED and len(unlimited.children) == 1  # the whole tree: three levels
    assert len(next(iter(unlimited.children.values())).children) == 1
    full = unlimited.usage
    stops: set[Stop] = set()
    for value in limits_to_sweep(limit, full):
        run = tree(Budget(**{limit: value}), EffectsLedger(tmp_path / f"{limit}-{value}.db"))
        one_call = max(spent(c, limit) for c in calls(run))
        assert spent(run.usage, limit) <= value + one_call + 1e-9, (value, run.usage)
        charged_up(run)
        stops.add(run.stop)
        if value >= spent(full, limit):
            assert run.stop is Stop.ANSWERED and run.usage == full  # enough: the limit changes nothing
    # The sweep reached both ends: trees cut short by the limit, and trees that answered.
    assert Stop.ANSWERED in stops and stops - {Stop.ANSWERED}, stops


@pytest.mark.parametrize("limit", ["max_input_tokens", "max_output_tokens"])
async def test_a_tight_token_limit_ends_the_tree_alike_in_all_three_runners(
    skipping_env, task_queue, tmp_path: Path, limit: str
) -> None:
    """A limit the grandchild crosses: the same stop, consumption and effects in every runner."""
    unlimited = tree(Budget(), EffectsLedger(tmp_path / "full.db"))
    # The root's own first call plus half of what is left: the limit falls inside the children's work.
    first = calls(unlimited)[0]
    value = int(spent(first, limit) + (spent(unlimited.usage, limit) - spent(first, limit)) / 2)
    budget = Budget(**{limit: value})
    local = tree(budget, EffectsLedger(tmp_path / "in-process.db"))
    assert spent(local.usage, limit) > spent(first, limit)  # the tree got past the root's first call

    store = Store(tmp_path / "baseline.db")
    root = f"budget-{uuid.uuid4().hex[:6]}"
    checkpoint_ledger = EffectsLedger(tmp_path / "checkpoint.db")
    row = jobs.start(store, AgentSet(AGENTS, DemoDeps(checkpoint_ledger)), root, ROOT, RunOptions(budget=budget))
    durable_ledger = EffectsLedger(tmp_path / "temporal.db")
    async with worker(skipping_env, task_queue, durable_ledger):
        result = await (
            await AgentClient(skipping_env.client, task_queue=task_queue).start(ROOT, budget=budget)
        ).result()

    assert (row.stop, Stop(result.stop)) == (local.stop.value, local.stop)
    assert result.usage == local.usage
    assert spent(result.usage, limit) <= value + max(spent(c, limit) for c in calls(local))
    effects = [[e.tool for e in ledger.effects()] for ledger in (checkpoint_ledger, durable_ledger)]
    assert effects[0] == effects[1], effects
