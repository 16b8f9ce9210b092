"""Credentials out of error text: a provider's error body, an SDK's message or a proxy's echo may quote the
key it was sent (a gateway's 401 said `Incorrect API key provided: sk-...`). Such text becomes an
activity failure, so it reaches the run's history, the Web UI, the CLI and a viewer's `error` field. Every
secret the process holds is replaced by `***` before that happens.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

T = TypeVar("T")

MASK = "***"
# Shorter values are not credentials anyone issues, and masking them would mangle ordinary words (a local
# model's dummy key, `not-needed`, is long enough and harmless to mask).
MIN_SECRET_CHARS = 8


class Scrubber:
    """Replaces each of `secrets` in a text by `***`, the longest first (a key that contains another is masked
    whole, not left with its tail showing)."""

    def __init__(self, secrets: Iterable[str | bytes | None]) -> None:
        found = {_text(s).strip() for s in secrets if s}
        self.secrets: tuple[str, ...] = tuple(
            sorted((s for s in found if len(s) >= MIN_SECRET_CHARS), key=len, reverse=True)
        )

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, MASK)
        return text

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def holds(self, text: str) -> bool:
        """Whether `text` quotes one of the secrets."""
        return any(secret in text for secret in self.secrets)

    def deep(self, value: T) -> T:
        """`value` with every string in it scrubbed — a pydantic model's fields, mappings (keys too), lists,
        tuples — of the same types; `value` itself (the same object) when it quotes no secret."""
        if not self.secrets:
            return value
        return _deep(self, value)

    def plus(self, secrets: Iterable[str | bytes | None]) -> Scrubber:
        return Scrubber((*self.secrets, *secrets))


# Credentials by their shape, for error text that quotes one the process does not hold (a tool's own key in
# the URL of the HTTP error it raised): a query parameter named like a credential, an Authorization scheme's
# token, a URL's password.
_SHAPED = (
    (
        re.compile(
            r"(?i)(?<![\w-])((?:api[_-]?key|apikey|access[_-]?token|auth[_-]?token|refresh[_-]?token|token|secret|"
            r"client[_-]?secret|password|passwd|key|sig|signature|x-amz-signature|x-amz-credential)=)[^&\s'\"#]+"
        ),
        rf"\1{MASK}",
    ),
    (re.compile(r"(?i)\b(bearer|basic|token)(\s+)[A-Za-z0-9._~+/=-]{8,}"), rf"\1\2{MASK}"),
    (re.compile(r"(://[^/\s:@]+:)[^@\s/]+@"), rf"\1{MASK}@"),
)


def shaped(text: str) -> str:
    """`text` with anything shaped like a credential masked: meant for error text (a failure, a tool's error
    result), where such shapes are never the point — not for a tool's answer, whose links may be."""
    for pattern, replacement in _SHAPED:
        text = pattern.sub(replacement, text)
    return text


def _deep(scrub: Scrubber, value: Any) -> Any:
    if isinstance(value, str):
        return scrub(value) if scrub.holds(value) else value
    if isinstance(value, BaseModel):
        changed = {}
        for name in type(value).model_fields:
            field = getattr(value, name)
            if (cleaned := _deep(scrub, field)) is not field:
                changed[name] = cleaned
        return value.model_copy(update=changed) if changed else value
    if isinstance(value, Mapping):
        pairs = [(_deep(scrub, k), _deep(scrub, v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(pairs, value.items(), strict=True)):
            return value
        return type(value)(pairs) if isinstance(value, dict) else dict(pairs)
    if isinstance(value, list | tuple):
        items = [_deep(scrub, item) for item in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(items) if type(value) in (list, tuple) else items
    return value


def _text(secret: str | bytes) -> str:
    return secret.decode(errors="replace") if isinstance(secret, bytes) else secret
