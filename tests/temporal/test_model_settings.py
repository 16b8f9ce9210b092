"""How the model is asked (`ModelSettings`: temperature, seed, max_tokens, tool_choice) is the agent's, with a
run's explicit fields on top — and it reaches the model the same way from all three runners."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from pathlib import Path

from agentic import Agent, Message, ModelReply, ModelSettings, Registry, ToolSchema
from agentic.agent_set import AgentSet
from duragent._baseline import jobs
from duragent._baseline.options import RunOptions
from duragent._baseline.store import Store
from duragent._client import AgentClient
from duragent._stores.ledger import EffectsLedger
from tests.conftest import new_worker

AGENT_SETTINGS = ModelSettings(temperature=0.0, max_tokens=64, tool_choice="auto")
RUN_SETTINGS = ModelSettings(seed=7, max_tokens=16)
EXPECTED = ModelSettings(temperature=0.0, max_tokens=16, seed=7, tool_choice="auto")


class RecordingModel:
    """Answers at once and remembers the settings each call was given (a process-wide list: the Temporal
    worker runs in this process)."""

    name = "recording"
    seen: list[ModelSettings | None] = []
    lock = threading.Lock()

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSchema] = (),
        *,
        call_index: int | None = None,
        settings: ModelSettings | None = None,
    ) -> ModelReply:
        with self.lock:
            self.seen.append(settings)
        return ModelReply(message=Message("assistant", "done"))


class OldStyleModel:
    """A model written before `settings` existed: runners must not pass it one it cannot take."""

    name = "old"

    def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolSchema] = (), *, call_index: int | None = None
    ) -> ModelReply:
        return ModelReply(message=Message("assistant", "still fine"))


AGENT = Agent(RecordingModel(), Registry(), name="t-settings", task="Go.", model_settings=AGENT_SETTINGS)


def test_in_process(tmp_path: Path) -> None:
    RecordingModel.seen.clear()
    AGENT.run(model_settings=RUN_SETTINGS)
    AGENT.run()
    assert RecordingModel.seen == [EXPECTED, AGENT_SETTINGS]
    assert Agent(OldStyleModel(), Registry()).run("go").output == "still fine"


def test_checkpoint_runner(tmp_path: Path) -> None:
    RecordingModel.seen.clear()
    store = Store(tmp_path / "b.db")
    agents = AgentSet([AGENT], deps=None)
    jobs.start(store, agents, "s", "t-settings", RunOptions(model_settings=RUN_SETTINGS))
    store.close()
    assert RecordingModel.seen == [EXPECTED]


async def test_temporal(skipping_env, tmp_path: Path, task_queue: str) -> None:
    RecordingModel.seen.clear()
    async with new_worker(skipping_env.client, task_queue, EffectsLedger(tmp_path / "l.db"), agents=[AGENT]):
        agents = AgentClient(skipping_env.client, task_queue=task_queue)
        run = await agents.start(AGENT, run_id=f"ms-{uuid.uuid4().hex[:8]}", model_settings=RUN_SETTINGS)
        assert (await run.result()).output == "done"
    assert RecordingModel.seen == [EXPECTED]
