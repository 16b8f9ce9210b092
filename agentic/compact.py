"""`Compact`: a pydantic model that leaves fields at their defaults out of what it serialises.

Option objects travel in every scheduled activity's input, so every step of a durable run writes them
into history again; written compactly, a long run pays only for the options that differ. Parsing
restores the defaults, so nothing is lost.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, SerializerFunctionWrapHandler, model_serializer


class Compact(BaseModel):
    @model_serializer(mode="wrap")
    def _without_defaults(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name, field in type(self).model_fields.items():
                at_default = not field.is_required() and getattr(self, name) == field.get_default(
                    call_default_factory=True
                )
                if name in data and at_default:
                    del data[name]
        return data
