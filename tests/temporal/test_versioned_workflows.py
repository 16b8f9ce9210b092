"""Worker Versioning switched on and off (duragent/_versioning.py, duragent/_workflows/versioned.py): a worker given a
deployment and a build id registers the workflows declaring their versioning behaviour; one given neither
registers them exactly as before, declaring none (the server refuses a declared behaviour from an unversioned
worker: every run would stall). The whole deploy, on a real server: tests/ops/test_deploy.py."""

from __future__ import annotations

import dataclasses

import pytest
from temporalio import workflow
from temporalio.common import VersioningBehavior, WorkerDeploymentVersion

from duragent._config.settings import Settings
from duragent._connection import connect
from duragent._versioning import WorkerVersioningError, worker_deployment
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.conversation import ConversationWorkflow
from duragent._workflows.versioned import (
    PinnedAgentWorkflow,
    UpgradingConversationWorkflow,
    UpgradingWebhookWorkflow,
)
from duragent._workflows.webhook import WebhookWorkflow
from tests.conftest import new_worker


def definition(cls: type) -> workflow._Definition:
    return workflow._Definition.must_from_class(cls)


@pytest.mark.parametrize(
    ("versioned", "base", "behaviour"),
    [
        (PinnedAgentWorkflow, AgentWorkflow, VersioningBehavior.PINNED),
        (UpgradingWebhookWorkflow, WebhookWorkflow, VersioningBehavior.AUTO_UPGRADE),
        (UpgradingConversationWorkflow, ConversationWorkflow, VersioningBehavior.AUTO_UPGRADE),
    ],
)
def test_a_versioned_flavour_is_its_base_plus_a_behaviour(versioned: type, base: type, behaviour) -> None:
    mine, theirs = definition(versioned), definition(base)
    assert mine.versioning_behavior is behaviour and theirs.versioning_behavior is VersioningBehavior.UNSPECIFIED
    for field in ("name", "sandboxed", "failure_exception_types", "arg_types", "ret_type"):
        assert getattr(mine, field) == getattr(theirs, field), field
    for handlers in ("signals", "queries", "updates"):
        assert set(getattr(mine, handlers)) == set(getattr(theirs, handlers)), handlers


async def test_a_worker_is_versioned_only_when_given_a_deployment_and_a_build(skipping_env, ledger, task_queue) -> None:
    address = skipping_env.client.service_client.config.target_host
    plugin_client = await connect(Settings(address=address, namespace=skipping_env.client.namespace))
    for client in (skipping_env.client, plugin_client):  # registered by build_worker, or by the plugin
        plain = new_worker(client, task_queue, ledger).config(active_config=True)
        assert plain["workflows"] == [AgentWorkflow, ConversationWorkflow, WebhookWorkflow]
        assert plain.get("deployment_config") is None

        versioned = new_worker(client, task_queue, ledger, deployment="agents", build_id="v7")
        config = versioned.config(active_config=True)
        assert config["workflows"] == [PinnedAgentWorkflow, UpgradingConversationWorkflow, UpgradingWebhookWorkflow]
        deployment = config["deployment_config"]
        assert deployment.version == WorkerDeploymentVersion("agents", "v7") and deployment.use_worker_versioning
    # From the environment's settings (compose), as `python worker.py` passes them.
    settings = dataclasses.replace(Settings(address=address), deployment_name="agents", build_id="v8")
    config = new_worker(plugin_client, task_queue, ledger, settings=settings).config(active_config=True)
    assert config["deployment_config"].version == WorkerDeploymentVersion("agents", "v8")


def test_the_environment_names_the_deployment_and_the_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEMPORAL_DEPLOYMENT_NAME", "agents")
    monkeypatch.setenv("TEMPORAL_WORKER_BUILD_ID", " 2026.12.01-abc ")
    settings = Settings()
    assert (settings.deployment_name, settings.build_id) == ("agents", "2026.12.01-abc")
    monkeypatch.setenv("TEMPORAL_DEPLOYMENT_NAME", "")  # compose's `${X:-}`: unset
    monkeypatch.delenv("TEMPORAL_WORKER_BUILD_ID")
    assert (Settings().deployment_name, Settings().build_id) == (None, None)


def test_neither_is_unversioned_and_half_a_version_is_refused() -> None:
    assert worker_deployment(None, None) is None and worker_deployment(" ", "") is None
    assert worker_deployment("agents", "1.2.3").version == WorkerDeploymentVersion("agents", "1.2.3")
    with pytest.raises(WorkerVersioningError, match=r"a deployment name is set but no build id \(--build-id"):
        worker_deployment("agents", None)
    with pytest.raises(WorkerVersioningError, match=r"a build id is set but no deployment name \(--deployment"):
        worker_deployment("", "v1")
    # The server's rules, said before a worker starts polling in vain.
    with pytest.raises(WorkerVersioningError, match=r"deployment name 'a:b.c': may not contain '\.' or ':'"):
        worker_deployment("a:b.c", "v1")
    with pytest.raises(WorkerVersioningError, match="may not start with '__'"):
        worker_deployment("agents", "__unversioned__")
