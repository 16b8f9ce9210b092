"""The adapter and the in-process agent on a real language model: SmolLM2-135M-Instruct served by
llama-cpp-python's OpenAI-compatible server (duragent/_ops/devstack/modelserver.py), the `llm` dependency group.

Replies are kept short (`max_tokens`) or forced (`tool_choice` naming a tool, which the server constrains
with a grammar built from the tool's JSON schema), so the whole file takes well under a minute of model time.
What the small model *says* is not asserted, only what the protocol guarantees: token counts from the
server, arguments that validate, reproducibility at temperature 0, error classification.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import httpx2
import openai
import pytest

from agentic import (
    Agent,
    Budget,
    ContextOverflowError,
    Message,
    ModelError,
    ModelReply,
    ModelSettings,
    NonRetryableModelError,
    Registry,
    RetryableModelError,
    Stop,
    ToolCall,
    ToolStatus,
    tool,
)
from agentic.loop import tool_schemas
from agentic.models.openai_chat import OpenAIChatModel
from bench import real_model
from duragent._ops.devstack import modelserver
from duragent._ops.devstack.modelserver import ModelServer

ADDITIONS: list[tuple[int, int]] = []
SERVER_INFO = {"model": modelserver.MODEL_FILE, "llama_cpp_python": "0.3.36", "n_ctx": 4096, "threads": 1}


@tool("Add two integers and return their sum.", a="the first integer", b="the second integer")
def add(a: int, b: int) -> int:
    ADDITIONS.append((a, b))
    return a + b


REGISTRY = Registry([add])
SCHEMAS = tool_schemas(REGISTRY.specs())
QUESTION = [Message("system", "You are a calculator. Use the add tool."), Message("user", "What is 2 plus 3?")]


@pytest.fixture(autouse=True)
def no_additions() -> None:
    ADDITIONS.clear()


def recording_model(server: ModelServer, bodies: list[dict[str, Any]], settings: ModelSettings) -> OpenAIChatModel:
    """The local model with the JSON body of every request it sends kept in `bodies`."""
    http = httpx2.Client(event_hooks={"request": [lambda request: bodies.append(json.loads(request.content))]})
    client = openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0, http_client=http)
    return OpenAIChatModel("local", settings=settings, client=client)


def test_a_forced_tool_call_is_valid(local_model_server: ModelServer) -> None:
    model = local_model_server.chat_model(ModelSettings(tool_choice="add", temperature=0.0, max_tokens=32))

    reply = model.complete(QUESTION, SCHEMAS)

    [call] = reply.message.tool_calls
    assert call.name == "add" and call.id
    assert isinstance(call.arguments, dict)
    arguments = REGISTRY.get("add").validate(call.arguments)  # type: ignore[union-attr]
    assert isinstance(arguments["a"], int) and isinstance(arguments["b"], int)
    assert reply.input_tokens > 0 and 0 < reply.output_tokens <= 32
    assert reply.cost == 0.0  # a local model is free unless priced


def test_auto_tool_choice_is_sent_and_the_server_sees_the_tools(local_model_server: ModelServer) -> None:
    bodies: list[dict[str, Any]] = []
    model = recording_model(local_model_server, bodies, ModelSettings(temperature=0.0))

    reply = model.complete(QUESTION, SCHEMAS)

    [sent] = bodies
    assert sent["tool_choice"] == "auto"
    assert [t["function"]["name"] for t in sent["tools"]] == ["add", "give_up"]
    # Told nothing about tool_choice, the server leaves the tools out of the prompt: the same transcript
    # then costs a fraction of the prompt tokens. That is the bug an explicit `auto` fixes.
    silent = httpx.post(
        f"{local_model_server.base_url}/chat/completions",
        json={"messages": sent["messages"], "tools": sent["tools"], "max_tokens": 1},
        timeout=60,
    ).json()
    assert silent["usage"]["prompt_tokens"] + 100 < reply.input_tokens


def test_temperature_zero_gives_the_same_reply_twice(local_model_server: ModelServer) -> None:
    model = local_model_server.chat_model(ModelSettings(temperature=0.0, seed=42, max_tokens=24))
    ask = [Message("user", "Name three colours.")]

    first, second = model.complete(ask), model.complete(ask)

    assert first.message.content.strip()
    assert first.message == second.message
    assert (first.input_tokens, first.output_tokens) == (second.input_tokens, second.output_tokens)


def test_max_tokens_bounds_the_servers_own_count(local_model_server: ModelServer) -> None:
    model = local_model_server.chat_model(ModelSettings(temperature=0.0, max_tokens=5))

    reply = model.complete([Message("user", "Write a long poem about the sea.")])
    wider = model.complete([Message("user", "Write a long poem about the sea.")], settings=ModelSettings(max_tokens=9))

    assert 0 < reply.output_tokens <= 5
    assert 5 < wider.output_tokens <= 9  # the per-call override reached the server


def test_a_tools_result_reaches_the_models_prompt(local_model_server: ModelServer) -> None:
    # llama-cpp-python's template drops `tool` messages; the local model sends results as user turns.
    model = local_model_server.chat_model(ModelSettings(tool_choice="none", temperature=0.0, max_tokens=8))
    call = ToolCall(id="call_1", name="add", arguments={"a": 2, "b": 3})
    asked = [*QUESTION, Message("assistant", "", tool_calls=[call])]
    result = Message("tool", "The sum is 5. " * 20, tool_call_id="call_1")

    without, with_result = model.complete(asked), model.complete([*asked, result])

    assert with_result.input_tokens >= without.input_tokens + 100  # twenty sentences of result, in the prompt


def test_required_is_refused_before_the_server_answers_it_with_a_500(local_model_server: ModelServer) -> None:
    model = local_model_server.chat_model(ModelSettings(tool_choice="required"))
    with pytest.raises(NonRetryableModelError, match="does not support tool_choice='required'"):
        model.complete(QUESTION, SCHEMAS)


def test_context_overflow_is_not_retryable_and_says_so(own_servers: Callable[..., ModelServer]) -> None:
    server = own_servers(n_ctx=256)
    model = server.chat_model(ModelSettings(max_tokens=8))

    with pytest.raises(ContextOverflowError) as caught:
        model.complete([Message("user", "word " * 400)])

    error = caught.value
    assert isinstance(error, NonRetryableModelError) and not error.retryable
    assert error.context_window == 256 and error.input_tokens is not None and error.input_tokens > 256
    assert f"the transcript ({error.input_tokens} tokens) exceeds the model's context window of 256 tokens" in str(
        error
    )
    assert model.complete([Message("user", "Hi")]).output_tokens > 0  # the server is fine afterwards


def test_a_killed_server_is_retryable_and_a_restarted_one_answers(own_servers: Callable[..., ModelServer]) -> None:
    server = own_servers(n_ctx=2048)
    model = server.chat_model(ModelSettings(temperature=0.0, max_tokens=1500))
    outcome: list[ModelReply | ModelError] = []

    def generate() -> None:
        try:
            outcome.append(model.complete([Message("user", "Write a very long story about a dragon.")]))
        except ModelError as exc:
            outcome.append(exc)

    generation = threading.Thread(target=generate)
    generation.start()
    generation.join(1.0)  # well inside a generation of 1500 tokens
    server.kill()
    generation.join(30)

    [in_flight] = outcome
    assert isinstance(in_flight, RetryableModelError), f"the generation was not interrupted: {in_flight!r}"
    with pytest.raises(RetryableModelError, match="connection failed"):
        model.complete([Message("user", "Hi")], settings=ModelSettings(max_tokens=4))

    own_servers(port=server.port, n_ctx=2048)  # the same address: the model object is unchanged
    assert model.complete([Message("user", "Hi")], settings=ModelSettings(max_tokens=4)).output_tokens > 0


def test_an_agent_runs_a_tool_with_the_models_own_arguments(local_model_server: ModelServer) -> None:
    # The first step must call `add`; after it the model answers in words (`none`), within max_tokens.
    settings = ModelSettings(first_tool_choice="add", tool_choice="none", temperature=0.0, max_tokens=40)
    agent = Agent(local_model_server.chat_model(settings), REGISTRY, budget=Budget(max_steps=3))

    run = agent.run("What is 2 plus 3? Use the add tool.")

    assert run.stop is Stop.ANSWERED and run.output
    [call] = [c for m in run.messages for c in m.tool_calls]
    assert [(call.arguments["a"], call.arguments["b"])] == ADDITIONS  # type: ignore[index]
    [record] = run.records
    assert record.status is ToolStatus.OK
    assert run.trajectory() == ["add"]
    assert run.step_count == 2 and run.output_tokens <= 2 * 40


def test_malformed_arguments_reach_the_model_as_a_readable_error(local_model_server: ModelServer) -> None:
    # Three tokens cut the model's arguments mid-JSON, as a real model running out of tokens does.
    settings = ModelSettings(first_tool_choice="add", tool_choice="none", temperature=0.0, max_tokens=3)
    agent = Agent(local_model_server.chat_model(settings), REGISTRY, budget=Budget(max_steps=3))

    run = agent.run("What is 2 plus 3? Use the add tool.")

    [call] = [c for m in run.messages for c in m.tool_calls]
    assert isinstance(call.arguments, str)  # not JSON: kept as the model wrote it
    [result] = [m for m in run.messages if m.role == "tool"]
    assert result.content.startswith("Error: the arguments for add are not a JSON object:")
    assert ADDITIONS == []  # the tool never ran on them
    assert run.stop is Stop.ANSWERED  # and the run went on to an answer


async def test_the_benchmark_measures_the_model_and_each_runners_overhead(
    local_model_server: ModelServer, dev_env, tmp_path: Path
) -> None:
    result = await real_model.measure_runners(
        local_model_server.base_url, dev_env.client, tmp_path, reps=1, warmup=0, max_tokens=16
    )

    model = result["model"]
    assert model["tool_call"]["n"] == model["answer"]["n"] == 3  # one two-step run on each runner
    assert model["per_step"]["median"] > 0 and 0 < model["output_tokens"]["max"] <= 16
    assert set(result["engines"]) == {"in-process", "checkpoint", "temporal"}
    for numbers in result["engines"].values():
        assert numbers["overhead_per_step"]["n"] == 1
        assert numbers["wall_per_step"]["median"] > numbers["overhead_per_step"]["median"]
        assert numbers["percent_of_model"] is not None
    printed = real_model.lines(
        result | {"server": SERVER_INFO, "machine": {"cpus": 2, "load_before": 0, "load_after": 0}}
    )
    assert any(line.startswith("  temporal ") and "% of the model's latency per step" in line for line in printed)
