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

Replay never checks and a seal is never compared on replay (Temporal matches commands by type and id, not by
header), so recorded histories replay under any keys, and a rotation does not touch running workflows: what
they schedule next is sealed with the new first key; what was scheduled before still verifies while the old
key stays in the list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic_core import to_jsonable_python
from temporalio import activity, workflow
from temporalio.api.common.v1 import Payload
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

from duragent._activities.caller import refused
from duragent._config.worker_keys import WorkerKeys, sealed_text
from duragent._workflows.inputs import AgentInput

HEADER = "agent-seal"
ACTIVITY, CHILD, CONTINUATION = "activity", "child", "continuation"


def _text(what: str, name: str, workflow_id: str, run_id: str, target: str, args: Sequence[Any]) -> bytes:
    return sealed_text(what, name, workflow_id, run_id, target, to_jsonable_python(list(args)))


def _sealed(keys: WorkerKeys, headers: Mapping[str, Payload], text: bytes) -> Mapping[str, Payload]:
    return {**headers, HEADER: Payload(metadata={"encoding": b"binary/plain"}, data=keys.seal(text).encode())}


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
        return await self.next.execute_activity(input)


class _SealingWorkflow(WorkflowInboundInterceptor):
    _keys: WorkerKeys

    def init(self, outbound: WorkflowOutboundInterceptor) -> None:
        super().init(_SealingOutbound(outbound, self._keys))

    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        arg = input.args[0] if len(input.args) == 1 else None
        if isinstance(arg, AgentInput) and not workflow.unsafe.is_replaying():
            # Checked live only: a run accepted once is never refused by a replay under rotated keys.
            why = self._start_refusal(arg, input.headers)
            if why is not None:
                raise ApplicationError(f"run {workflow.info().workflow_id} cannot start: {why}", type="RunRejected")
        return await self.next.execute_workflow(input)

    def _start_refusal(self, arg: AgentInput, headers: Mapping[str, Payload]) -> str | None:
        info = workflow.info()
        if arg.carry is not None and info.continued_run_id is not None:
            # A continuation (of a delegated run too: its place in the tree was vouched for when it started).
            text = _text(CONTINUATION, info.workflow_type, info.workflow_id, info.continued_run_id, "", [arg])
            if not self._keys.verifies(_seal_of(headers), text):
                return "its `carry` was not handed over by the agents' workers (no valid seal)"
        elif arg.delegation is not None and info.parent is not None:
            parent = info.parent
            text = _text(CHILD, info.workflow_type, parent.workflow_id, parent.run_id, info.workflow_id, [arg])
            if not self._keys.verifies(_seal_of(headers), text):
                return f"run {parent.workflow_id} delegated to it without the agents' workers' seal"
        return None


class _SealingOutbound(WorkflowOutboundInterceptor):
    def __init__(self, next: WorkflowOutboundInterceptor, keys: WorkerKeys) -> None:
        super().__init__(next)
        self.keys = keys

    def _seal(self, what: str, name: str, target: str, args: Sequence[Any], headers: Mapping[str, Payload]) -> Any:
        info = workflow.info()
        return _sealed(self.keys, headers, _text(what, name, info.workflow_id, info.run_id, target, args))

    def start_activity(self, input: StartActivityInput) -> workflow.ActivityHandle[Any]:
        input.headers = self._seal(ACTIVITY, input.activity, "", input.args, input.headers)
        return self.next.start_activity(input)

    def start_local_activity(self, input: StartLocalActivityInput) -> workflow.ActivityHandle[Any]:
        input.headers = self._seal(ACTIVITY, input.activity, "", input.args, input.headers)
        return self.next.start_local_activity(input)

    async def start_child_workflow(self, input: StartChildWorkflowInput) -> workflow.ChildWorkflowHandle[Any, Any]:
        input.headers = self._seal(CHILD, input.workflow, input.id, input.args, input.headers)
        return await self.next.start_child_workflow(input)

    def continue_as_new(self, input: ContinueAsNewInput) -> Any:
        name = input.workflow or workflow.info().workflow_type
        input.headers = self._seal(CONTINUATION, name, "", input.args, input.headers)
        return self.next.continue_as_new(input)
