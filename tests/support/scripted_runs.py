"""One hostile model script, three runners: what the property tests drive through the in-process agent, the
checkpoint runner and the Temporal workflow, and the invariants every run must keep.

A script is a list of model replies — answers (some huge), batches of tool calls to known and unknown tools
with valid, schema-violating or non-JSON arguments, repeats, give-ups — and the tools' outcomes are chosen
by their arguments, so every runner sees the same outcome for the same call. The model finds its script by
the run's task (`script:<id>`), so one served agent answers every generated script.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Coroutine, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, TypeVar

from hypothesis import strategies as st
from temporalio.testing import WorkflowEnvironment

from agentic import (
    Agent,
    Budget,
    FakeModel,
    Message,
    ModelReply,
    ModelSettings,
    Registry,
    Stop,
    ToolCall,
    ToolContext,
    ToolFatal,
    ToolRetry,
    ToolSchema,
    Usage,
    tool,
)
from agentic.loop import GIVE_UP
from duragent._stores.ledger import EffectsLedger
from examples.effects import record_effect

T = TypeVar("T")

# -- the agent every runner serves -----------------------------------------------------------------------


@tool(description="Look something up.", topic="What to look up.")
def lookup(topic: str) -> str:
    return f"{topic}: 42"


@tool(description="Do something whose outcome the arguments choose.", outcome="How it ends.", n="A number.")
def act(outcome: Literal["ok", "error", "retry_once", "fatal"], n: int, ctx: ToolContext) -> str:
    if outcome == "error":
        raise ValueError(f"act {n} broke")
    if outcome == "fatal":
        raise ToolFatal(f"act {n} cannot go on")
    if outcome == "retry_once" and ctx.attempt == 1:
        raise ToolRetry(f"act {n}: try again")
    return f"acted {n}"


def _unwrite(arguments: dict[str, Any], result: str, ctx: ToolContext) -> str:
    return record_effect(ctx, "unwrite", arguments, f"unwrote {arguments.get('row')}")


@tool(description="Write a row.", row="Row id.", mutating=True, compensation=_unwrite)
def write(row: str, ctx: ToolContext) -> str:
    return record_effect(ctx, "write", {"row": row}, f"wrote {row}")


SCRIPTS: dict[str, list[Any]] = {}  # task -> replies; the model of every runner reads it (one process)
MAX_STEPS = 6
BUDGET = Budget(max_steps=MAX_STEPS, max_output_tokens=6000)


class ScriptedByTask:
    """A `FakeModel` per run: the script registered under the run's task, answered by call index."""

    name = "scripted-by-task"

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSchema] = (),
        *,
        call_index: int | None = None,
        settings: ModelSettings | None = None,
    ) -> ModelReply:
        task = next(m.content for m in messages if m.role == "user")
        return FakeModel(SCRIPTS[task]).complete(messages, tools, call_index=call_index)


AGENT = Agent(ScriptedByTask(), Registry([lookup, act, write]), name="prop", budget=BUDGET, tool_attempts=3)

# -- scripts ------------------------------------------------------------------------------------------------

_ARGUMENTS = {
    "lookup": st.one_of(
        st.builds(lambda t: {"topic": t}, st.sampled_from(["a", "b", "ünï", "'; DROP TABLE effects;--"])),
        st.integers(4_000, 20_000).map(lambda n: {"topic": "y" * n}),  # huge arguments: the token budget
        st.just({}),  # missing the required field
        st.just({"topic": 5}),  # wrong type
    ),
    "act": st.one_of(
        st.builds(
            lambda o, n: {"outcome": o, "n": n},
            st.sampled_from(["ok", "error", "retry_once", "fatal"]),
            st.integers(0, 3),
        ),
        st.just({"outcome": "explode", "n": 1}),  # not one of the choices
        st.just({"outcome": "ok", "n": 1, "extra": True}),  # a field the tool does not take
    ),
    "write": st.builds(lambda r: {"row": r}, st.sampled_from(["r1", "r2", "../../etc/passwd"])),
    GIVE_UP: st.builds(lambda r: {"reason": r}, st.sampled_from(["cannot", ""])),
    "nope": st.just({"x": 1}),  # a tool nobody declared
}


@st.composite
def tool_calls(draw: st.DrawFn) -> ToolCall:
    name = draw(st.sampled_from(sorted(_ARGUMENTS)))
    raw = draw(st.integers(0, 9)) == 0  # now and then, arguments that are not a JSON object
    arguments: Any = draw(st.sampled_from(["{not json", "[1, 2]", ""])) if raw else draw(_ARGUMENTS[name])
    provider_id = draw(st.sampled_from(["", "", "", "call_1", "dup"]))  # providers may repeat ids
    return ToolCall(id=provider_id, name=name, arguments=arguments)


replies = st.one_of(
    st.sampled_from(["Done.", "", "I refunded order 9 as the tool said."]),
    st.integers(1_000, 40_000).map(lambda n: "x" * n),  # huge answers: claim-checked by reference
    st.lists(tool_calls(), min_size=1, max_size=4),
)


@st.composite
def scripts(draw: st.DrawFn) -> list[Any]:
    """Replies for every possible model call (the budget ends a run before the script runs out), sometimes a
    reply repeated word for word (the repeat guard)."""
    script = draw(st.lists(replies, min_size=1, max_size=MAX_STEPS))
    if len(script) > 1 and draw(st.booleans()):
        script.insert(draw(st.integers(1, len(script) - 1)), script[0])  # a verbatim repeat of an earlier reply
    return (script + ["Done."] * MAX_STEPS)[:MAX_STEPS]


def register(script: list[Any]) -> str:
    task = f"script:{uuid.uuid4().hex[:12]}"
    SCRIPTS[task] = script
    return task


# -- the invariants -------------------------------------------------------------------------------------------

DOCUMENTED_STOPS = set(Stop)


def assert_well_formed(messages: Sequence[Message]) -> None:
    """Every requested call is answered, once, by the tool messages that follow its request, in order; no tool
    message answers a call nobody requested."""
    waiting: list[str] = []
    for m in messages:
        if m.role == "tool":
            assert waiting, f"a tool message answers nothing: {m.content[:80]!r}"
            assert m.tool_call_id == waiting.pop(0), "answers out of order"
        else:
            assert not waiting, f"calls {waiting} unanswered before a {m.role} message"
            if m.role == "assistant":
                waiting = [c.id for c in m.tool_calls]
    assert not waiting, f"calls {waiting} never answered"


def assert_within_budget(usage: Usage, budget: Budget, last_step: Usage) -> None:
    """Consumption never exceeds a limit by more than one step: before the last model call it was under it."""
    assert budget.max_steps is None or usage.steps <= budget.max_steps
    before_last = Usage(
        steps=usage.steps - last_step.steps,
        input_tokens=usage.input_tokens - last_step.input_tokens,
        output_tokens=usage.output_tokens - last_step.output_tokens,
        cost=max(usage.cost - last_step.cost, 0.0),
    )
    if usage.steps:
        assert budget.model_copy(update={"max_steps": None}).exhausted_by(before_last) is None


def last_step_usage(messages: Sequence[Message], script: list[Any], steps: int) -> Usage:
    """What the last model call cost, recomputed from the transcript (the FakeModel is deterministic)."""
    if not steps:
        return Usage()
    last = max(i for i, m in enumerate(messages) if m.role == "assistant")
    reply = FakeModel(script).complete(messages[:last], call_index=steps - 1)
    return Usage(steps=1, input_tokens=reply.input_tokens, output_tokens=reply.output_tokens, cost=reply.cost)


def plain(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """A transcript compared across runners: claim-check references are where a runner kept a body."""
    return [{k: v for k, v in m.to_dict().items() if k != "content_ref"} for m in messages]


# -- runners --------------------------------------------------------------------------------------------------


def in_process(agent: Agent, task: str, max_steps: int, deps: Any, run_id: str) -> Any:
    budget = agent.budget.model_copy(update={"max_steps": max_steps})
    return replace(agent, budget=budget, deps=deps).run(task, run_id=run_id)


@dataclass
class BackgroundLoop:
    """An event loop on a thread of its own, for synchronous tests (hypothesis) that drive async code."""

    loop: asyncio.AbstractEventLoop
    thread: threading.Thread

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 120) -> T:
        future: Future[T] = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        return future.result(timeout)


@contextmanager
def background_loop() -> Iterator[BackgroundLoop]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="property-loop", daemon=True)
    thread.start()
    try:
        yield BackgroundLoop(loop, thread)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


@contextmanager
def temporal_in_background(
    ledger: EffectsLedger, task_queue: str, agents: Sequence[Agent]
) -> Iterator[tuple[BackgroundLoop, WorkflowEnvironment]]:
    """A time-skipping server of its own and a worker serving `agents`, on a background loop: for synchronous
    (hypothesis) tests and for command lines that make their own event loops, neither of which can share the
    session's async fixtures."""
    from duragent.testing import start_time_skipping
    from tests.conftest import new_worker

    with background_loop() as loop:

        async def start() -> tuple[WorkflowEnvironment, Any]:
            env = await start_time_skipping()
            worker = new_worker(env.client, task_queue, ledger, agents=list(agents))
            await worker.__aenter__()
            return env, worker

        env, worker = loop.run(start())
        try:
            yield loop, env
        finally:

            async def stop() -> None:
                await worker.__aexit__(None, None, None)
                await env.shutdown()

            loop.run(stop())


def scratch(tmp: Path) -> Path:
    path = tmp / uuid.uuid4().hex[:8]
    path.mkdir()
    return path
