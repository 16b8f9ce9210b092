"""`Sealing`: the agents' workflow code seals everything it schedules, and the activities act only on a seal.
Whoever polls the agents' task queue receives the runs' workflow tasks and can answer them
with commands of its own — the activities' other checks (`duragent._activities.caller`) cannot tell its `AgentWorkflow`
from ours, as both are what the server reports. A seal can: an HMAC under the workers' key
(duragent/_config/worker_keys.py), which a stranger's worker does not hold.

- Outbound, in every workflow this worker runs: each activity (local ones too), child workflow and
  continue-as-new gets a seal in its Temporal header, over what is scheduled, by which run and execution, and
  its whole input. The key stays in this worker's memory; only the MAC reaches history.
- Inbound, before any activity acts: the header's seal must verify, under any of the keys, against the
  activity's input and the calling run as the server reports them (`activity.info()`); otherwise a
  non-retryable `CallerRefused` and nothing is done.
- A run that claims a place its start must vouch for (`carry`, handed over by a continue-as-new; `delegation`,
  a child's place in a tree) is refused at its first task unless that start was sealed.
- The other direction: every result an activity of this worker returns (local ones too), and a delegated run's
  result, is sealed in its payload's metadata, and the workflow uses only a result that verifies
  (duragent/_sealed_results.py): whoever answers a task of the queue without the key answers nothing.

Replay never checks a schedule's seal, which is never compared on replay (Temporal matches commands by type and
id, not by header), so recorded histories replay under any keys, and a rotation does not touch running workflows: what
they schedule next is sealed with the new first key; what was scheduled before still verifies while the old
key stays in the list. Results are verified on replay too (a history a stranger's worker wrote must not hand the
run its answers): a run that recorded results under a key keeps needing it until it closes or continues as new.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, cast

from pydantic_core import to_jsonable_python
from temporalio import activity, workflow
from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError
from temporalio.worker import (
    ActivityInboundInterceptor,
    ContinueAsNewInput,
    ExecuteActivityInput,
    ExecuteWorkflowInput,
    Interceptor,
    StartActivityInput,
    StartChildWorkflowInput,
    StartLocalActivityInput,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

from duragent._activities.caller import AGENT_WORKFLOW, refused
from duragent._activities.result_seal import ACTIVITY_RESULT, CHILD_RESULT, result_text
from duragent._config.worker_keys import WorkerKeys, sealed_text
from duragent._sealed_results import ResultOpener, sealed
from duragent._workflows.conversation_inputs import ConversationInput
from duragent._workflows.inputs import AgentInput

HEADER = "agent-seal"
ACTIVITY, CHILD, CONTINUATION = "activity", "child", "continuation"


def _text(what: str, name: str, workflow_id: str, run_id: str, target: str, args: Sequence[Any]) -> bytes:
    return sealed_text(what, name, workflow_id, run_id, target, to_jsonable_python(list(args)))


def _sealed(keys: WorkerKeys, headers: Mapping[str, Payload], text: bytes) -> Mapping[str, Payload]:
    return {**headers, HEADER: Payload(metadata={"encoding": b"binary/plain"}, data=keys.seal(text).encode())}


def _digest(text: bytes) -> str:
    return hashlib.sha256(text).hexdigest()


def _seal_of(headers: Mapping[str, Payload]) -> str | None:
    payload = headers.get(HEADER)
    return payload.data.decode(errors="replace") if payload is not None else None


class Sealing(Interceptor):
    """Worker interceptor: seals what this worker's workflows schedule, and verifies before its activities act."""

    def __init__(self, keys: WorkerKeys) -> None:
        self.keys = keys
        # The SDK makes workflow interceptors from a class, not an instance: this worker's keys ride on one of its own.
        self._workflow_class = type("_SealingWorkflowWithKeys", (_SealingWorkflow,), {"_keys": keys})

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _VerifyingActivity(next, self.keys)

    def workflow_interceptor_class(self, input: WorkflowInterceptorClassInput) -> type[WorkflowInboundInterceptor]:
        return self._workflow_class


class _VerifyingActivity(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, keys: WorkerKeys) -> None:
        super().__init__(next)
        self.keys = keys

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        info = activity.info()
        text = _text(ACTIVITY, info.activity_type, info.workflow_id or "", info.workflow_run_id or "", "", input.args)
        if not self.keys.verifies(_seal_of(input.headers), text):
            raise refused(
                f"{info.activity_type} scheduled by {info.workflow_type} {info.workflow_id!r} is not sealed by the "
                "agents' workers (AGENT_WORKER_KEYS): whoever else polls this task queue cannot make it act"
            )
        result = await self.next.execute_activity(input)
        # Sealed for the schedule it answers (what its seal covers: the activity, the run, the whole input).
        [payload] = activity.payload_converter().to_payloads([result])
        run = (info.workflow_id or "", info.workflow_run_id or "")
        bound = result_text(ACTIVITY_RESULT, info.activity_type, *run, _digest(text), payload)
        return sealed(self.keys, payload, bound, result)


class _SealingWorkflow(WorkflowInboundInterceptor):
    _keys: WorkerKeys

    def init(self, outbound: WorkflowOutboundInterceptor) -> None:
        super().init(_SealingOutbound(outbound, self._keys))

    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        arg = input.args[0] if len(input.args) == 1 else None
        if isinstance(arg, AgentInput | ConversationInput) and not workflow.unsafe.is_replaying():
            # Checked live only: a run accepted once is never refused by a replay under rotated keys.
            why = self._start_refusal(arg, input.headers)
            if why is not None:
                raise ApplicationError(f"run {workflow.info().workflow_id} cannot start: {why}", type="RunRejected")
        result = await self.next.execute_workflow(input)
        info = workflow.info()
        if info.parent is None or info.workflow_type != AGENT_WORKFLOW:
            return result
        # A delegated run's answer, sealed for the run that delegated and this run's own id and first execution.
        [payload] = workflow.payload_converter().to_payloads([result])
        parent, child = info.parent, f"{info.workflow_id}/{info.first_execution_run_id}"
        bound = result_text(CHILD_RESULT, AGENT_WORKFLOW, parent.workflow_id, parent.run_id, child, payload)
        return sealed(self._keys, payload, bound)

    def _start_refusal(self, arg: AgentInput | ConversationInput, headers: Mapping[str, Payload]) -> str | None:
        info = workflow.info()
        if arg.carry is not None and info.continued_run_id is not None:
            # A continuation (of a delegated run too: its place in the tree was vouched for when it started; of a
            # conversation: its transcript, consumption and pending turns are what the next turns start from).
            text = _text(CONTINUATION, info.workflow_type, info.workflow_id, info.continued_run_id, "", [arg])
            if not self._keys.verifies(_seal_of(headers), text):
                return "its `carry` was not handed over by the agents' workers (no valid seal)"
        elif isinstance(arg, AgentInput) and info.parent is not None:
            # A delegated run's place in a tree, or a turn's conversation transcript (`history_ref`, which names
            # what the run reads and shows its model): only the agents' own workflow code hands either to a child.
            claim = "delegated to it" if arg.delegation is not None else "started it from a conversation's transcript"
            if arg.delegation is None and arg.history_ref is None:
                return None
            parent = info.parent
            text = _text(CHILD, info.workflow_type, parent.workflow_id, parent.run_id, info.workflow_id, [arg])
            if not self._keys.verifies(_seal_of(headers), text):
                return f"run {parent.workflow_id} {claim} without the agents' workers' seal"
        return None


class _SealingOutbound(WorkflowOutboundInterceptor):
    def __init__(self, next: WorkflowOutboundInterceptor, keys: WorkerKeys) -> None:
        super().__init__(next)
        self.keys = keys
        self.results = ResultOpener(keys)  # one per run: it counts the run's refusals

    def _seal(self, what: str, name: str, target: str, args: Sequence[Any], headers: Mapping[str, Payload]) -> Any:
        info = workflow.info()
        return _sealed(self.keys, headers, _text(what, name, info.workflow_id, info.run_id, target, args))

    def _schedule(self, name: str, args: Sequence[Any]) -> str:
        """What an activity's result is bound to: its schedule's sealed text (never the seal itself, which a
        rotation changes on replay)."""
        info = workflow.info()
        return _digest(_text(ACTIVITY, name, info.workflow_id, info.run_id, "", args))

    # The handles returned are tasks awaiting the SDK's own (cancelling one cancels the activity or the child): the
    # workflow awaits them and nothing else (`execute_activity`, `run_child`).
    def start_activity(self, input: StartActivityInput) -> workflow.ActivityHandle[Any]:
        input.headers = self._seal(ACTIVITY, input.activity, "", input.args, input.headers)
        schedule = self._schedule(input.activity, input.args)
        opened = self.results.activity(self.next.start_activity, input, schedule, local=False)
        return cast(workflow.ActivityHandle[Any], asyncio.ensure_future(opened))

    def start_local_activity(self, input: StartLocalActivityInput) -> workflow.ActivityHandle[Any]:
        input.headers = self._seal(ACTIVITY, input.activity, "", input.args, input.headers)
        opened = self.results.activity(
            self.next.start_local_activity, input, self._schedule(input.activity, input.args), local=True
        )
        return cast(workflow.ActivityHandle[Any], asyncio.ensure_future(opened))

    async def start_child_workflow(self, input: StartChildWorkflowInput) -> workflow.ChildWorkflowHandle[Any, Any]:
        input.headers = self._seal(CHILD, input.workflow, input.id, input.args, input.headers)
        if input.workflow != AGENT_WORKFLOW:
            return await self.next.start_child_workflow(input)
        wanted, input.ret_type = input.ret_type, RawValue
        handle = await self.next.start_child_workflow(input)
        return cast(workflow.ChildWorkflowHandle[Any, Any], asyncio.ensure_future(self.results.child(handle, wanted)))

    def continue_as_new(self, input: ContinueAsNewInput) -> Any:
        name = input.workflow or workflow.info().workflow_type
        input.headers = self._seal(CONTINUATION, name, "", input.args, input.headers)
        return self.next.continue_as_new(input)
