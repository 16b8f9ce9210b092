"""Streaming model calls: the deltas arrive as the reply is written, and the reply returned is the whole one —
the same as without streaming (OpenAIChatModel over real loopback HTTP; FakeModel's token-sized deltas)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import pytest

from agentic.errors import ModelOutputError, RetryableModelError
from agentic.live import StepFinished, StepRestarted, TextDelta, Transcript
from agentic.messages import Message, tool_call
from agentic.models.base import ModelDelta, ask
from agentic.models.fake import FakeModel
from agentic.models.openai_chat import OpenAIChatModel
from tests.support.fake_openai_server import FakeOpenAIServer, chat_completion, function_call, stream_events

USER = [Message("user", "hello")]
ANSWER = "The invoice was paid on the third of May, by transfer."


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def model_of(server: FakeOpenAIServer) -> OpenAIChatModel:
    return OpenAIChatModel("test-model", base_url=server.base_url, api_key="sk-test", timeout=5.0)


def test_streamed_text_arrives_in_pieces_before_the_reply_and_equals_it(server: FakeOpenAIServer) -> None:
    # The server holds the rest of the reply until the first piece reached the caller: a model that read the
    # reply whole would wait for it until its timeout, and fail.
    first_piece_arrived = threading.Event()
    server.queue_stream(
        stream_events(ANSWER, usage={"prompt_tokens": 7, "completion_tokens": 13}), gate=first_piece_arrived
    )
    seen: list[ModelDelta] = []
    early: list[bool] = []

    def on_delta(delta: ModelDelta) -> None:
        if not seen:
            early.append(not first_piece_arrived.is_set())
            first_piece_arrived.set()
        seen.append(delta)

    reply = model_of(server).complete(USER, on_delta=on_delta)
    assert early == [True]
    assert reply.message.content == ANSWER
    assert (reply.input_tokens, reply.output_tokens) == (7, 13)
    assert "".join(d.text for d in seen) == ANSWER
    assert len(seen) == len(range(0, len(ANSWER), 4))  # one delta per chunk the server sent
    body = server.bodies[-1]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_streamed_tool_call_arguments_form_and_the_reply_has_the_call_whole(server: FakeOpenAIServer) -> None:
    arguments = json.dumps({"invoice": "inv-9", "amount": 120})
    server.queue_stream(stream_events(tool_calls=[function_call("call_a", "charge", arguments)]))
    seen: list[ModelDelta] = []
    reply = model_of(server).complete(USER, on_delta=seen.append)
    [call] = reply.message.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_a", "charge", {"invoice": "inv-9", "amount": 120})
    assert all(d.kind == "tool_call" and d.call_id == "call_a" and d.name == "charge" for d in seen)
    assert "".join(d.arguments for d in seen) == arguments
    assert len([d for d in seen if d.arguments]) > 3  # in pieces, as the model wrote them


def test_a_streamed_reply_is_the_reply_unstreamed(server: FakeOpenAIServer) -> None:
    """The same server answer, whole or streamed, makes the same ModelReply (missing ids get the same id)."""
    calls = [function_call("", "lookup", '{"q": "x"}')]
    server.queue(chat_completion("thinking", tool_calls=calls, prompt_tokens=3, completion_tokens=4))
    server.queue_stream(stream_events("thinking", tool_calls=calls, usage={"prompt_tokens": 3, "completion_tokens": 4}))
    model = model_of(server)
    whole = model.complete(USER, call_index=2)
    streamed = model.complete(USER, call_index=2, on_delta=lambda d: None)
    assert streamed == whole
    assert whole.message.tool_calls[0].id == "call_2_0"


def test_a_server_reporting_no_usage_is_counted_a_token_a_piece(server: FakeOpenAIServer) -> None:
    server.queue_stream(stream_events("abcdefgh", piece=2))
    reply = model_of(server).complete(USER, on_delta=lambda d: None)
    assert reply.output_tokens == 4


def test_an_error_event_mid_stream_is_retryable_and_keeps_the_key_out(server: FakeOpenAIServer) -> None:
    error = b'data: {"error": {"message": "overloaded, key sk-test", "type": "server_error"}}\n\n'
    broken = [*stream_events(ANSWER)[:3], error]
    server.queue_stream(broken)
    with pytest.raises(RetryableModelError) as caught:
        model_of(server).complete(USER, on_delta=lambda d: None)
    assert "server_error" in str(caught.value) and "sk-test" not in str(caught.value)


def test_a_stream_of_garbage_is_a_malformed_reply(server: FakeOpenAIServer) -> None:
    server.queue_stream([b"data: {not json\n\n"])
    with pytest.raises(ModelOutputError):
        model_of(server).complete(USER, on_delta=lambda d: None)


def test_a_connection_dropped_mid_stream_is_retryable(server: FakeOpenAIServer) -> None:
    # The server closes after a few chunks, without [DONE]: what a dying model server does.
    server.queue_stream(stream_events(ANSWER)[:4])
    model = model_of(server)
    seen: list[ModelDelta] = []
    try:
        reply = model.complete(USER, on_delta=seen.append)
    except RetryableModelError:
        return
    # A server that just stops counts as the end of the reply: what arrived is what the reply says.
    assert reply.message.content == "".join(d.text for d in seen)


def test_fake_model_streams_its_script_in_token_sized_deltas_the_same_every_time() -> None:
    model = FakeModel([ANSWER, tool_call("charge", {"invoice": "inv-9"})])
    runs = []
    for _ in range(2):
        seen: list[ModelDelta] = []
        replies = [ask(model, USER, (), call_index=i, on_delta=seen.append) for i in range(2)]
        runs.append(seen)
    assert runs[0] == runs[1]
    text = [d for d in runs[0] if d.kind == "text"]
    assert "".join(d.text for d in text) == ANSWER == replies[0].message.content
    assert len(text) == len(ANSWER.split())
    arguments = [d for d in runs[0] if d.kind == "tool_call"]
    assert "".join(d.arguments for d in arguments) == replies[1].message.tool_calls[0].canonical_arguments
    assert {d.call_id for d in arguments} == {replies[1].message.tool_calls[0].id}


def test_fake_model_paced_streaming_hands_text_over_while_it_writes() -> None:
    model = FakeModel(["one two three four five"], token_seconds=0.05)
    arrivals: list[float] = []
    reply = model.complete(USER, call_index=0, on_delta=lambda d: arrivals.append(time.monotonic()))
    assert reply.message.content == "one two three four five"
    assert arrivals[-1] - arrivals[0] >= 0.15  # five tokens, written over time


def test_a_client_folding_live_events_shows_a_restarted_step_once() -> None:
    view = Transcript()
    for event in [
        TextDelta(step=1, text="The inv"),
        StepRestarted(step=1, attempt=2),
        TextDelta(step=1, text="The invoice ", attempt=2),
        TextDelta(step=1, text="was paid.", attempt=2),
    ]:
        view.add(event)
    assert view.text == "The invoice was paid."
    view.add(StepFinished(step=1, kind="model", text="The invoice was paid."))
    view.add(TextDelta(step=1, text="late duplicate"))
    assert view.text == "The invoice was paid."
