"""The workflows as a versioned worker registers them (Worker Versioning, duragent/_versioning.py): the same
workflows, under the same names, declaring how their runs move from one build to the next.

Why subclasses rather than `versioning_behavior=` on `AgentWorkflow` itself: the SDK sends a workflow's declared
behaviour with every task it completes, and the server refuses it from an unversioned worker ("versioning
behavior cannot be specified without deployment options being set with versioned mode"): every run of an
unversioned worker would stall. So only versioned workers register these; unversioned ones register the bases,
exactly as before. Both run the same code: the subclasses add nothing but the declaration.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import VersioningBehavior

with workflow.unsafe.imports_passed_through():
    from pydantic import ValidationError

    from duragent._activities.inputs import AgentResult, WebhookDelivered, WebhookInput
    from duragent._workflows.agent import AgentWorkflow
    from duragent._workflows.conversation import ConversationWorkflow
    from duragent._workflows.conversation_inputs import ConversationInput, ConversationView
    from duragent._workflows.inputs import AgentInput
    from duragent._workflows.names import CONVERSATION_WORKFLOW_TYPE, WORKFLOW_TYPE
    from duragent._workflows.webhook import WebhookWorkflow


# Pinned: a run ends on the build it started on, so a deploy never replays a run's history on code that did not
# write it — no non-determinism error, and no `workflow.patched` needed between builds. The price: an old
# build's workers must run until its runs close (its drainage), and a fix reaches a run in flight only when it
# continues as new — which starts the new run on the deployment's current build, and which a run does before a
# wait for a human whenever a newer build is current (`AgentWorkflow._continue_as_new_if_due`), so a wait of
# weeks holds the newest build, not an old one. Auto-upgrade would free old builds at once, but every change
# would again have to replay every open history. docs/operations.md, "Deploying a new version".
# The definition is AgentWorkflow's own plus the behaviour (tests/temporal/test_versioned_workflows.py checks it).
@workflow.defn(
    name=WORKFLOW_TYPE,
    failure_exception_types=[ValidationError],
    sandboxed=False,
    versioning_behavior=VersioningBehavior.PINNED,
)
class PinnedAgentWorkflow(AgentWorkflow):
    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await super().run(input)


# Auto-upgrade: a delivery starts on its run's build (a pinned parent's child does) and moves to the current build
# at its next task, so a receiver down for a day does not keep an old build from draining. Safe because its
# history is one activity, which any build replays; a change to what WebhookWorkflow schedules needs
# `workflow.patched`, as on unversioned workers. Pinned would hold the run's build for up to GIVE_UP_AFTER.
@workflow.defn(name="WebhookDelivery", versioning_behavior=VersioningBehavior.AUTO_UPGRADE)
class UpgradingWebhookWorkflow(WebhookWorkflow):
    @workflow.run
    async def run(self, input: WebhookInput) -> WebhookDelivered:
        return await super().run(input)


# Auto-upgrade: a conversation lives for days or weeks and hands over between turns; pinned, it would hold its
# build until it closes. Its continue-as-new starts the new run on the current build in any case; between
# handovers a change to what it schedules needs `workflow.patched`, as on unversioned workers.
@workflow.defn(
    name=CONVERSATION_WORKFLOW_TYPE,
    failure_exception_types=[ValidationError],
    sandboxed=False,
    versioning_behavior=VersioningBehavior.AUTO_UPGRADE,
)
class UpgradingConversationWorkflow(ConversationWorkflow):
    @workflow.run
    async def run(self, input: ConversationInput) -> ConversationView:
        return await super().run(input)


# What a versioned worker registers, in place of [AgentWorkflow, ConversationWorkflow, WebhookWorkflow].
VERSIONED_WORKFLOWS: list[type] = [PinnedAgentWorkflow, UpgradingConversationWorkflow, UpgradingWebhookWorkflow]
