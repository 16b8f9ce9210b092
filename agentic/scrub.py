"""Credentials out of error text: a provider's error body, an SDK's message or a proxy's echo may quote the
key it was sent (a gateway's 401 said `Incorrect API key provided: sk-...`). Such text becomes an
activity failure, so it reaches the run's history, the Web UI, the CLI and a viewer's `error` field. Every
secret the process holds is replaced by `***` before that happens.
"""

from __future__ import annotations

from collections.abc import Iterable

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

    def plus(self, secrets: Iterable[str | bytes | None]) -> Scrubber:
        return Scrubber((*self.secrets, *secrets))


def _text(secret: str | bytes) -> str:
    return secret.decode(errors="replace") if isinstance(secret, bytes) else secret
