"""`ConstrainedModel`: a small local model that can only write a valid step.

Each call asks llama.cpp for one JSON object under a JSON-schema grammar (`response_format: {"type":
"json_object", "schema": ...}`, which llama-cpp-python compiles into a grammar the sampler cannot leave): either
`{"tool": NAME, "arguments": {...}}` for one of the tools offered — each branch carrying that tool's own argument
schema — or `{"answer": ...}`, the answer's own schema when the agent wants a typed answer. So a 135M-parameter model
always names a real tool with arguments of the right shape, or answers in the right shape: what it can no longer
do is write prose where a call belongs, a call to a tool that does not exist, or a typed answer that does not parse.

What the models small enough to ship in a wheel were measured to need on top (docs/local-model.md, `python -m bench
eval`) makes the step schema narrower than "any tool or an answer":

- `tool_choice` is the schema itself (`required`: only tools; `none`: only the answer; a name: that tool);
- a tool that has already returned a result is not offered again unless `repeat_tools` (SmolLM2 and Gemma 3 270M
  call the same tool again and again otherwise, the result in front of them); a typed agent's `final_answer` is
  always offered, and is then its only way to answer;
- the loop's `give_up` is not offered unless `offer_give_up` (both took it on the first step, for no reason);
- with `grounded` (the default) a free string argument must be one of the words the user and the tools said, a
  free integer one of their integers, and an identifier one of the words with a digit (`inv-9`, `A-1`, `4471`):
  the small models copy an id well and invent one badly (`{{ orderId }}`, `1234567890`);
- every other string is bounded, and a text answer ends before `max_tokens`: a step cut short is no JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentic.errors import ModelOutputError
from agentic.messages import Message, ToolCall
from agentic.models.base import ModelReply, ModelSettings, ToolSchema
from agentic.models.openai_chat import OpenAIChatModel

# A typed agent's answer tool (agentic/output.py's FINAL_ANSWER; not imported: agentic.output imports the models,
# tests/agentic/test_constrained_model.py keeps the two equal): its parameters are the answer's schema, so the
# grammar gives the model llama.cpp's JSON-schema constrained output for it, and no text answer is offered.
FINAL_ANSWER = "final_answer"
GIVE_UP = "give_up"  # agentic/loop.py's: a small model takes it at random; the answer is its way out instead
WORD = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_./:-]*[A-Za-z0-9])?")
INTEGER = re.compile(r"(?<![\w.-])-?\d+(?![\w.])")
IDENTIFIER_WORDS = re.compile(r"\b(id|ids|identifier|number|key|reference)\b", re.IGNORECASE)
STRING_BOUND = 80  # characters of an argument string whose schema sets no bound
JSON_TOKENS = 12  # `{"answer": "` and `"}`, with room
ANSWER_CHARS = 120  # an answer's bound when the call sets no max_tokens


class ConstrainedModel(OpenAIChatModel):
    """An OpenAI-compatible endpoint serving a llama.cpp model (llama-cpp-python's server), asked step by step under
    a JSON-schema grammar. `answer_schema` is the JSON schema of a typed answer (default: text); the answer's JSON
    is the reply's content, as a typed agent's final answer is."""

    def __init__(
        self,
        *args: Any,
        answer_schema: Mapping[str, Any] | None = None,
        repeat_tools: bool = False,
        offer_give_up: bool = False,
        grounded: bool = True,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("tool_result_role", "user")
        super().__init__(*args, **kwargs)
        self.answer_schema = dict(answer_schema) if answer_schema is not None else None
        self.repeat_tools = repeat_tools
        self.offer_give_up = offer_give_up
        self.grounded = grounded

    def request(
        self, messages: Sequence[Message], tools: Sequence[ToolSchema] = (), settings: ModelSettings | None = None
    ) -> dict[str, Any]:
        chosen = self.settings.override(settings)
        offered = self._offered(messages, tools, chosen.tool_choice_for(messages) if tools else "none")
        ground = _Ground.of(messages) if self.grounded else None
        branches = [_call_branch(tool, ground) for tool in offered]
        typed_tool = any(tool.name == FINAL_ANSWER for tool in offered)  # a typed agent answers by calling it
        if not typed_tool and (not offered or chosen.tool_choice_for(messages) == "auto" or not tools):
            typed = self.answer_schema
            if typed is None:
                answer: dict[str, Any] = _answer_text(chosen.max_tokens)
            else:
                answer = _bounded(_narrowed(typed, ground, answer=True) if ground else typed)
            branches.append(_answer_branch(answer))
        schema = branches[0] if len(branches) == 1 else {"anyOf": branches}
        wire = [_as_text(row) for row in self._wire_messages(messages)]
        instructions = _instructions(offered, self.answer_schema)
        if wire and wire[0]["role"] == "system":
            wire[0] = {"role": "system", "content": f"{wire[0]['content']}\n\n{instructions}"}
        else:
            wire.insert(0, {"role": "system", "content": instructions})
        request: dict[str, Any] = {
            "model": self.name,
            "messages": wire,
            "response_format": {"type": "json_object", "schema": schema},
        }
        for name in ("temperature", "seed", "max_tokens"):
            if (value := getattr(chosen, name)) is not None:
                request[name] = value
        return request

    def _offered(self, messages: Sequence[Message], tools: Sequence[ToolSchema], choice: str) -> list[ToolSchema]:
        if not self.offer_give_up:
            tools = [t for t in tools if t.name != GIVE_UP]
        if choice == "none":
            return []
        if choice not in ("auto", "required"):
            return [t for t in tools if t.name == choice]
        if self.repeat_tools:
            return list(tools)
        answered = {m.tool_call_id for m in messages if m.role == "tool"}
        done = {c.name for m in messages for c in m.tool_calls if c.id in answered} - {FINAL_ANSWER}
        fresh = [t for t in tools if t.name not in done]
        return fresh if fresh or choice == "auto" else list(tools)

    def _reply(self, status: int, text: str, call_index: int | None) -> ModelReply:
        reply = super()._reply(status, text, call_index)
        content = reply.message.content
        try:
            # `strict=False`: llama.cpp's string grammar lets a raw newline into a string, which JSON spells `\n`.
            step = json.loads(content, strict=False)
        except ValueError:
            # The grammar admits only complete JSON: a cut one ran out of `max_tokens`.
            raise ModelOutputError(
                f"{self.name}: the step is not complete JSON (max_tokens?): {content[:200]!r}"
            ) from None
        if isinstance(step, dict) and isinstance(step.get("tool"), str):
            arguments = step.get("arguments")
            call = ToolCall(
                id=f"call_{call_index if call_index is not None else 0}_0",
                name=step["tool"],
                arguments=arguments if isinstance(arguments, dict) else {},
            )
            message = Message(role="assistant", content="", tool_calls=(call,))
        elif isinstance(step, dict) and "answer" in step:
            answer = step["answer"]
            message = Message(role="assistant", content=answer if isinstance(answer, str) else json.dumps(answer))
        else:
            raise ModelOutputError(f"{self.name}: the step is neither a call nor an answer: {content[:200]!r}")
        return reply.model_copy(update={"message": message})


@dataclass(frozen=True)
class _Ground:
    """The words and integers of what the user and the tools said: what a small model's arguments may copy."""

    words: tuple[str, ...]
    numbers: tuple[int, ...]

    @classmethod
    def of(cls, messages: Sequence[Message]) -> _Ground | None:
        said = " ".join(m.content for m in messages if m.role in ("user", "tool"))
        words = tuple(dict.fromkeys(WORD.findall(said)))
        numbers = tuple(dict.fromkeys(int(n) for n in INTEGER.findall(said)))
        return cls(words, numbers) if words else None


def _call_branch(tool: ToolSchema, ground: _Ground | None) -> dict[str, Any]:
    answer = tool.name == FINAL_ANSWER
    arguments = _bounded(_narrowed(tool.parameters, ground, answer=answer) if ground else tool.parameters)
    return {
        "type": "object",
        "properties": {"tool": {"const": tool.name}, "arguments": arguments},
        "required": ["tool", "arguments"],
    }


def _names_an_identifier(name: str, prop: Any) -> bool:
    described = str(prop.get("description", "")) if isinstance(prop, dict) else ""
    return name.lower().endswith("id") or bool(IDENTIFIER_WORDS.search(described))


def _identifier(prop: Any, ground: _Ground) -> Any:
    """An identifier has a digit, and one with letters too is likelier an id than a bare number (`inv-9`, `A-1`
    before `12`); the words of the prompt around it (`invoice`, `order`) are what the small models picked."""
    if not isinstance(prop, dict) or not isinstance(enum := prop.get("enum"), list):
        return prop
    mixed = [w for w in enum if isinstance(w, str) and any(c.isdigit() for c in w) and any(c.isalpha() for c in w)]
    digits = [w for w in enum if isinstance(w, str) and any(c.isdigit() for c in w)]
    return prop | {"enum": mixed or digits or enum}


def _narrowed(schema: Any, ground: _Ground, *, answer: bool = False) -> Any:
    """Every free string one of the transcript's words, every free integer one of its integers: a 135M model
    copies an order id it was given, it cannot be trusted to spell one (measured: `{{ orderId }}`, `1234567890`).
    In an answer (`answer`), only identifiers and integers are copied: its other strings are the model's own
    words (a summary, a reason), bounded instead (`_bounded`)."""
    if isinstance(schema, list):
        return [_narrowed(item, ground, answer=answer) for item in schema]
    if not isinstance(schema, dict):
        return schema
    narrowed = {key: _narrowed(value, ground, answer=answer) for key, value in schema.items()}
    if isinstance(properties := narrowed.get("properties"), dict):
        narrowed["properties"] = {
            name: _identifier(_words(prop, ground) if answer else prop, ground)
            if _names_an_identifier(name, prop)
            else prop
            for name, prop in properties.items()
        }
    free = _free(narrowed)
    if free and narrowed.get("type") == "string" and not answer:
        return _words(narrowed, ground)
    if free and narrowed.get("type") == "integer" and ground.numbers:
        return {k: v for k, v in narrowed.items() if k != "type"} | {"enum": list(ground.numbers)}
    return narrowed


def _free(schema: dict[str, Any]) -> bool:
    return not any(key in schema for key in ("enum", "const", "format", "pattern"))


def _words(schema: Any, ground: _Ground) -> Any:
    if not isinstance(schema, dict) or schema.get("type") != "string" or not _free(schema):
        return schema
    return {k: v for k, v in schema.items() if k not in ("type", "maxLength", "minLength")} | {
        "enum": list(ground.words)
    }


def _bounded(schema: Any) -> Any:
    """The schema with every unbounded string bounded: a small model writes on until `max_tokens` otherwise, and
    the cut JSON is no step at all (measured: a `reason` of SmolLM2's ran into prose)."""
    if isinstance(schema, list):
        return [_bounded(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    bounded = {key: _bounded(value) for key, value in schema.items()}
    if bounded.get("type") == "string" and "maxLength" not in bounded and "enum" not in bounded:
        bounded["maxLength"] = STRING_BOUND
    return bounded


def _answer_branch(schema: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"answer": dict(schema)}, "required": ["answer"]}


def _answer_text(max_tokens: int | None) -> dict[str, Any]:
    """Text that ends before `max_tokens` does, whatever the model writes (a token is at least one character; the
    JSON around it takes a dozen): a cut answer is no JSON, so no step at all. Measured: SmolLM2 wrote a hash-like
    string at about a character a token, past a bound of two characters a token."""
    chars = ANSWER_CHARS if max_tokens is None else max(1, max_tokens - JSON_TOKENS)
    return {"type": "string", "minLength": 1, "maxLength": chars}


def _instructions(tools: Sequence[ToolSchema], answer_schema: Mapping[str, Any] | None) -> str:
    lines = ["Reply with one JSON object."]
    if tools:
        lines.append('To call a tool: {"tool": NAME, "arguments": {...}}. Tools:')
        for tool in tools:
            params = ", ".join(tool.parameters.get("properties", {}))
            lines.append(f"- {tool.name}({params}): {tool.description}")
    shape = "matching the answer's schema" if answer_schema is not None else "text"
    lines.append(f'When done: {{"answer": ...}} ({shape}).')
    return "\n".join(lines)


def _as_text(row: dict[str, Any]) -> dict[str, Any]:
    """An earlier call as the JSON the model wrote for it: the model reads its own steps in its own format."""
    if row.get("role") != "assistant" or not row.get("tool_calls"):
        return row
    function = row["tool_calls"][0]["function"]
    try:
        arguments = json.loads(function["arguments"])
    except ValueError:
        arguments = {}
    return {"role": "assistant", "content": json.dumps({"tool": function["name"], "arguments": arguments})}
