"""The pure AgentLoop, driven by hand: its steps, budgets, repeat guard, stops and persistable state."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from agentic import (
    Agent,
    AgentLoop,
    Budget,
    CallModel,
    FakeModel,
    Finish,
    LoopState,
    Message,
    ModelReply,
    Registry,
    RunTool,
    Stop,
    ToolCall,
    ToolResult,
    ToolSpec,
    ToolStatus,
    Usage,
    give_up,
    tool,
    tool_call,
)
from agentic.loop import GIVE_UP, LoopError, initial_messages, tool_schemas


def spec(name: str, *, mutating: bool = False, requires_confirmation: bool = False) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=f"The {name} tool.",
        parameters={"type": "object", "properties": {}, "required": []},
        mutating=mutating,
        requires_confirmation=requires_confirmation,
    )


SPECS = {
    "lookup": spec("lookup"),
    "charge": spec("charge", mutating=True),
    "refund": spec("refund", mutating=True, requires_confirmation=True),
}


def call(id: str, name: str = "lookup", **arguments: object) -> ToolCall:
    return ToolCall(id=id, name=name, arguments=arguments)


def reply(
    *calls: ToolCall, content: str = "", input_tokens: int = 10, output_tokens: int = 5, cost: float = 0.001
) -> ModelReply:
    return ModelReply(
        message=Message("assistant", content, tool_calls=calls),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost=cost,
    )


def ok(c: ToolCall, content: str = "done", status: ToolStatus = ToolStatus.OK) -> ToolResult:
    return ToolResult.of(c, status, content)


def assert_well_formed(messages: Sequence[Message]) -> None:
    """Every tool call of every assistant message is answered by exactly one tool message, after it."""
    answered = [m.tool_call_id for m in messages if m.role == "tool"]
    requested = [c.id for m in messages if m.role == "assistant" for c in m.tool_calls]
    assert sorted(answered) == sorted(requested)
    for i, m in enumerate(messages):
        for c in m.tool_calls:
            assert any(later.role == "tool" and later.tool_call_id == c.id for later in messages[i + 1 :])


def test_step_sequence() -> None:
    loop = AgentLoop(Budget(), SPECS)
    assert loop.next_step() == CallModel(step=1, call_index=0)
    first = call("c1", q="x")
    out = loop.model_replied(reply(first))
    assert [m.role for m in out] == ["assistant"]
    assert out[0].tool_calls == (first,)
    step = loop.next_step()
    assert isinstance(step, RunTool)
    # The queued call is the model's, with the runner's identity added: step 1, first call.
    assert step.call == first.model_copy(update={"uid": "1.1"})
    assert step.spec == SPECS["lookup"]
    assert step.needs_approval is False
    # Asking again does not advance anything.
    assert loop.next_step() == step
    out = loop.tool_finished(ok(first, "found it"))
    assert out == [Message("tool", "found it", tool_call_id="c1")]
    assert loop.next_step() == CallModel(step=2, call_index=1)
    out = loop.model_replied(reply(content="All done."))
    assert out == [Message("assistant", "All done.")]
    assert loop.next_step() == Finish(stop=Stop.ANSWERED, output="All done.")
    assert loop.finished
    assert loop.state.consumed == Usage(steps=2, input_tokens=20, output_tokens=10, cost=0.002)
    assert [(r.call.id, r.call.uid, r.status, r.content) for r in loop.state.records] == [
        ("c1", "1.1", ToolStatus.OK, "found it")
    ]


def test_a_non_assistant_reply_is_recorded_as_assistant() -> None:
    loop = AgentLoop(Budget(), SPECS)
    out = loop.model_replied(ModelReply(message=Message("user", "odd")))
    assert out[0].role == "assistant"
    assert loop.state.output == "odd"


def test_records_mark_mutating_calls() -> None:
    loop = AgentLoop(Budget(), SPECS)
    a, b = call("c1", "lookup"), call("c2", "charge")
    loop.model_replied(reply(a, b))
    loop.tool_finished(ok(a))
    loop.tool_finished(ok(b))
    assert [(r.call.name, r.mutating, r.step) for r in loop.state.records] == [
        ("lookup", False, 1),
        ("charge", True, 1),
    ]


def run_tool_round(loop: AgentLoop, r: ModelReply) -> None:
    assert isinstance(loop.next_step(), CallModel)
    loop.model_replied(r)
    while isinstance(step := loop.next_step(), RunTool):
        loop.tool_finished(ok(step.call))


def test_max_steps() -> None:
    loop = AgentLoop(Budget(max_steps=2), SPECS)
    run_tool_round(loop, reply(call("c1", n=1)))
    run_tool_round(loop, reply(call("c2", n=2)))
    assert loop.next_step() == Finish(stop=Stop.STEP_BUDGET, output=None)
    assert loop.state.stop is Stop.STEP_BUDGET
    assert loop.state.consumed.steps == 2


def test_budget_is_checked_before_the_model_call_not_before_tools() -> None:
    loop = AgentLoop(Budget(max_steps=1), SPECS)
    loop.model_replied(reply(call("c1", n=1), call("c2", n=2)))
    # The step budget is spent, but the calls the model already made still run.
    assert isinstance(loop.next_step(), RunTool)
    loop.tool_finished(ok(call("c1", n=1)))
    assert isinstance(loop.next_step(), RunTool)
    loop.tool_finished(ok(call("c2", n=2)))
    assert loop.next_step() == Finish(stop=Stop.STEP_BUDGET, output=None)


@pytest.mark.parametrize(
    ("budget", "spent", "stop"),
    [
        (Budget(max_input_tokens=100), dict(input_tokens=100), Stop.TOKEN_BUDGET),
        (Budget(max_output_tokens=50), dict(output_tokens=50), Stop.TOKEN_BUDGET),
        (Budget(max_cost=0.01), dict(cost=0.01), Stop.COST_BUDGET),
        (Budget(max_steps=1), dict(), Stop.STEP_BUDGET),
    ],
    ids=["input-tokens", "output-tokens", "cost", "steps"],
)
def test_each_budget_limit_gives_its_stop(budget: Budget, spent: dict[str, float], stop: Stop) -> None:
    loop = AgentLoop(budget, SPECS)
    run_tool_round(loop, reply(call("c1"), **{"input_tokens": 1, "output_tokens": 1, "cost": 0.0, **spent}))
    assert loop.next_step() == Finish(stop=stop, output=None)


@pytest.mark.parametrize(
    "budget",
    [Budget(max_input_tokens=100), Budget(max_output_tokens=50), Budget(max_cost=0.01), Budget(max_steps=2)],
    ids=["input-tokens", "output-tokens", "cost", "steps"],
)
def test_below_each_limit_the_model_is_called_again(budget: Budget) -> None:
    loop = AgentLoop(budget, SPECS)
    run_tool_round(loop, reply(call("c1"), input_tokens=99, output_tokens=49, cost=0.0099))
    assert loop.next_step() == CallModel(step=2, call_index=1)


def test_an_exhausted_carried_budget_stops_before_any_model_call() -> None:
    loop = AgentLoop(Budget(max_cost=1.0), SPECS, LoopState(consumed=Usage(steps=9, cost=1.0)))
    assert loop.next_step() == Finish(stop=Stop.COST_BUDGET, output=None)


def test_carried_over_consumption_allows_exactly_the_remainder() -> None:
    state = LoopState(consumed=Usage(steps=3, input_tokens=300, output_tokens=30, cost=0.3))
    loop = AgentLoop(Budget(max_steps=4), SPECS, state)
    assert loop.next_step() == CallModel(step=4, call_index=0)
    run_tool_round(loop, reply(call("c1")))
    assert loop.next_step() == Finish(stop=Stop.STEP_BUDGET, output=None)
    assert loop.state.calls_made == 1
    assert loop.state.consumed == Usage(steps=4, input_tokens=310, output_tokens=35, cost=0.301)


def test_carried_over_consumption_via_agent() -> None:
    model = FakeModel([tool_call("lookup", {"n": 1}), tool_call("lookup", {"n": 2}), "done"])

    @tool(description="Look up.", n="A number.")
    def lookup(n: int) -> str:
        return str(n)

    run = Agent(model, Registry([lookup]), budget=Budget(max_steps=4)).run("go", consumed=Usage(steps=3))
    assert run.stop is Stop.STEP_BUDGET
    assert model.calls == 1
    assert run.step_count == 4


def test_repeat_guard_across_replies() -> None:
    loop = AgentLoop(Budget(), SPECS)
    messages: list[Message] = []
    first = call("c1", "charge", invoice="inv-9", amount=5)
    messages += loop.model_replied(reply(first))
    messages += loop.tool_finished(ok(first))
    # Same name, same arguments in another key order: a repeat.
    again = call("c2", "charge", amount=5, invoice="inv-9")
    messages += loop.model_replied(reply(again))
    assert loop.next_step() == Finish(stop=Stop.REPEATED_CALL, output=None)
    assert loop.state.stop_detail is not None and "charge" in loop.state.stop_detail
    # The repeat was answered without running: no RunTool was ever offered for it.
    assert messages[-1].role == "tool"
    assert messages[-1].tool_call_id == "c2"
    assert "already called with these exact arguments" in messages[-1].content
    assert [r.status for r in loop.state.records] == [ToolStatus.OK, ToolStatus.REPEATED]
    assert_well_formed(messages)


def test_repeat_guard_within_one_reply_skips_the_rest() -> None:
    loop = AgentLoop(Budget(), SPECS)
    messages: list[Message] = []
    a1, a2, b = call("c1", x=1), call("c2", x=1), call("c3", "charge")
    messages += loop.model_replied(reply(a1, a2, b))
    step = loop.next_step()
    assert isinstance(step, RunTool) and step.call.id == a1.id
    messages += loop.tool_finished(ok(a1))
    assert loop.next_step() == Finish(stop=Stop.REPEATED_CALL, output=None)
    assert [(r.call.id, r.status) for r in loop.state.records] == [
        ("c1", ToolStatus.OK),
        ("c2", ToolStatus.REPEATED),
        ("c3", ToolStatus.SKIPPED),
    ]
    assert_well_formed(messages)


def test_different_arguments_are_not_a_repeat() -> None:
    loop = AgentLoop(Budget(), SPECS)
    run_tool_round(loop, reply(call("c1", x=1)))
    run_tool_round(loop, reply(call("c2", x=2)))
    assert loop.next_step() == CallModel(step=3, call_index=2)
    assert [r.status for r in loop.state.records] == [ToolStatus.OK, ToolStatus.OK]


def test_a_failed_call_repeated_is_still_a_repeat() -> None:
    loop = AgentLoop(Budget(), SPECS)
    first = call("c1", x=1)
    loop.model_replied(reply(first))
    loop.tool_finished(ok(first, "Error: boom", ToolStatus.ERROR))
    loop.model_replied(reply(call("c2", x=1)))
    assert loop.next_step().stop is Stop.REPEATED_CALL  # type: ignore[union-attr]


def test_repeat_guard_via_agent_does_not_execute_the_repeat() -> None:
    executed: list[int] = []

    @tool(description="Charge.", n="Amount.", mutating=True)
    def charge(n: int) -> str:
        executed.append(n)
        return "charged"

    run = Agent(
        FakeModel([tool_call("charge", {"n": 1}), tool_call("charge", {"n": 1}), "never"]), Registry([charge])
    ).run("go")
    assert run.stop is Stop.REPEATED_CALL
    assert executed == [1]
    assert run.trajectory() == ["charge"]
    assert_well_formed(run.messages)


def test_calls_in_history_do_not_count_as_repeats() -> None:
    executed: list[int] = []

    @tool(description="Charge.", n="Amount.", mutating=True)
    def charge(n: int) -> str:
        executed.append(n)
        return "charged"

    history = [
        Message("user", "charge 1"),
        Message("assistant", tool_calls=[ToolCall(id="old_1", name="charge", arguments={"n": 1})]),
        Message("tool", "charged", tool_call_id="old_1"),
    ]
    run = Agent(FakeModel([tool_call("charge", {"n": 1}), "done"]), Registry([charge])).run("again", history=history)
    assert run.stop is Stop.ANSWERED
    assert executed == [1]
    assert run.trajectory() == ["charge"]


def test_give_up() -> None:
    loop = AgentLoop(Budget(), SPECS)
    out = loop.model_replied(reply(give_up("no access to the ledger"), call("c9", "charge")))
    assert loop.next_step() == Finish(stop=Stop.GAVE_UP, output=None)
    assert loop.state.stop_detail == "no access to the ledger"
    assert [m.role for m in out] == ["assistant", "tool", "tool"]
    assert out[1].content == "The run was abandoned."
    assert [r.status for r in loop.state.records] == [ToolStatus.OK, ToolStatus.SKIPPED]
    assert_well_formed(out)


def test_give_up_after_a_queued_call_runs_that_call_first() -> None:
    loop = AgentLoop(Budget(), SPECS)
    first = call("c1")
    loop.model_replied(reply(first, give_up("stuck")))
    step = loop.next_step()
    assert isinstance(step, RunTool) and step.call.id == first.id
    loop.tool_finished(ok(first))
    assert loop.next_step() == Finish(stop=Stop.GAVE_UP, output=None)
    assert loop.state.stop_detail == "stuck"


def test_give_up_is_offered_unless_a_tool_takes_the_name() -> None:
    assert [s.name for s in tool_schemas(SPECS)] == ["lookup", "charge", "refund", GIVE_UP]
    own = {GIVE_UP: spec(GIVE_UP)}
    assert [s.name for s in tool_schemas(own)] == [GIVE_UP]
    # A registered give_up is an ordinary tool: the loop runs it instead of stopping.
    loop = AgentLoop(Budget(), own)
    loop.model_replied(reply(give_up("x")))
    assert isinstance(loop.next_step(), RunTool)


def test_fatal_result_stops_and_skips_the_rest() -> None:
    loop = AgentLoop(Budget(), SPECS)
    a, b, c = call("c1", "charge"), call("c2", "lookup"), call("c3", "refund")
    messages = loop.model_replied(reply(a, b, c))
    messages += loop.tool_finished(ok(a, "Error: charge failed permanently: closed", ToolStatus.FATAL))
    assert loop.next_step() == Finish(stop=Stop.TOOL_FAILED, output=None)
    assert loop.state.stop_detail == "Error: charge failed permanently: closed"
    assert [(r.call.id, r.status) for r in loop.state.records] == [
        ("c1", ToolStatus.FATAL),
        ("c2", ToolStatus.SKIPPED),
        ("c3", ToolStatus.SKIPPED),
    ]
    assert "was not executed" in messages[-1].content
    assert_well_formed(messages)


@pytest.mark.parametrize("status", [ToolStatus.ERROR, ToolStatus.RETRYABLE, ToolStatus.TIMEOUT, ToolStatus.DECLINED])
def test_non_fatal_failures_continue_the_run(status: ToolStatus) -> None:
    loop = AgentLoop(Budget(), SPECS)
    a = call("c1")
    loop.model_replied(reply(a))
    loop.tool_finished(ok(a, "Error: something", status))
    assert isinstance(loop.next_step(), CallModel)


def test_stop_with_cancelled_answers_queued_calls() -> None:
    loop = AgentLoop(Budget(), SPECS)
    messages = loop.model_replied(reply(call("c1"), call("c2", "charge")))
    out = loop.stop_with(Stop.CANCELLED, "the user cancelled")
    messages += out
    assert [m.tool_call_id for m in out] == ["c1", "c2"]
    assert all("cancelled" in m.content for m in out)
    assert loop.next_step() == Finish(stop=Stop.CANCELLED, output=None)
    assert loop.state.stop_detail == "the user cancelled"
    assert_well_formed(messages)
    # A later stop does not overwrite the first.
    assert loop.stop_with(Stop.APPROVAL_EXPIRED) == []
    assert loop.state.stop is Stop.CANCELLED


def test_unrequested_results_raise_loop_error() -> None:
    loop = AgentLoop(Budget(), SPECS)
    with pytest.raises(LoopError):
        loop.tool_finished(ok(call("c1")))  # nothing requested yet
    a, b = call("c1"), call("c2", x=2)
    loop.model_replied(reply(a, b))
    with pytest.raises(LoopError):
        loop.tool_finished(ok(b))  # out of order
    with pytest.raises(LoopError):
        loop.model_replied(reply(content="hi"))  # a tool call is pending, not a model call
    loop.tool_finished(ok(a))
    with pytest.raises(LoopError):
        loop.tool_finished(ok(a))  # twice
    loop.tool_finished(ok(b))
    loop.model_replied(reply(content="done"))
    with pytest.raises(LoopError):
        loop.model_replied(reply(content="again"))  # finished
    with pytest.raises(LoopError):
        loop.tool_finished(ok(call("c3")))


def test_needs_approval_only_for_tools_requiring_confirmation() -> None:
    loop = AgentLoop(Budget(), SPECS)
    loop.model_replied(reply(call("c1", "lookup"), call("c2", "charge"), call("c3", "refund"), call("c4", "nope")))
    seen: list[tuple[str, bool, bool]] = []
    while isinstance(step := loop.next_step(), RunTool):
        seen.append((step.call.name, step.needs_approval, step.spec is not None))
        loop.tool_finished(ok(step.call))
    assert seen == [("lookup", False, True), ("charge", False, True), ("refund", True, True), ("nope", False, False)]


def test_initial_messages_order() -> None:
    history = [Message("user", "a"), Message("assistant", "b")]
    assert initial_messages("sys", "task", history) == [
        Message("system", "sys"),
        Message("user", "a"),
        Message("assistant", "b"),
        Message("user", "task"),
    ]
    assert initial_messages("", "task") == [Message("user", "task")]


# --- persistence: a LoopState saved between any two transitions continues identically ---

SCRIPT = [
    reply(call("c1", "lookup", q="inv-9"), call("c2", "charge", invoice="inv-9")),
    reply(call("c3", "refund", order="4471")),
    reply(call("c4", "lookup", q="inv-9")),  # a repeat: the run stops here
]


def drive(persist: Callable[[AgentLoop], AgentLoop]) -> tuple[list[Message], Finish, LoopState]:
    loop = persist(AgentLoop(Budget(max_steps=5), SPECS))
    messages: list[Message] = []
    while not isinstance(step := loop.next_step(), Finish):
        if isinstance(step, CallModel):
            messages += loop.model_replied(SCRIPT[step.call_index])
        else:
            assert isinstance(step, RunTool)
            messages += loop.tool_finished(ok(step.call, f"result of {step.call.id}"))
        loop = persist(loop)
    return messages, step, loop.state


def through_json(loop: AgentLoop) -> AgentLoop:
    text = loop.state.model_dump_json()
    return AgentLoop(loop.budget, loop.specs, LoopState.model_validate_json(text))


def test_loop_state_json_round_trip_mid_run_gives_the_same_result() -> None:
    straight = drive(lambda loop: loop)
    resumed = drive(through_json)
    assert straight[1] == Finish(stop=Stop.REPEATED_CALL, output=None)
    assert resumed[0] == straight[0]
    assert resumed[1] == straight[1]
    assert resumed[2] == straight[2]
    assert_well_formed(resumed[0])


def test_loop_state_round_trip_with_queued_calls() -> None:
    loop = AgentLoop(Budget(), SPECS)
    loop.model_replied(reply(call("c1", q={"b": 1, "a": 2}), ToolCall(id="c2", name="lookup", arguments="{bad")))
    loop.tool_finished(ok(call("c1", q={"b": 1, "a": 2})))
    restored = LoopState.model_validate_json(loop.state.model_dump_json())
    assert restored == loop.state
    assert restored.queue[0].arguments == "{bad"
    again = AgentLoop(Budget(), SPECS, restored)
    assert again.next_step() == loop.next_step()
    # The repeat guard survives the round trip too.
    again.tool_finished(ok(restored.queue[0]))
    again.model_replied(reply(call("c3", q={"a": 2, "b": 1})))
    assert again.next_step() == Finish(stop=Stop.REPEATED_CALL, output=None)


def test_calls_get_a_runner_identity_that_never_repeats_even_when_provider_ids_do() -> None:
    """Some providers number calls per reply ("call_0" every turn): the runner's identity is step and
    position, so a repeated provider id can never stand for an earlier call."""
    loop = AgentLoop(Budget(), SPECS)
    uids = []
    for q in ("a", "b", "c"):
        loop.model_replied(reply(call("call_0", q=q), call("call_1", q=q + "2")))
        while isinstance(step := loop.next_step(), RunTool):
            uids.append((step.call.id, step.call.uid))
            loop.tool_finished(ok(step.call))
    assert uids == [
        ("call_0", "1.1"),
        ("call_1", "1.2"),
        ("call_0", "2.1"),
        ("call_1", "2.2"),
        ("call_0", "3.1"),
        ("call_1", "3.2"),
    ]
    assert len({r.call.uid for r in loop.state.records}) == 6


def test_a_resumed_loop_keeps_numbering_after_the_carried_steps() -> None:
    loop = AgentLoop(Budget(), SPECS, LoopState(consumed=Usage(steps=7)))
    loop.model_replied(reply(call("call_0", q="x")))
    step = loop.next_step()
    assert isinstance(step, RunTool) and step.call.uid == "8.1"
