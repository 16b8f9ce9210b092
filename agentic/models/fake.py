"""`FakeModel`: a scripted model with deterministic token counts — the model of tests and demos.

Each reply is a final answer (`str`), one `tool_call(...)`, a list of them, or a callable that takes the
transcript and returns one of those. Which reply answers a call depends only on the call's index in the
run (and the transcript, for callables), never on hidden state, so a durable runner gets the same answer
on a retry, after a replay, or in a new process.
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from agentic.errors import ModelOutputError
from agentic.messages import Message, ToolCall
from agentic.models.base import ModelDelta, ModelReply, ModelSettings, OnDelta, Pricing, ToolSchema, estimate_tokens

Reply = str | ToolCall | Sequence[ToolCall]
Script = Reply | Callable[[Sequence[Message]], Reply]

DEFAULT_PRICING = Pricing(input_per_million=1.0, output_per_million=4.0)
# A token, as a scripted model streams its text: a word with the space after it (about what a tokenizer makes).
_TOKEN = re.compile(r"\S+\s*|\s+")
# Messages whose token count a model keeps: a runner hands every call the same message objects again (the
# transcript so far), and counting one means encoding its tool calls' arguments — the whole transcript on
# every call, quadratic in a run's length, where the count of a message, immutable, never changes.
TOKENS_KEPT = 1024


class FakeModel:
    """A scripted model: reply #N of `replies` answers a run's Nth model call, the same on every retry and replay.

        FakeModel([tool_call("refund", {"order_id": "A-1"}), "Refunded A-1."])

    Each reply is a final answer (`str`), a `tool_call(...)`, a list of them (parallel calls), or a callable
    that gets the transcript and returns one of those. The script is per run, so one FakeModel serves any
    number of runs of a long-lived worker; a call past the end of the script is a `ModelOutputError`. Token
    counts are estimated from the text and priced with `pricing`, so budgets work as with a real model.
    `FakeModel.replying(fn)` answers every call with `fn(transcript)`."""

    name: str

    def __init__(
        self,
        replies: Sequence[Script],
        *,
        name: str = "fake",
        pricing: Pricing = DEFAULT_PRICING,
        token_seconds: float = 0.0,
    ):
        """`token_seconds`: how long it takes to write each token when streaming (0: at once), so a demo or a
        test shows text arriving as it is written; what is written never depends on it."""
        if isinstance(replies, str | ToolCall) or callable(replies):
            raise TypeError("FakeModel takes a list of replies, e.g. FakeModel(['done'])")
        self.replies = list(replies)
        self.name = name
        self.pricing = pricing
        self.token_seconds = token_seconds
        self._every: Callable[[Sequence[Message]], Reply] | None = None
        self._calls = 0  # answered, however asked
        self._next = 0  # the index an implicit call (no `call_index`) gets
        self._lock = threading.Lock()
        # id(message) -> (message, tokens): the message is held, so its id is not reused while it is kept.
        self._tokens: OrderedDict[int, tuple[Message, int]] = OrderedDict()

    @classmethod
    def replying(
        cls,
        reply: Callable[[Sequence[Message]], Reply],
        *,
        name: str = "fake",
        pricing: Pricing = DEFAULT_PRICING,
        token_seconds: float = 0.0,
    ) -> FakeModel:
        """A model that answers every call with `reply(transcript)`: a scripted policy rather than a list,
        for agents whose number of steps depends on what their tools say."""
        model = cls([], name=name, pricing=pricing, token_seconds=token_seconds)
        model._every = reply
        return model

    @property
    def calls(self) -> int:
        """Calls answered, in every run of every runner in this process."""
        return self._calls

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSchema] = (),
        *,
        call_index: int | None = None,
        settings: ModelSettings | None = None,  # a script answers the same whatever it is asked with
        on_delta: OnDelta | None = None,
    ) -> ModelReply:
        with self._lock:
            if call_index is None:  # no runner said which call this is: the next in line
                call_index, self._next = self._next, self._next + 1
            self._calls += 1
        if self._every is not None:
            script: Script = self._every
        elif 0 <= call_index < len(self.replies):
            script = self.replies[call_index]
        else:
            raise ModelOutputError(
                f"FakeModel {self.name!r} has no reply #{call_index + 1}: its script has {len(self.replies)}"
            )
        reply = script(messages) if callable(script) else script
        message = _to_message(reply, len(messages))
        input_tokens = self._input_tokens(messages)
        output_tokens = _message_tokens(message)
        if on_delta is not None:
            self._stream(message, on_delta)
        return ModelReply(
            message=message,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost=self.pricing.cost(input_tokens, output_tokens),
        )

    def _stream(self, message: Message, on_delta: OnDelta) -> None:
        """The reply as token-sized deltas, the same on every call: its text word by word, then each tool
        call's arguments in pieces of about a token (four characters)."""
        for token in _TOKEN.findall(message.content):
            self._pause()
            on_delta(ModelDelta(kind="text", text=token))
        for position, call in enumerate(message.tool_calls, start=1):
            arguments = call.canonical_arguments
            for start in range(0, max(len(arguments), 1), 4):
                self._pause()
                on_delta(
                    ModelDelta(
                        kind="tool_call",
                        position=position,
                        call_id=call.id,
                        name=call.name,
                        arguments=arguments[start : start + 4],
                    )
                )

    def _pause(self) -> None:
        if self.token_seconds > 0:
            time.sleep(self.token_seconds)

    def _input_tokens(self, messages: Sequence[Message]) -> int:
        total = 0
        with self._lock:
            for message in messages:
                kept = self._tokens.get(id(message))
                if kept is None or kept[0] is not message:
                    kept = self._tokens[id(message)] = (message, _message_tokens(message))
                    if len(self._tokens) > TOKENS_KEPT:
                        self._tokens.popitem(last=False)
                total += kept[1]
        return total


def _to_message(reply: Any, position: int) -> Message:
    if isinstance(reply, str):
        return Message(role="assistant", content=reply)
    if isinstance(reply, ToolCall):
        reply = [reply]
    if isinstance(reply, Sequence) and reply and all(isinstance(c, ToolCall) for c in reply):
        # Ids derive from the transcript length, so they are unique across a resumed run's history too.
        calls = tuple(
            c if c.id else c.model_copy(update={"id": f"call_{position}_{i + 1}"}) for i, c in enumerate(reply)
        )
        return Message(role="assistant", content="", tool_calls=calls)
    raise ModelOutputError(
        f"a FakeModel reply must be a str, a tool_call(...) or a non-empty list of them; got {reply!r}"
    )


def _message_tokens(message: Message) -> int:
    tokens = 4 + estimate_tokens(message.content)
    for call in message.tool_calls:
        tokens += estimate_tokens(call.name) + estimate_tokens(call.canonical_arguments)
    return tokens
