"""Agent.run, the in-process runner: transcript order, tool execution and retries, model retries,
FakeModel's contract, and the Run it hands back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

import agentic.agent
from agentic import (
    Agent,
    Budget,
    FakeModel,
    Message,
    ModelOutputError,
    ModelReply,
    NonRetryableModelError,
    Pricing,
    Registry,
    RetryableModelError,
    Stop,
    ToolCall,
    ToolContext,
    ToolRetry,
    ToolSchema,
    ToolStatus,
    Usage,
    give_up,
    tool,
    tool_call,
)


class Recorder:
    """A FakeModel script entry that records the transcript it was shown."""

    def __init__(self, answer: Any = "done") -> None:
        self.answer = answer
        self.seen: list[list[Message]] = []

    def __call__(self, messages: Sequence[Message]) -> Any:
        self.seen.append(list(messages))
        return self.answer


@pytest.fixture
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    waits: list[float] = []
    monkeypatch.setattr(agentic.agent.time, "sleep", waits.append)
    return waits


def test_system_then_history_then_task() -> None:
    recorder = Recorder()
    history = [
        Message("user", "first question"),
        Message("assistant", "first answer"),
        Message("user", "second question"),
        Message("assistant", "second answer"),
    ]
    run = Agent(FakeModel([recorder]), system="Be brief.").run("third question", history=history)
    expected = [Message("system", "Be brief."), *history, Message("user", "third question")]
    assert recorder.seen == [expected]
    assert run.messages == [*expected, Message("assistant", "done")]


def test_no_system_message_when_system_is_empty() -> None:
    recorder = Recorder()
    run = Agent(FakeModel([recorder]), system="").run("hi")
    assert recorder.seen[0] == [Message("user", "hi")]
    assert all(m.role != "system" for m in run.messages)


def test_history_is_not_mutated() -> None:
    history = [Message("user", "a"), Message("assistant", "b")]
    Agent(FakeModel(["done"])).run("c", history=history)
    assert history == [Message("user", "a"), Message("assistant", "b")]


def test_multiple_tool_calls_in_one_reply_run_in_order() -> None:
    order: list[int] = []

    @tool(description="Log.", n="Which.")
    def log(n: int) -> str:
        order.append(n)
        return f"logged {n}"

    model = FakeModel([[tool_call("log", {"n": 3}), tool_call("log", {"n": 1}), tool_call("log", {"n": 2})], "done"])
    run = Agent(model, Registry([log])).run("go")
    assert order == [3, 1, 2]
    assert run.stop is Stop.ANSWERED
    assistant = run.messages[1]
    tool_messages = run.messages[2:5]
    assert [m.role for m in tool_messages] == ["tool"] * 3
    assert [m.tool_call_id for m in tool_messages] == [c.id for c in assistant.tool_calls]
    assert len({c.id for c in assistant.tool_calls}) == 3
    assert [m.content for m in tool_messages] == ["logged 3", "logged 1", "logged 2"]
    assert run.trajectory() == ["log", "log", "log"]


def test_tool_errors_are_fed_back_and_the_run_continues() -> None:
    @tool(description="Breaks.")
    def breaks() -> str:
        raise ValueError("disk on fire")

    recorder = Recorder("I could not do it.")
    model = FakeModel(
        [
            [tool_call("breaks"), tool_call("missing"), tool_call("breaks", {"extra": 1})],
            recorder,
        ]
    )
    run = Agent(model, Registry([breaks])).run("go")
    assert run.stop is Stop.ANSWERED
    assert run.output == "I could not do it."
    tool_messages = [m for m in recorder.seen[0] if m.role == "tool"]
    assert [m.content for m in tool_messages] == [
        "Error: breaks raised ValueError: disk on fire",
        "Error: unknown tool 'missing'. Available tools: breaks.",
        "Error: invalid arguments for breaks: extra: Extra inputs are not permitted. Call it again with valid "
        "arguments.",
    ]
    assert [r.status for r in run.records] == [
        ToolStatus.ERROR,
        ToolStatus.UNKNOWN_TOOL,
        ToolStatus.INVALID_ARGUMENTS,
    ]
    assert run.trajectory() == []


def test_tool_retry_reuses_the_idempotency_key_then_feeds_back() -> None:
    attempts: list[tuple[str, int]] = []

    @tool(description="Flaky.", mutating=True)
    def flaky(ctx: ToolContext) -> str:
        attempts.append((ctx.idempotency_key, ctx.attempt))
        raise ToolRetry("upstream 503")

    recorder = Recorder("gave up on it")
    run = Agent(FakeModel([tool_call("flaky"), recorder]), Registry([flaky]), tool_attempts=3).run("go")
    assert len(attempts) == 3
    assert len({key for key, _ in attempts}) == 1
    assert [n for _, n in attempts] == [1, 2, 3]
    assert run.stop is Stop.ANSWERED
    assert "upstream 503" in recorder.seen[0][-1].content
    assert run.records[0].status is ToolStatus.RETRYABLE


def test_tool_retry_succeeds_on_a_later_attempt() -> None:
    attempts: list[str] = []

    @tool(description="Flaky once.", mutating=True)
    def flaky_once(ctx: ToolContext) -> str:
        attempts.append(ctx.idempotency_key)
        if len(attempts) == 1:
            raise ToolRetry("blip")
        return "ok now"

    run = Agent(FakeModel([tool_call("flaky_once"), "done"]), Registry([flaky_once]), tool_attempts=3).run("go")
    assert len(attempts) == 2
    assert attempts[0] == attempts[1]
    assert run.trajectory() == ["flaky_once"]
    assert run.messages[2].content == "ok now"


def test_tool_attempts_one_means_no_retry() -> None:
    attempts: list[int] = []

    @tool(description="Flaky.")
    def flaky(ctx: ToolContext) -> str:
        attempts.append(ctx.attempt)
        raise ToolRetry("nope")

    Agent(FakeModel([tool_call("flaky"), "done"]), Registry([flaky]), tool_attempts=1).run("go")
    assert attempts == [1]


def test_idempotency_key_is_run_id_and_the_runners_call_identity() -> None:
    contexts: list[ToolContext] = []

    @tool(description="Record.", n="Which.", mutating=True)
    def record(n: int, ctx: ToolContext) -> str:
        contexts.append(ctx)
        return "ok"

    deps = {"ledger": "the-ledger"}
    model = FakeModel([tool_call("record", {"n": 1}), tool_call("record", {"n": 2}, id="explicit-7"), "done"])
    run = Agent(model, Registry([record]), deps=deps).run("go", run_id="run-42")
    provider_ids = [m.tool_calls[0].id for m in run.messages if m.tool_calls]
    assert provider_ids[1] == "explicit-7"  # the transcript keeps the provider's ids
    # ...but the key is the runner's: step and position, never an id a model or provider chose
    assert [c.idempotency_key for c in contexts] == ["run-42:1.1", "run-42:2.1"]
    assert [c.run_id for c in contexts] == ["run-42", "run-42"]
    assert [c.call_id for c in contexts] == ["1.1", "2.1"]
    assert all(c.deps is deps for c in contexts)


def test_a_provider_that_repeats_call_ids_gets_a_key_per_call() -> None:
    """A reused id must not collide with an earlier call's key (or its approval)."""
    keys: list[tuple[str, str]] = []

    @tool(description="Notify.", to="Who.", mutating=True)
    def notify(to: str, ctx: ToolContext) -> str:
        keys.append((to, ctx.idempotency_key))
        return f"sent to {to}"

    model = FakeModel(
        [tool_call("notify", {"to": "alice"}, id="n1"), tool_call("notify", {"to": "bob"}, id="n1"), "ok"]
    )
    Agent(model, Registry([notify])).run("go", run_id="r")
    assert keys == [("alice", "r:1.1"), ("bob", "r:2.1")]


def test_a_reused_call_id_is_asked_about_again_in_process() -> None:
    """In-process the gate is `Registry(confirm=...)`: every call is asked about with its own arguments,
    whatever id the provider gave it; approving alice never lets the call to mallory through."""
    asked: list[dict[str, object]] = []
    sent: list[str] = []

    @tool(description="Notify.", to="Who.", mutating=True, requires_confirmation=True)
    def notify(to: str) -> str:
        sent.append(to)
        return f"sent to {to}"

    def confirm(name: str, arguments: dict[str, object]) -> bool:
        asked.append(arguments)
        return arguments == {"to": "alice"}

    replies = [tool_call("notify", {"to": "alice"}, id="n1"), tool_call("notify", {"to": "mallory"}, id="n1"), "ok"]
    run = Agent(FakeModel(replies), Registry([notify], confirm=confirm)).run("go")
    assert asked == [{"to": "alice"}, {"to": "mallory"}]
    assert sent == ["alice"]
    assert run.blocked_tools() == ["notify"]


def test_without_run_id_each_run_gets_a_fresh_one() -> None:
    keys: list[str] = []

    @tool(description="Record.")
    def record(ctx: ToolContext) -> str:
        keys.append(ctx.idempotency_key)
        return "ok"

    for _ in range(2):
        Agent(FakeModel([tool_call("record"), "done"]), Registry([record])).run("go")
    assert len(keys) == 2
    assert keys[0] != keys[1]
    assert all(k.endswith(":1.1") for k in keys)


class ScriptedModel:
    """A tiny Model: raises the queued errors first, then answers."""

    name = "scripted"

    def __init__(self, errors: Sequence[Exception], answer: str = "recovered") -> None:
        self.errors = list(errors)
        self.answer = answer
        self.calls = 0

    def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolSchema] = (), *, call_index: int | None = None
    ) -> ModelReply:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return ModelReply(message=Message("assistant", self.answer), input_tokens=100, output_tokens=10, cost=0.5)


def test_retryable_model_error_is_retried(no_sleep: list[float]) -> None:
    model = ScriptedModel([RetryableModelError("429", status=429), RetryableModelError("503", status=503)])
    run = Agent(model, model_attempts=3).run("go")
    assert run.stop is Stop.ANSWERED
    assert run.output == "recovered"
    assert model.calls == 3
    assert no_sleep == [1, 2]  # exponential backoff
    assert run.step_count == 1  # failed attempts are not steps


def test_retry_after_is_honoured_and_capped(no_sleep: list[float]) -> None:
    model = ScriptedModel(
        [
            RetryableModelError("429", retry_after=0.0),
            RetryableModelError("429", retry_after=7.0),
            RetryableModelError("429", retry_after=3600.0),
        ]
    )
    run = Agent(model, model_attempts=4, max_retry_wait=30.0).run("go")
    assert run.stop is Stop.ANSWERED
    assert no_sleep == [0.0, 7.0, 30.0]


def test_retryable_model_error_raised_after_the_last_attempt(no_sleep: list[float]) -> None:
    model = ScriptedModel([RetryableModelError(f"503 #{i}") for i in range(5)])
    with pytest.raises(RetryableModelError, match="503 #2"):
        Agent(model, model_attempts=3).run("go")
    assert model.calls == 3
    assert len(no_sleep) == 2


def test_non_retryable_model_error_is_raised_at_once(no_sleep: list[float]) -> None:
    model = ScriptedModel([NonRetryableModelError("401 bad key", status=401)])
    with pytest.raises(NonRetryableModelError, match="401 bad key") as info:
        Agent(model, model_attempts=3).run("go")
    assert info.value.status == 401
    assert model.calls == 1
    assert no_sleep == []


def test_fake_model_script_exhausted() -> None:
    model = FakeModel([tool_call("anything")])
    with pytest.raises(ModelOutputError, match="no reply #2"):
        Agent(model).run("go")


@pytest.mark.parametrize("bad", [42, None, [], ["text", "more"], {"content": "x"}])
def test_fake_model_malformed_reply(bad: Any) -> None:
    with pytest.raises(ModelOutputError):
        Agent(FakeModel([bad])).run("go")


def test_fake_model_malformed_callable_reply() -> None:
    with pytest.raises(ModelOutputError):
        Agent(FakeModel([lambda messages: 42])).run("go")


def test_fake_model_wants_a_list() -> None:
    with pytest.raises(TypeError):
        FakeModel("done")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        FakeModel(tool_call("x"))  # type: ignore[arg-type]


def test_fake_model_explicit_call_index_is_repeatable() -> None:
    model = FakeModel(["zero", "one"])
    messages = [Message("user", "hi")]
    assert model.complete(messages, call_index=1).message.content == "one"
    assert model.complete(messages, call_index=1).message.content == "one"
    assert model.complete(messages, call_index=0).message.content == "zero"
    assert model.calls == 3
    assert model.complete(messages).message.content == "zero"  # explicit indices never move the implicit one


def test_the_same_agent_object_runs_in_process_any_number_of_times() -> None:
    """A module-level agent (as workers serve) runs from its first scripted reply every time."""

    @tool(description="Do nothing.")
    def noop() -> str:
        return "ok"

    agent = Agent(FakeModel([tool_call("noop"), "done"]), Registry([noop]))
    runs = [agent.run("go") for _ in range(3)]
    assert [(r.output, r.trajectory()) for r in runs] == [("done", ["noop"])] * 3


def test_fake_model_token_counts_are_deterministic() -> None:
    transcript = [Message("system", "Settle invoices."), Message("user", "Settle invoice inv-9")]
    a = FakeModel([tool_call("charge", {"invoice": "inv-9"})]).complete(transcript)
    b = FakeModel([tool_call("charge", {"invoice": "inv-9"})]).complete(list(transcript))
    assert (a.input_tokens, a.output_tokens, a.cost) == (b.input_tokens, b.output_tokens, b.cost)
    # ~4 characters a token plus 4 per message: 16 chars -> 4, 20 chars -> 5.
    assert a.input_tokens == (4 + 4) + (4 + 5)
    # A tool call costs its name and its canonical arguments: "charge" -> 2, '{"invoice":"inv-9"}' -> 5.
    assert a.output_tokens == 4 + 0 + 2 + 5
    longer = FakeModel(["x"]).complete([*transcript, Message("user", "one more thing, please")])
    assert longer.input_tokens > a.input_tokens


def test_fake_model_counts_a_transcript_it_has_seen_as_it_counts_a_fresh_one() -> None:
    """The model keeps each message's count (a runner hands it the same objects on every call): a transcript
    counted again, grown, or past what it keeps, costs what a model that never saw it says."""
    from agentic.models.fake import TOKENS_KEPT

    def transcript(n: int) -> list[Message]:
        return [
            Message("assistant", "", tool_calls=[ToolCall(f"c{i}", "charge", {"invoice": f"inv-{i}" * (i % 7)})])
            if i % 2
            else Message("user", "x" * i)
            for i in range(n)
        ]

    seen = FakeModel.replying(lambda messages: "done")
    messages = transcript(40)
    for n in (10, 25, 40, 40):
        assert seen.complete(messages[:n]).input_tokens == FakeModel(["done"]).complete(messages[:n]).input_tokens
    many = transcript(TOKENS_KEPT + 300)  # more than it keeps: the oldest are counted again, never wrongly
    assert seen.complete(many).input_tokens == FakeModel(["done"]).complete(many).input_tokens
    assert seen.complete(messages).input_tokens == FakeModel(["done"]).complete(list(messages)).input_tokens
    # Equal messages that are other objects are counted as themselves (the same count: they are equal).
    copies = [m.model_copy() for m in messages]
    assert seen.complete(copies).input_tokens == seen.complete(messages).input_tokens


def test_fake_model_cost_follows_its_pricing() -> None:
    pricing = Pricing(input_per_million=3.0, output_per_million=15.0)
    reply = FakeModel(["done"], pricing=pricing).complete([Message("user", "x" * 400)])
    assert reply.input_tokens == 104
    assert reply.output_tokens == 5
    assert reply.cost == pricing.cost(104, 5)
    assert reply.cost == pytest.approx((104 * 3.0 + 5 * 15.0) / 1_000_000)
    free = FakeModel(["done"], pricing=Pricing()).complete([Message("user", "x" * 400)])
    assert free.cost == 0.0


def test_fake_model_assigns_unique_call_ids() -> None:
    model = FakeModel([[tool_call("a"), tool_call("b")], [tool_call("a", {"n": 2})], "done"])
    run = Agent(model).run("go")
    ids = [c.id for m in run.messages for c in m.tool_calls]
    assert len(ids) == 3
    assert len(set(ids)) == 3
    assert all(ids)


def test_run_fields() -> None:
    @tool(description="Look up.")
    def lookup() -> str:
        return "found"

    @tool(description="Refund.", mutating=True, requires_confirmation=True)
    def refund() -> str:
        return "refunded"

    model = FakeModel([[tool_call("lookup"), tool_call("refund")], "done"])
    run = Agent(model, Registry([lookup, refund], confirm=lambda n, a: False)).run("go")
    assert run.stop is Stop.ANSWERED
    assert run.output == "done"
    assert run.step_count == 2
    assert run.trajectory() == ["lookup"]
    assert run.blocked_tools() == ["refund"]
    # Usage is the sum of what each model call reported, recomputed here from the same transcripts.
    replay = FakeModel([[tool_call("lookup"), tool_call("refund")], "done"])
    first = replay.complete(run.messages[:1])
    second = replay.complete(run.messages[:4])
    assert run.input_tokens == first.input_tokens + second.input_tokens
    assert run.output_tokens == first.output_tokens + second.output_tokens
    assert run.cost == pytest.approx(first.cost + second.cost)
    assert run.usage == Usage(steps=2, input_tokens=run.input_tokens, output_tokens=run.output_tokens, cost=run.cost)


def test_run_usage_sums_reported_usage_and_carries_consumption() -> None:
    run = Agent(ScriptedModel([])).run("go", consumed=Usage(steps=2, input_tokens=5, output_tokens=1, cost=0.25))
    assert run.step_count == 3
    assert run.input_tokens == 105
    assert run.output_tokens == 11
    assert run.cost == pytest.approx(0.75)


def test_run_stops_on_the_step_budget() -> None:
    @tool(description="Look up.", n="A number.")
    def lookup(n: int) -> str:
        return str(n)

    script = [tool_call("lookup", {"n": i}) for i in range(10)]
    run = Agent(FakeModel(script), Registry([lookup]), budget=Budget(max_steps=3)).run("go")
    assert run.stop is Stop.STEP_BUDGET
    assert run.step_count == 3
    assert run.output is None
    assert run.trajectory() == ["lookup"] * 3


def test_give_up_is_not_in_the_trajectory() -> None:
    @tool(description="Look up.")
    def lookup() -> str:
        return "found"

    run = Agent(FakeModel([tool_call("lookup"), give_up("no way")]), Registry([lookup])).run("go")
    assert run.stop is Stop.GAVE_UP
    assert run.stop_detail == "no way"
    assert run.trajectory() == ["lookup"]


def test_model_is_offered_the_tools_and_give_up() -> None:
    offered: list[list[str]] = []

    class Spy(ScriptedModel):
        def complete(self, messages, tools=(), *, call_index=None):  # type: ignore[no-untyped-def]
            offered.append([t.name for t in tools])
            return super().complete(messages, tools, call_index=call_index)

    @tool(description="Look up.")
    def lookup() -> str:
        return "found"

    Agent(Spy([]), Registry([lookup])).run("go")
    assert offered == [["lookup", "give_up"]]


@pytest.mark.parametrize("attempts", [{"tool_attempts": 0}, {"model_attempts": 0}])
def test_zero_attempts_is_rejected_up_front(attempts: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="attempts"):
        Agent(FakeModel(["done"]), **attempts)
