"""Output and argument checks in the loop and the in-process runner: refusals stop the run, send-backs are
bounded, a check that raises refuses, and a refused call is never offered for approval nor run."""

from __future__ import annotations

from typing import Any

from agentic import Agent, FakeModel, Refuse, Registry, SendBack, Stop, ToolStatus, tool, tool_call
from agentic.checks import judge, run_checks

RAN: list[str] = []


@tool(description="Pay.", payee="Who.", cents="How much.", mutating=True, requires_confirmation=True)
def pay(payee: str, cents: int) -> str:
    RAN.append(payee)
    return f"paid {payee}"


def under_a_hundred(arguments: dict[str, Any]) -> Refuse | None:
    return Refuse("too much") if arguments["cents"] >= 100 else None


def test_a_refused_call_is_never_offered_for_approval_nor_run():
    asked: list[str] = []
    registry = Registry([pay], confirm=lambda name, args: asked.append(name) or True)
    RAN.clear()
    run = Agent(
        FakeModel([tool_call("pay", {"payee": "mallory", "cents": 10_000})]),
        registry,
        argument_checks={"pay": [under_a_hundred]},
    ).run("pay")
    assert run.stop is Stop.CHECK_REFUSED and asked == [] and RAN == []
    assert run.records[0].status is ToolStatus.REFUSED
    assert (
        run.messages[-1].content
        == "Error: check under_a_hundred refused the arguments for pay: too much. The run stopped."
    )


def test_an_accepted_call_still_needs_its_approval():
    asked: list[str] = []
    registry = Registry([pay], confirm=lambda name, args: asked.append(name) or True)
    RAN.clear()
    run = Agent(
        FakeModel([tool_call("pay", {"payee": "bob", "cents": 5}), "paid"]),
        registry,
        argument_checks={"pay": [under_a_hundred]},
    ).run("pay")
    assert run.stop is Stop.ANSWERED and asked == ["pay"] and RAN == ["bob"]
    assert [(c.outcome, c.passed) for c in run.checks] == [("ok", ["under_a_hundred"])]


def test_send_backs_are_bounded_by_output_retries():
    def says_yes(answer: str) -> SendBack | None:
        return SendBack("say yes") if answer != "yes" else None

    agent = Agent(FakeModel(["no", "no", "no", "yes"]), output_checks=[says_yes])
    run = agent.run("x")
    assert run.stop is Stop.CHECK_REFUSED and run.usage.steps == 3
    assert run.stop_detail == "check says_yes kept sending the answer back: say yes"
    assert Agent(agent.model, output_checks=agent.output_checks, output_retries=3).run("x").output == "yes"


def test_a_check_that_raises_refuses():
    def broken(answer: str) -> None:
        raise KeyError("oops")

    run = Agent(FakeModel(["fine"]), output_checks=[broken]).run("x")
    assert run.stop is Stop.CHECK_REFUSED and run.output is None
    assert run.stop_detail == "check broken refused the answer: the check failed: KeyError('oops')"


def test_the_first_check_that_does_not_pass_decides():
    verdict = run_checks([lambda v: None, lambda v: SendBack("b"), lambda v: Refuse("c")], 1)
    assert (verdict.outcome, verdict.reason, verdict.checks) == ("send_back", "b", ["<lambda>"])


def test_decorators_add_checks():
    agent = Agent(FakeModel([tool_call("pay", {"payee": "x", "cents": 500}), "done"]), Registry([pay]))

    @agent.argument_check("pay")
    def cap(arguments: dict[str, Any]) -> Refuse | None:
        return Refuse("capped") if arguments["cents"] > 100 else None

    @agent.output_check
    def polite(answer: str) -> None:
        return None

    assert agent.argument_checks == {"pay": (cap,)} and agent.output_checks == (polite,)
    assert agent.run("x").stop is Stop.CHECK_REFUSED


def test_a_reply_over_the_limits_is_not_judged_and_unchecked_calls_carry_no_verdict():
    model = FakeModel([[tool_call("pay", {"payee": "a", "cents": 1}), tool_call("other")]])
    reply = model.complete([], call_index=0)
    judged = judge(reply, None, (), {"pay": [under_a_hundred]})
    assert judged.verdicts is not None and set(judged.verdicts.calls) == {1}
    refused = reply.model_copy(update={"refused": "too many"})
    assert judge(refused, None, (), {"pay": [under_a_hundred]}) is refused


def test_calls_skipped_before_their_turn_leave_no_verdicts_in_the_state():
    from agentic import AgentLoop, LoopState, give_up

    agent = Agent(FakeModel([[give_up("no"), tool_call("pay", {"payee": "a", "cents": 1})]]), Registry([pay]))
    agent.argument_checks = {"pay": (under_a_hundred,)}
    loop = AgentLoop(agent.budget, agent.tool_specs(), LoopState(), role=agent.role())
    loop.model_replied(agent.judge(agent.model.complete([], agent.schemas(), call_index=0)))
    assert loop.state.stop is Stop.GAVE_UP and loop.state.verdicts == {} and loop.state.queue == []
