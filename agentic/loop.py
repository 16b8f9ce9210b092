"""The agent loop's rules, once, with no I/O (the h11 shape).

`AgentLoop.next_step()` says what to do next — call the model, run one tool call (and whether it needs
a human's approval first), or finish and why. The runner does it, wherever it likes (in-process, a
checkpointed step, a Temporal activity), and feeds the outcome back with `model_replied` or
`tool_finished`. Those return the messages to append to the transcript, so the transcript stays well
formed (every requested call answered) whatever the runner is. The state is a pydantic model: a runner
can persist it between any two transitions and rebuild the loop from it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from agentic.budget import Budget, Stop, Usage
from agentic.delegation import Delegated
from agentic.handoffs import HandoffRecord, Role, handed_text
from agentic.messages import Message, ToolCall
from agentic.models.base import ModelReply, ToolSchema
from agentic.omit_defaults import OmitDefaults
from agentic.output import FINAL_ANSWER, OutputSpec
from agentic.results import ToolResult, ToolStatus
from agentic.tools import ToolSpec
from agentic.verdicts import CheckRecord, Verdict

GIVE_UP = "give_up"
GIVE_UP_SCHEMA = ToolSchema(
    name=GIVE_UP,
    description=(
        "Abandon the task when it cannot be completed. Effects already made are undone where possible. Say why."
    ),
    parameters={
        "type": "object",
        "properties": {"reason": {"type": "string", "description": "Why the task cannot be completed."}},
        "required": ["reason"],
    },
)


# What one model reply may ask for. A reply over either limit is refused whole: none of its calls runs, each
# kept call is answered with why, and what is kept of it is small (a runaway or hostile model cannot grow a
# run's state, history or transcript by more than this per step).
MAX_CALLS_PER_REPLY = 64
MAX_CALL_BYTES_PER_REPLY = 256 * 1024  # names, ids and JSON arguments of all the reply's calls together
_KEPT_OF_A_REFUSED_CALL = 200  # characters of a refused call's name, id and arguments kept in the transcript


def admitted(reply: ModelReply) -> ModelReply:
    """The reply as every runner records it: role `assistant`, and tool calls within the per-reply limits.
    Over a limit, the reply is `refused` and keeps at most `MAX_CALLS_PER_REPLY` calls, each cut short.
    Idempotent, so a boundary (the model activity) and the loop can both apply it."""
    message = reply.message
    if message.role != "assistant":
        message = message.model_copy(update={"role": "assistant"})
    calls = message.tool_calls
    size = sum(len(c.id) + len(c.name) + len(c.canonical_arguments) for c in calls)
    refused = reply.refused
    if refused is None and len(calls) > MAX_CALLS_PER_REPLY:
        refused = (
            f"the reply asked for {len(calls)} tool calls at once; at most {MAX_CALLS_PER_REPLY} are allowed "
            "in one reply, so none of them ran. Ask for fewer at a time"
        )
    elif refused is None and size > MAX_CALL_BYTES_PER_REPLY:
        refused = (
            f"the reply's tool calls take {size:,} bytes; at most {MAX_CALL_BYTES_PER_REPLY:,} are allowed in one "
            "reply, so none of them ran. Send smaller arguments"
        )
    if refused is not None and reply.refused is None:
        cut = _KEPT_OF_A_REFUSED_CALL
        message = message.model_copy(
            update={
                "tool_calls": tuple(
                    ToolCall(
                        id=c.id if len(c.id) <= cut else f"{c.id[: cut // 2]}~{i}",
                        name=c.name[:cut],
                        arguments=c.canonical_arguments[:cut],
                    )
                    for i, c in enumerate(calls[:MAX_CALLS_PER_REPLY], 1)
                )
            }
        )
    if message is reply.message and refused == reply.refused:
        return reply
    return reply.model_copy(update={"message": message, "refused": refused})


def idempotency_key(run_id: str, call_uid: str) -> str:
    """The key a tool call's effect is recorded under: the same on every retry, replay and resume.

    `call_uid` is the runner's identity of the call (`ToolCall.uid`), never the provider's id, which may
    repeat within a run: a repeated provider id must not collide with an earlier call's effect."""
    return f"{run_id}:{call_uid}"


def call_uid(step: int, position: int) -> str:
    """The runner's identity of the `position`-th call (from 1) the model asked for at `step`: unique
    within a run, because steps only grow (a resumed run carries its consumed steps over)."""
    return f"{step}.{position}"


def step_of(uid: str) -> int | None:
    """The step a call was asked for at, from its `call_uid`; None for a call the loop never queued."""
    step, dot, position = uid.partition(".")
    return int(step) if dot and step.isdigit() and position.isdigit() else None


def initial_messages(system: str | None, task: str, history: Sequence[Message] | None = None) -> list[Message]:
    """System message, then the history in order, then the task."""
    head = [Message(role="system", content=system)] if system else []
    return [*head, *(history or ()), Message(role="user", content=task)]


def tool_schemas(
    specs: Mapping[str, ToolSpec], recorded: Sequence[ToolSchema] = (), output: OutputSpec | None = None
) -> list[ToolSchema]:
    """What the model is offered: the registry's tools (and the agent's handoffs), those `recorded` when the
    run started (its MCP tools), `final_answer` for a typed agent and, unless a tool takes the name, `give_up`."""
    schemas = [*(spec.schema() for spec in specs.values()), *recorded]
    if output is not None:
        schemas.append(output.tool_schema())
    return schemas if any(s.name == GIVE_UP for s in schemas) else [*schemas, GIVE_UP_SCHEMA]


class CallModel(BaseModel):
    model_config = ConfigDict(frozen=True)
    step: int  # the step this call opens, counting carried-over steps
    call_index: int  # model calls this loop made before this one (after a handoff: the active agent made)


class RunTool(BaseModel):
    model_config = ConfigDict(frozen=True)
    call: ToolCall
    spec: ToolSpec | None  # None: unknown tool; dispatch answers it with an error
    needs_approval: bool


class Finish(BaseModel):
    model_config = ConfigDict(frozen=True)
    stop: Stop
    output: str | None


NextStep = CallModel | RunTool | Finish


class ToolRecord(OmitDefaults):
    """A resolved call, in order. Mutating calls that succeeded are what a saga may need to undo."""

    model_config = ConfigDict(frozen=True)
    step: int
    call: ToolCall
    status: ToolStatus = ToolStatus.OK
    content: str = ""
    mutating: bool = False
    content_ref: str | None = None  # the full output, when `content` is a claim-check preview
    delegation: Delegated | None = None  # a delegation: the child's run, consumption and planned undo
    agent: str | None = None  # the agent that made the call, once the run was handed to another (None before)


def trajectory(records: Sequence[ToolRecord]) -> list[str]:
    """Names of the tools that executed successfully, in order (the built-in give-up and final answer are not
    tools)."""
    return [r.call.name for r in records if r.status is ToolStatus.OK and r.call.name not in (GIVE_UP, FINAL_ANSWER)]


class LoopState(BaseModel):
    consumed: Usage = Field(default_factory=Usage)
    calls_made: int = 0
    seen: list[str] = Field(default_factory=list)
    queue: list[ToolCall] = Field(default_factory=list)
    records: list[ToolRecord] = Field(default_factory=list)
    stop: Stop | None = None
    stop_detail: str | None = None
    output: str | None = None  # the answer as the run keeps it: text, or JSON for a typed agent
    agent: str | None = None  # the active agent, once the run was handed to another (None: the run's own)
    handoffs: list[HandoffRecord] = Field(default_factory=list)
    checks: list[CheckRecord] = Field(default_factory=list)  # every verdict of the agents' checks, in order
    retries: int = 0  # times the model was sent back (an invalid answer, a check's send-back)
    agent_calls: dict[str, int] = Field(default_factory=dict)  # model calls by agent, once the run was handed over
    verdicts: dict[str, Verdict] = Field(default_factory=dict)  # of queued calls, by `uid`, until they settle

    def slim_records(self) -> None:
        """Drop the outputs of successful read-only calls from their records: the outputs stay in the
        transcript, and a long durable run carries its records across continue-as-new. Mutating records
        keep everything (a compensation receives the original arguments and result), and so do errors."""
        self.records = [
            r.model_copy(update={"content": "", "content_ref": None})
            if not r.mutating and r.status is ToolStatus.OK and r.content
            else r
            for r in self.records
        ]


class LoopError(RuntimeError):
    """A runner fed the loop an outcome it did not ask for: a bug in the runner, never in input."""


class AgentLoop:
    """`specs` are the run's own agent's tools; `role` says the rest of it (its output type, how often the model
    may be sent back); `team` are the agents the run may be handed to, by name (their roles, as recorded)."""

    def __init__(
        self,
        budget: Budget,
        specs: Mapping[str, ToolSpec],
        state: LoopState | None = None,
        *,
        role: Role | None = None,
        team: Mapping[str, Role] | None = None,
    ) -> None:
        self.budget = budget
        self.state = state if state is not None else LoopState()
        self.own = (role or Role(name="")).model_copy(update={"tools": dict(specs)})
        self.team = dict(team or {})
        self.role = self.own
        if self.state.agent is not None:  # rebuilt after a handoff: the active agent's rules
            self.role = self.team.get(self.state.agent, self.own)
        self.specs = dict(self.role.tools)

    @property
    def active(self) -> str:
        """The name of the agent whose turn it is."""
        return self.role.name

    def next_step(self) -> NextStep:
        s = self.state
        if s.stop is not None:
            return Finish(stop=s.stop, output=s.output)
        if s.queue:
            call = s.queue[0]
            spec = self.specs.get(call.name)
            return RunTool(call=call, spec=spec, needs_approval=bool(spec and spec.requires_confirmation))
        exhausted = self.budget.exhausted_by(s.consumed)
        if exhausted is not None:
            s.stop = exhausted
            return Finish(stop=exhausted, output=None)
        # After a handoff, each agent's model calls are counted apart: the index a model is asked with is its own
        # (a scripted model answers its agent's turns from its first).
        index = s.agent_calls.get(self.role.name, 0) if s.handoffs else s.calls_made
        return CallModel(step=s.consumed.steps + 1, call_index=index)

    def model_replied(self, reply: ModelReply) -> list[Message]:
        if not isinstance(self.next_step(), CallModel):
            raise LoopError("a model reply arrived when no model call was requested")
        s = self.state
        reply = admitted(reply)
        message = reply.message
        s.consumed = s.consumed.plus(
            Usage(steps=1, input_tokens=reply.input_tokens, output_tokens=reply.output_tokens, cost=reply.cost)
        )
        s.calls_made += 1
        if s.handoffs:
            s.agent_calls[self.role.name] = s.agent_calls.get(self.role.name, 0) + 1
        verdicts = reply.verdicts
        if not message.tool_calls:
            return [message, *self._answered(verdicts.answer if verdicts else None, message.content)]
        step = s.consumed.steps
        s.queue = [call.model_copy(update={"uid": call_uid(step, i)}) for i, call in enumerate(message.tool_calls, 1)]
        if reply.refused is not None:
            answers = []
            while s.queue:
                answers.append(self._resolve(ToolResult.skipped(s.queue[0], reply.refused)))
            return [message, *answers]
        if verdicts is not None:
            s.verdicts = {s.queue[i - 1].uid: v for i, v in verdicts.calls.items() if 0 < i <= len(s.queue)}
        return [message, *self._settle()]

    def _answered(self, verdict: Verdict | None, text: str) -> list[Message]:
        """A reply without tool calls: the answer, unless the agent's type or checks say otherwise."""
        s = self.state
        if verdict is None:
            if self.role.output is not None:  # a runner that did not judge the reply: never a typed answer
                verdict = Verdict(outcome="invalid", reason="the answer was not validated")
            else:
                s.stop, s.output = Stop.ANSWERED, text
                return []
        self._audit(verdict, "answer", "")
        if verdict.outcome == "ok":
            s.stop, s.output = Stop.ANSWERED, verdict.answer if verdict.answer is not None else text
            return []
        if verdict.outcome == "refuse" or not self._may_send_back():
            s.stop, s.stop_detail = self._stop_for(verdict), _why(verdict, "the answer")
            return []
        return [Message(role="user", content=_send_back_text(verdict, "your answer"))]

    def _may_send_back(self) -> bool:
        s = self.state
        if s.retries >= self.role.output_retries:
            return False
        s.retries += 1
        return True

    @staticmethod
    def _stop_for(verdict: Verdict) -> Stop:
        return Stop.INVALID_OUTPUT if verdict.outcome == "invalid" else Stop.CHECK_REFUSED

    def _audit(self, verdict: Verdict, target: str, call_id: str) -> None:
        s = self.state
        s.checks.append(
            CheckRecord(
                step=s.consumed.steps,
                target=target,
                call_id=call_id,
                agent=self.role.name if s.handoffs else "",
                outcome=verdict.outcome,
                check=verdict.check,
                reason=verdict.reason,
                passed=verdict.checks,
            )
        )

    def tool_finished(self, result: ToolResult) -> list[Message]:
        s = self.state
        if not s.queue or s.queue[0].id != result.call_id or s.stop is not None:
            raise LoopError(f"a result for call {result.call_id!r} arrived when it was not requested")
        call = s.queue.pop(0)
        self._record(call, result)
        if result.delegation is not None:
            # The child's consumption is the parent's: one budget, whatever the depth.
            s.consumed = s.consumed.plus(result.delegation.usage)
        s.seen.append(_repeat_key(call))
        if result.status is ToolStatus.FATAL:
            s.stop, s.stop_detail = Stop.TOOL_FAILED, result.content
        return [result.to_message(), *self._settle()]

    def stop_with(self, stop: Stop, detail: str | None = None) -> list[Message]:
        """End the run from outside the rules (cancellation, an approval policy); answers queued calls."""
        s = self.state
        if s.stop is None:
            s.stop, s.stop_detail = stop, detail
        return self._settle()

    @property
    def finished(self) -> bool:
        return self.state.stop is not None

    def _settle(self) -> list[Message]:
        """Resolve, without I/O, queued calls whose outcome the rules alone decide."""
        s = self.state
        out: list[Message] = []
        while s.queue and s.stop is None:
            call = s.queue[0]
            if call.name == GIVE_UP and GIVE_UP not in self.specs:
                reason = call.arguments.get("reason", "") if isinstance(call.arguments, dict) else call.arguments
                s.stop, s.stop_detail = Stop.GAVE_UP, str(reason) or "the model gave up"
                out.append(self._resolve(ToolResult.of(call, ToolStatus.OK, "The run was abandoned.")))
            elif ((verdict := s.verdicts.pop(call.uid, None)) is not None and verdict.outcome != "ok") or (
                call.name == FINAL_ANSWER and self.role.output is not None
            ):
                out.append(self._judged(call, verdict))
            elif _repeat_key(call) in s.seen:
                s.stop = Stop.REPEATED_CALL
                s.stop_detail = f"{call.name} repeated with the same arguments"
                out.append(self._resolve(ToolResult.repeated(call)))
            elif (spec := self.specs.get(call.name)) is not None and spec.handoff is not None:
                if verdict is not None:
                    self._audit(verdict, call.name, call.uid)
                out += self._hand_off(call, spec.handoff)
            else:
                if verdict is not None:
                    self._audit(verdict, call.name, call.uid)
                break
        if s.stop is not None:
            while s.queue:
                out.append(self._resolve(ToolResult.skipped(s.queue[0], f"the run stopped ({s.stop.value})")))
        return out

    def _judged(self, call: ToolCall, verdict: Verdict | None) -> Message:
        """A final answer, or a call whose checks did not pass: settled by its verdict, without running."""
        s = self.state
        answer = call.name == FINAL_ANSWER and self.role.output is not None
        what = "the final answer" if answer else f"the arguments for {call.name}"
        if verdict is None:  # a runner that did not judge the reply: never a typed answer
            verdict = Verdict(outcome="invalid", reason="the answer was not validated")
        self._audit(verdict, "answer" if answer else call.name, call.uid)
        if verdict.outcome == "ok":  # only a final answer reaches here ok
            s.stop, s.output = Stop.ANSWERED, verdict.answer
            return self._resolve(ToolResult.of(call, ToolStatus.OK, "Final answer accepted."))
        status = ToolStatus.INVALID_ARGUMENTS
        if verdict.outcome == "refuse" or not self._may_send_back():
            s.stop, s.stop_detail = self._stop_for(verdict), _why(verdict, what)
            status = ToolStatus.REFUSED if verdict.outcome == "refuse" else status
            return self._resolve(ToolResult.of(call, status, f"Error: {s.stop_detail}. The run stopped."))
        return self._resolve(ToolResult.of(call, status, "Error: " + _send_back_text(verdict, what)))

    def _hand_off(self, call: ToolCall, target: str) -> list[Message]:
        """The run goes on as `target`: its rules from the next model call on. Calls queued after the handoff
        were asked for by the agent handing over, and do not run."""
        s = self.state
        role = self.team.get(target)
        if role is None:
            return [
                self._resolve(
                    ToolResult.of(call, ToolStatus.ERROR, f"Error: there is no agent {target!r} to hand the run to.")
                )
            ]
        if not s.handoffs:
            s.agent_calls[self.role.name] = s.calls_made
        s.handoffs.append(HandoffRecord(step=s.consumed.steps, call_id=call.uid, source=self.role.name, target=target))
        out = [self._resolve(ToolResult.of(call, ToolStatus.OK, handed_text(target)))]
        while s.queue:
            out.append(self._resolve(ToolResult.skipped(s.queue[0], f"the run was handed to {target}")))
        s.agent, self.role, self.specs = target, role, dict(role.tools)
        return out

    def _resolve(self, result: ToolResult) -> Message:
        call = self.state.queue.pop(0)
        self.state.verdicts.pop(call.uid, None)  # a call skipped before its turn leaves no verdict behind
        self._record(call, result)
        return result.to_message()

    def _record(self, call: ToolCall, result: ToolResult) -> None:
        self.state.records.append(self._record_of(call, result))

    def _record_of(self, call: ToolCall, result: ToolResult) -> ToolRecord:
        spec = self.specs.get(call.name)
        return ToolRecord(
            step=self.state.consumed.steps,
            call=call,
            status=result.status,
            content=result.content,
            mutating=bool(spec and spec.mutating),
            content_ref=result.content_ref,
            delegation=result.delegation,
            agent=self.role.name if self.state.handoffs else None,
        )


def _repeat_key(call: ToolCall) -> str:
    # A digest, not the arguments themselves: the seen-set is carried across continue-as-new and must
    # stay small however large the arguments were.
    return hashlib.sha256(f"{call.name}\x00{call.canonical_arguments}".encode()).hexdigest()[:32]


def _why(verdict: Verdict, what: str) -> str:
    if verdict.outcome == "invalid":
        return f"{what} kept failing validation: {verdict.reason}"
    if verdict.outcome == "send_back":
        return f"check {verdict.check} kept sending {what} back: {verdict.reason}"
    return f"check {verdict.check} refused {what}: {verdict.reason}"


def _send_back_text(verdict: Verdict, what: str) -> str:
    if verdict.outcome == "invalid":
        return f"{what} did not validate: {verdict.reason}. Correct it and try again."
    return f"check {verdict.check} sent {what} back: {verdict.reason}. Correct it and try again."
