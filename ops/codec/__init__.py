"""Encryption at rest for Temporal payloads: an AES-256-GCM payload codec with rotating keys
(`ops.codec.aesgcm`, `ops.codec.keys`) and the remote codec endpoint the Web UI and CLI decode through
(`python -m ops.codec.server`). See docs/operations.md.

The names below are imported on first use (PEP 562): importing the package must not import
`ops.codec.keys` itself, or `python -m ops.codec.keys` warns on every call that the module was imported
before it ran."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ops.codec.aesgcm import ENCODING, KEY_ID, AesGcmCodec, DecryptionError, PlaintextPayloadError
    from ops.codec.keys import KeyConfigError, KeyRing, UnknownKeyError, load_keyring, new_key

_WHERE = {
    "ENCODING": "ops.codec.aesgcm",
    "KEY_ID": "ops.codec.aesgcm",
    "AesGcmCodec": "ops.codec.aesgcm",
    "DecryptionError": "ops.codec.aesgcm",
    "PlaintextPayloadError": "ops.codec.aesgcm",
    "KeyConfigError": "ops.codec.keys",
    "KeyRing": "ops.codec.keys",
    "UnknownKeyError": "ops.codec.keys",
    "load_keyring": "ops.codec.keys",
    "new_key": "ops.codec.keys",
}
__all__ = [
    "ENCODING",
    "KEY_ID",
    "AesGcmCodec",
    "DecryptionError",
    "KeyConfigError",
    "KeyRing",
    "PlaintextPayloadError",
    "UnknownKeyError",
    "load_keyring",
    "new_key",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'ops.codec' has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)
