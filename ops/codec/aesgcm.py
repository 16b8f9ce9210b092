"""The payload codec: AES-256-GCM over each whole payload, so workflow inputs and results, activity
arguments and results, memos, summaries and (with the encoded-attributes failure converter) failure
messages are ciphertext in Temporal's database and history.

Wire format (the same as Temporal's encryption samples in Go, TypeScript and Python, so their codec
servers interoperate): the encoded payload has metadata `encoding: binary/encrypted` and
`encryption-key-id: <kid>`, and data `nonce (12 random bytes) || ciphertext || tag`, where the plaintext is
the original payload, protobuf-serialised (its metadata included).

Decoding leaves payloads that are not `binary/encrypted` alone, so history written before the codec was
turned on stays readable. A payload under a key id that is not loaded fails loudly (`UnknownKeyError`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

from ops.codec.keys import KeyRing

ENCODING = b"binary/encrypted"
KEY_ID = "encryption-key-id"
NONCE_BYTES = 12


class DecryptionError(ValueError):
    """The ciphertext does not authenticate under its key: tampered with, truncated, or a different key
    under the same id."""


class AesGcmCodec(PayloadCodec):
    def __init__(self, keyring: KeyRing) -> None:
        self.keyring = keyring
        self._ciphers = {kid: AESGCM(key) for kid, key in keyring.keys.items()}

    @property
    def active_key_id(self) -> str:
        return self.keyring.active

    # The synchronous core, shared by the SDK (async) and the codec HTTP server.

    def encrypt(self, payload: Payload) -> Payload:
        kid = self.keyring.active
        nonce = os.urandom(NONCE_BYTES)
        data = nonce + self._ciphers[kid].encrypt(nonce, payload.SerializeToString(), None)
        return Payload(metadata={"encoding": ENCODING, KEY_ID: kid.encode()}, data=data)

    def decrypt(self, payload: Payload) -> Payload:
        if payload.metadata.get("encoding") != ENCODING:
            return payload
        kid = payload.metadata.get(KEY_ID, b"").decode(errors="replace")
        self.keyring.key(kid)  # raises UnknownKeyError naming the id
        data = payload.data
        if len(data) < NONCE_BYTES + 16:
            raise DecryptionError(f"encrypted payload under key {kid!r} is too short")
        try:
            plain = self._ciphers[kid].decrypt(data[:NONCE_BYTES], data[NONCE_BYTES:], None)
        except InvalidTag:
            raise DecryptionError(f"encrypted payload under key {kid!r} does not authenticate") from None
        return Payload.FromString(plain)

    def encrypt_all(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.encrypt(p) for p in payloads]

    def decrypt_all(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.decrypt(p) for p in payloads]

    # PayloadCodec

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return self.encrypt_all(payloads)

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return self.decrypt_all(payloads)
