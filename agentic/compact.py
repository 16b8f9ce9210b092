"""`Compact`: a pydantic model that leaves fields at their defaults out of what it serialises.

Option objects travel in every scheduled activity's input, so every step of a durable run writes them
into history again; written compactly, a long run pays only for the options that differ. Parsing
restores the defaults, so nothing is lost.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, SerializerFunctionWrapHandler, model_serializer


class Compact(BaseModel):
    # Each class's optional fields and their defaults, computed once: pydantic's `get_default` inspects the
    # default factory's signature on every call, which cost ~1 ms of worker CPU per run (issue 20). Only
    # compared against, never handed out, so a factory's fresh object is safe to share.
    _defaults: ClassVar[dict[type, dict[str, Any]]] = {}

    @classmethod
    def _optional_defaults(cls) -> dict[str, Any]:
        defaults = Compact._defaults.get(cls)
        if defaults is None:
            defaults = {
                name: field.get_default(call_default_factory=True)
                for name, field in cls.model_fields.items()
                if not field.is_required()
            }
            Compact._defaults[cls] = defaults
        return defaults

    @model_serializer(mode="wrap")
    def _without_defaults(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name, default in type(self)._optional_defaults().items():
                if name in data and getattr(self, name) == default:
                    del data[name]
        return data
