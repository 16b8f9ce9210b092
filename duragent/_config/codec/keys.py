"""Encryption keys for the payload codec: a key ring of 256-bit AES keys, each with a key id.

The first key is the active one (new payloads are encrypted under it); the others still decrypt what was
written under them, which is how keys are rotated: put the new key first, keep the old ones until no
history that needs them is retained.

Format (env `AGENT_CODEC_KEYS`, or the file named by `AGENT_CODEC_KEY_FILE`): entries `kid:base64key`,
separated by commas or newlines; in a file, `#` starts a comment. A key is 32 random bytes, base64
(standard or url-safe alphabet). Make one with:

    python starter.py codec-key k2026-01          # prints  k2026-01:<base64 of 32 random bytes>

Nothing here ever puts key material into an error message or a repr.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

KEY_BYTES = 32  # AES-256
# At most 40 characters: a base64 AES-256 key (43-44) can never pass for an id, even url-safe.
_KID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$")


class KeyConfigError(ValueError):
    """The key configuration is unusable. The message names the entry, never the key."""


@dataclass(frozen=True)
class KeyRing:
    active: str
    keys: Mapping[str, bytes] = field(repr=False)

    def __post_init__(self) -> None:
        # No key id is echoed here: a string that is not a valid id may be a key written in its place.
        if self.active not in self.keys:
            raise KeyConfigError("the active key id is not in the key ring")
        for index, (kid, key) in enumerate(self.keys.items(), 1):
            if not _KID.match(kid):
                raise KeyConfigError(f"entry {index}: bad key id: use letters, digits, '.', '_' or '-' (at most 40)")
            if len(key) != KEY_BYTES:
                raise KeyConfigError(f"entry {index}: the key is {len(key)} bytes; AES-256 needs {KEY_BYTES}")

    @property
    def key_ids(self) -> list[str]:
        return list(self.keys)

    def key(self, kid: str) -> bytes:
        try:
            return self.keys[kid]
        except KeyError:
            raise UnknownKeyError(kid, self.key_ids) from None

    @classmethod
    def parse(cls, text: str, *, source: str = "AGENT_CODEC_KEYS") -> KeyRing:
        """Errors name an entry by its position, never by its key id: in an entry written the wrong way round
        (`base64key:kid`) the "key id" is the key."""
        keys: dict[str, bytes] = {}
        order: list[str] = []
        for raw_line in text.splitlines():
            line = raw_line.split("#", 1)[0]
            for entry in line.split(","):
                entry = entry.strip()
                if not entry:
                    continue
                where = f"{source}: entry {len(order) + 1}"
                kid, sep, encoded = entry.partition(":")
                kid = kid.strip()
                if not sep or not kid or not encoded.strip():
                    raise KeyConfigError(f"{where} is not of the form kid:base64key")
                if not _KID.match(kid):
                    raise KeyConfigError(
                        f"{where}: bad key id (letters, digits, '.', '_' or '-', at most 40); "
                        "entries are kid:base64key, the id first"
                    )
                if kid in keys:
                    raise KeyConfigError(f"{where}: its key id appears twice (first in entry {order.index(kid) + 1})")
                keys[kid] = _decode_key(encoded.strip(), where)
                order.append(kid)
        if not order:
            raise KeyConfigError(f"{source}: no keys found")
        return cls(active=order[0], keys=keys)


class UnknownKeyError(KeyError):
    def __init__(self, kid: str, loaded: list[str]) -> None:
        super().__init__(kid)
        self.kid = kid
        self.loaded = loaded

    def __str__(self) -> str:
        return (
            f"payload was encrypted with key id {self.kid!r}, which is not loaded (loaded: {', '.join(self.loaded)}); "
            "add that key to AGENT_CODEC_KEYS / AGENT_CODEC_KEY_FILE (after the active one)"
        )


def _decode_key(encoded: str, where: str) -> bytes:
    padded = encoded + "=" * (-len(encoded) % 4)
    try:
        if "-" in encoded or "_" in encoded:
            key = base64.urlsafe_b64decode(padded)
        else:
            key = base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        raise KeyConfigError(f"{where}: the key is not valid base64") from None
    if len(key) != KEY_BYTES:
        raise KeyConfigError(f"{where}: the key is {len(key)} bytes; AES-256 needs {KEY_BYTES}")
    return key


def load_keyring(keys: str | None, key_file: Path | str | None) -> KeyRing | None:
    """The key ring from the two settings, or None when neither is set (the codec stays off)."""
    keys = (keys or "").strip() or None
    key_file = str(key_file).strip() if key_file else None
    if keys and key_file:
        raise KeyConfigError("set AGENT_CODEC_KEYS or AGENT_CODEC_KEY_FILE, not both")
    if keys:
        return KeyRing.parse(keys)
    if key_file:
        path = Path(key_file)
        try:
            text = path.read_text()
        except OSError as exc:
            raise KeyConfigError(f"AGENT_CODEC_KEY_FILE: cannot read {path}: {exc.strerror}") from None
        return KeyRing.parse(text, source=f"AGENT_CODEC_KEY_FILE ({path})")
    return None


def new_key() -> str:
    """A fresh random 256-bit key, base64."""
    return base64.b64encode(os.urandom(KEY_BYTES)).decode()


def new_entry(kid: str) -> str:
    """`KEY_ID:<base64>`, as AGENT_CODEC_KEYS takes it (KeyConfigError for an id the key ring would refuse)."""
    if not _KID.match(kid):
        raise KeyConfigError(f"bad key id {kid!r}: use letters, digits, '.', '_' or '-'")
    return f"{kid}:{new_key()}"
