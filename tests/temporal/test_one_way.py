"""One way each: a program's configuration is read once and
passed down — the README program reads the environment in `DurableAgentsPlugin()` and nowhere else, and the
worker and client built from that client use what the plugin read, even once the environment has changed;
settings a caller passes win. The plugin is the one path that wires workflows and interceptors, whether the
client has it or not. And no public method passes arbitrary run-input fields (engine knobs) through."""

from __future__ import annotations

import dataclasses
import inspect
import uuid
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from agentic.signing import ApproverKey
from duragent import AgentClient, ApprovalRejected, DurableAgentsPlugin, RunHandle, Settings, build_worker
from duragent._scrubbing import Scrubbing
from duragent._workflows.versioned import VERSIONED_WORKFLOWS
from tests.conftest import TEST_AGENTS, new_worker

MARIA = ApproverKey.generate("maria")


def count_settings_read(monkeypatch: pytest.MonkeyPatch) -> list[Settings]:
    """Every `Settings` built from now on (each one reads the environment, or is a copy of one that did)."""
    built: list[Settings] = []
    original = Settings.__post_init__

    def counted(self: Settings) -> None:
        original(self)
        built.append(self)

    monkeypatch.setattr(Settings, "__post_init__", counted)
    return built


async def test_the_readme_program_reads_the_environment_once_and_its_worker_and_client_use_it(
    skipping_env, ledger, task_queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_APPROVER_KEYS", MARIA.public_entry())  # the workers require signed decisions
    monkeypatch.setenv("TEMPORAL_TASK_QUEUE", task_queue)
    built = count_settings_read(monkeypatch)
    plugin = DurableAgentsPlugin()  # as the README program makes it
    monkeypatch.delenv("AGENT_APPROVER_KEYS")  # read already: a second read would now find neither
    monkeypatch.delenv("TEMPORAL_TASK_QUEUE")
    address = skipping_env.client.service_client.config.target_host
    client = await Client.connect(address, namespace=skipping_env.client.namespace, plugins=[plugin])
    async with new_worker(client, task_queue, ledger):  # build_worker, given no settings
        agents = AgentClient(client)
        assert agents.task_queue == task_queue  # the plugin's, not the constant default
        run = await agents.start("refund", run_id=f"once-{uuid.uuid4().hex[:8]}")
        [waiting] = await run.wait_for_approval()
        with pytest.raises(ApprovalRejected, match="not signed"):  # the worker has the keys the plugin read
            await run.approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash)
        await run.approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash, key=MARIA)
        assert (await run.result()).output == "Refunded order 4471."
    assert len(built) == 1, built
    assert [e.tool for e in ledger.effects(run.run_id)] == ["refund"]


async def test_settings_given_to_build_worker_win_over_the_clients_and_the_environments(
    skipping_env, ledger, task_queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The original bug: `build_worker` built its own `Settings()` from the environment although its caller
    passed settings. Here the environment and the client's plugin have no approver keys; the caller's do."""
    monkeypatch.delenv("AGENT_APPROVER_KEYS", raising=False)
    monkeypatch.delenv("AGENT_APPROVER_KEYS_FILE", raising=False)
    given = dataclasses.replace(Settings.from_env(), approver_keys=MARIA.public_entry())
    async with new_worker(skipping_env.client, task_queue, ledger, settings=given):
        run = await AgentClient(skipping_env.client, task_queue=task_queue).start("refund")
        [waiting] = await run.wait_for_approval()
        with pytest.raises(ApprovalRejected, match="not signed"):
            await run.approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash)
        await run.cancel()
    assert ledger.effects(run.run_id) == []


async def test_the_plugin_is_the_one_path_that_wires_workflows_and_interceptors(skipping_env, task_queue) -> None:
    """A client connected with the plugin, and one connected without it (a program's own converter): the
    worker `build_worker` makes gets our workflows and our interceptors once each, from the plugin either way;
    a versioned worker gets the versioned flavours instead of the bases, never both."""
    address = skipping_env.client.service_client.config.target_host
    plain = await Client.connect(
        address, namespace=skipping_env.client.namespace, data_converter=pydantic_data_converter
    )
    # A worker's own: the masking of every secret it holds in what its activities answer, then the plugin's.
    ours = [Scrubbing, *(type(i) for i in DurableAgentsPlugin(Settings.from_env()).interceptors or [])]
    for client in (skipping_env.client, plain):
        config: Any = build_worker(client, task_queue=task_queue, agents=TEST_AGENTS).config(active_config=True)
        assert [type(i) for i in config["interceptors"]] == ours
        assert [w.__name__ for w in config["workflows"]] == ["AgentWorkflow", "ConversationWorkflow", "WebhookWorkflow"]
        versioned: Any = build_worker(
            client, task_queue=task_queue, agents=TEST_AGENTS, deployment="agents", build_id="v1"
        ).config(active_config=True)
        assert list(versioned["workflows"]) == VERSIONED_WORKFLOWS
        assert [type(i) for i in versioned["interceptors"]] == ours


def test_no_public_client_method_passes_arbitrary_run_input_through() -> None:
    """`start(**input_fields)` let any `AgentInput` field through (the bench's engine knobs rode in every run's
    input that way); now each run option is a named, documented parameter, and an engine knob is refused."""
    for cls in (AgentClient, RunHandle):
        for name, method in inspect.getmembers(cls, callable):
            if name.startswith("_"):
                continue
            kinds = [p.kind for p in inspect.signature(method).parameters.values()]
            assert inspect.Parameter.VAR_KEYWORD not in kinds, f"{cls.__name__}.{name} takes **kwargs"
    assert not hasattr(AgentClient, "start_input")
    with pytest.raises(TypeError, match="continue_as_new"):
        AgentClient.start(None, "refund", continue_as_new={"max_history_events": 10})  # type: ignore[arg-type,call-arg]
