"""Degrade modes (docs/design.md): when a dependency is down, runs wait and stay visible, and none is lost.

Model provider down: the model activity fails retryably, Temporal retries it with backoff, and the run's
progress says `waiting_model` with the failed attempt and why — then completes once the provider is back.
(The transcript store unreachable: tests/stores/test_store_faults.py::
test_postgresql_restarted_mid_run_the_run_completes_with_each_effect_once, on a real PostgreSQL.)
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from agentic import Agent, FakeModel, Message, ModelReply, ModelSettings, Registry, Stop, ToolSchema
from agentic.errors import RetryableModelError
from duragent import AgentClient
from tests.conftest import eventually, new_worker


class Provider:
    """A model behind a provider that can be down: while `down` is set, every call fails as a 503 would."""

    name = "flaky-provider"

    def __init__(self) -> None:
        self.down = threading.Event()
        self.calls = 0
        self.model = FakeModel(["Back online."])

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSchema] = (),
        *,
        call_index: int | None = None,
        settings: ModelSettings | None = None,
    ) -> ModelReply:
        self.calls += 1
        if self.down.is_set():
            raise RetryableModelError("503 Service Unavailable from the provider")
        return self.model.complete(messages, tools, call_index=call_index)


async def test_a_model_provider_down_leaves_the_run_waiting_visibly_and_it_completes_when_back(
    skipping_env, ledger, task_queue
) -> None:
    provider = Provider()
    provider.down.set()
    agent = Agent(provider, Registry(), name="degrade-model", task="Say something.")
    async with new_worker(skipping_env.client, task_queue, ledger, agents=[agent]):
        run = await AgentClient(skipping_env.client, task_queue=task_queue).start(agent)

        async def waiting_model() -> bool:
            return (await run.progress()).status == "waiting_model"

        await eventually(waiting_model, what="the run to show waiting_model")
        progress = await run.progress()
        assert progress.label.startswith("model call 1: attempt ")
        assert "503 Service Unavailable from the provider" in progress.label and "retrying" in progress.label
        assert await run.is_running()  # waiting, not failed

        provider.down.clear()
        result = await run.result()

    assert result.stop is Stop.ANSWERED and result.output == "Back online."
    assert provider.calls >= 2
    assert result.usage.steps == 1  # the failed attempts cost no step


async def test_a_run_whose_model_answers_is_never_shown_waiting(skipping_env, ledger, task_queue) -> None:
    """Control: `waiting_model` comes from a failed attempt, not from a model call merely in flight."""
    provider = Provider()
    agent = Agent(provider, Registry(), name="degrade-model-up", task="Say something.")
    async with new_worker(skipping_env.client, task_queue, ledger, agents=[agent]):
        run = await AgentClient(skipping_env.client, task_queue=task_queue).start(agent)
        seen = [p.status async for p in run.watch(interval=0.05)]
    assert "waiting_model" not in seen and seen[-1] == "completed"
