"""Encryption at rest for Temporal payloads: an AES-256-GCM payload codec with rotating keys. The remote codec
endpoint the Web UI and CLI decode through is `python starter.py codec-server`; see docs/operations.md."""

from duragent._config.codec.aesgcm import ENCODING, KEY_ID, AesGcmCodec, DecryptionError, PlaintextPayloadError
from duragent._config.codec.keys import KeyConfigError, KeyRing, UnknownKeyError, load_keyring, new_key

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
