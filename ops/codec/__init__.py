"""Encryption at rest for Temporal payloads: an AES-256-GCM payload codec with rotating keys
(`ops.codec.aesgcm`, `ops.codec.keys`) and the remote codec endpoint the Web UI and CLI decode through
(`python -m ops.codec.server`). See docs/operations.md."""

from ops.codec.aesgcm import ENCODING, KEY_ID, AesGcmCodec, DecryptionError, PlaintextPayloadError
from ops.codec.keys import KeyConfigError, KeyRing, UnknownKeyError, load_keyring, new_key

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
