"""A run that names an `openai:` model on a worker installed without the `openai` extra fails at its first
attempt, with the one line naming the extra — not after the describe activity's retries (about 16 s), and not
with a ModuleNotFoundError. The missing package is played as Python sees an uninstalled one (a `None` entry in
`sys.modules`) in this process, where the worker's activities run."""

from __future__ import annotations

import dataclasses
import sys
import uuid
from pathlib import Path

import pytest

from agentic.models.catalog import ModelCatalog
from duragent import AgentClient, Settings
from duragent._config.models import declared_models
from duragent._errors import RunFailed
from duragent._stores.ledger import EffectsLedger
from tests.conftest import agent_named, new_worker

NEEDS_OPENAI = 'the OpenAI-compatible model adapter needs the `openai` extra: pip install "duragent[openai]"'


async def test_an_openai_model_without_the_extra_fails_the_run_at_once_naming_it(
    skipping_env, tmp_path: Path, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # what an uninstalled package looks like to find_spec
    monkeypatch.delitem(sys.modules, "agentic.models.openai_chat", raising=False)
    settings = dataclasses.replace(Settings.from_env(), openai_api_key="sk-not-used")
    made: list[str] = []  # each attempt of the describe activity asks the worker's catalog for the model
    declared = declared_models(settings)
    catalog = ModelCatalog().add_prefix("openai:", lambda name: made.append(name) or declared.resolve(f"openai:{name}"))
    agent = agent_named("refund")
    ledger = EffectsLedger(tmp_path / "l.db")
    async with new_worker(skipping_env.client, task_queue, ledger, models=catalog):
        run = await AgentClient(skipping_env.client, task_queue=task_queue).start(
            agent, "Refund order A-1", run_id=f"no-openai-{uuid.uuid4().hex[:8]}", model="openai:gpt-4.1-mini"
        )
        with pytest.raises(RunFailed) as failed:
            await run.result()
    assert NEEDS_OPENAI in str(failed.value)
    assert "ModuleNotFoundError" not in str(failed.value)
    assert made == ["gpt-4.1-mini"]  # one attempt: no retry can install an extra
    assert ledger.effects(run.run_id) == []
