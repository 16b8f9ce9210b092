"""Typed answers: an agent's `output_type`, how the model is asked for an answer in that shape, and how the
answer it gives is validated.

The model answers a typed agent by calling the `final_answer` tool, whose parameters are the type's JSON schema
(a type whose schema is not an object is wrapped as `{"response": ...}`, since tool parameters must be an
object). A model that writes structured output instead (the provider's response format, llama.cpp's JSON-schema
constrained output: the `final_answer` tool's parameters are the schema to use) may answer with the JSON as its
text: that is validated the same way. Either way the answer the run keeps — in its transcript, its history, its
checkpoint rows — is JSON text; each runner hands back the typed value decoded from it with the agent's type.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ConfigDict, TypeAdapter, ValidationError

from agentic.messages import ToolCall, tool_call
from agentic.models.base import ToolSchema
from agentic.omit_defaults import OmitDefaults

FINAL_ANSWER = "final_answer"
WRAPPED = "response"  # the one property of a wrapped answer's parameters


class OutputSpec(OmitDefaults):
    """A typed answer's shape, as data (what durable runners record): the `final_answer` tool's parameters."""

    model_config = ConfigDict(frozen=True)

    type_name: str
    parameters: dict[str, Any]
    wrapped: bool = False

    def tool_schema(self) -> ToolSchema:
        return ToolSchema(
            name=FINAL_ANSWER,
            description=(
                f"Give the final answer ({self.type_name}) when the task is done; it ends the run. "
                "Its arguments must match this schema."
            ),
            parameters=self.parameters,
        )


class OutputType:
    """The answer's type at run time: its validator (a pydantic `TypeAdapter`) and its `OutputSpec`."""

    def __init__(self, output_type: Any) -> None:
        self.type = output_type
        self.adapter: TypeAdapter[Any] = TypeAdapter(output_type)
        schema = self.adapter.json_schema()
        self.wrapped = schema.get("type") != "object"
        parameters = (
            {"type": "object", "properties": {WRAPPED: schema}, "required": [WRAPPED]} if self.wrapped else schema
        )
        name = getattr(output_type, "__name__", None) or str(output_type)
        self.spec = OutputSpec(type_name=name, parameters=parameters, wrapped=self.wrapped)

    def from_arguments(self, arguments: Mapping[str, Any] | str) -> tuple[str | None, str]:
        """A `final_answer` call's arguments validated: (the answer as JSON, "") or (None, what is wrong)."""
        if isinstance(arguments, str):
            return None, f"the arguments are not a JSON object: {arguments[:200]!r}"
        value: Any = dict(arguments)
        if self.wrapped:
            if set(value) != {WRAPPED}:
                return None, f'the answer must be given as {{"{WRAPPED}": ...}}; got the keys {sorted(value)}'
            value = value[WRAPPED]
        return self._validated(json.dumps(value))

    def from_text(self, text: str) -> tuple[str | None, str]:
        """A text reply read as the answer (structured output): (JSON, "") or (None, what is wrong)."""
        answer, problems = self._validated(text)
        if answer is None:
            return None, f"answer by calling {FINAL_ANSWER}; plain text is not the answer ({problems})"
        return answer, ""

    def _validated(self, raw: str) -> tuple[str | None, str]:
        try:
            value = self.adapter.validate_json(raw)
        except ValidationError as exc:
            return None, problems_of(exc)
        return self.adapter.dump_json(value).decode(), ""

    def load(self, answer: str) -> Any:
        """The typed value of an answer the run kept (JSON): validated again, so it is the type's own object."""
        return self.adapter.validate_json(answer)


def as_text(answer: Any) -> str | None:
    """An answer as text, whatever the runner handed back: itself if text, the JSON of a typed value."""
    if answer is None or isinstance(answer, str):
        return answer
    return TypeAdapter(type(answer)).dump_json(answer).decode()


def problems_of(exc: ValidationError, limit: int = 10) -> str:
    """Pydantic's errors as one line the model can act on: where, and what is wrong."""
    parts = [f"{'.'.join(map(str, e['loc'])) or 'the answer'}: {e['msg']}" for e in exc.errors()[:limit]]
    more = exc.error_count() - limit
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def final_answer(value: Any, *, output_type: Any = None) -> ToolCall:
    """A scripted model's typed answer: `FakeModel([..., final_answer(Refund(order="A-1", amount=5))])`.

    `value` is the answer itself (a pydantic model, a dataclass, a dict, a list, a number...); it is written as
    the `final_answer` call the model would make (wrapped as `{"response": ...}` when the type's schema is not
    an object). Pass `output_type` when the agent's type is not the value's own (a union, an optional)."""
    shape = OutputType(output_type if output_type is not None else type(value))
    dumped = TypeAdapter(type(value)).dump_python(value, mode="json")
    return tool_call(FINAL_ANSWER, {WRAPPED: dumped} if shape.wrapped else dumped)
