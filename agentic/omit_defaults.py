"""`OmitDefaults`: the one base of every model that travels in Temporal history (a workflow's input and
result, each activity's input and result, what they carry). It leaves every field still at its default out
of what it serialises; parsing restores the defaults, so nothing is lost.

Every scheduled activity writes its input into history, so every step of a durable run writes these models
again: written this way, a long run pays only for what differs from the defaults, and a field added later
(with a default) changes no payload that does not use it.

Implemented as each optional field's own `exclude_if` (set once per class, when pydantic completes it), so
serialising stays in pydantic's core: a model-level serializer in Python cost twice the CPU per payload.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class OmitDefaults(BaseModel):
    @classmethod
    def __pydantic_on_complete__(cls) -> None:
        # Called once the fields are final (later than class creation when an annotation names a class defined
        # further down); an inherited field keeps the predicate its class gave it.
        super().__pydantic_on_complete__()
        added = False
        for field in cls.__pydantic_fields__.values():
            if not field.is_required() and field.exclude_if is None:
                field.exclude_if = _equals(field.get_default(call_default_factory=True))
                added = True
        if added:
            cls.model_rebuild(force=True)


def _equals(default: Any) -> Any:
    # Only ever compared against, never handed out: a default factory's object is safe to share.
    return lambda value: value == default
