"""The payload codec: AES-256-GCM over each whole payload, so workflow inputs and results, activity
arguments and results, memos, summaries and (with the encoded-attributes failure converter) failure
messages are ciphertext in Temporal's database and history.

Wire format: the encoded payload has metadata `encoding: binary/encrypted`, `encryption-key-id: <kid>` and
`encryption-format: 3`, and data `nonce (12 random bytes) || ciphertext || tag`, where the plaintext is the
original payload, protobuf-serialised (its metadata included). The associated data binds everything the label
says plus where the payload lives: `binary/encrypted|3|["<kid>","<namespace>"]`. Relabelling a
payload with another key id or format fails to authenticate, and so does a ciphertext copied into another
namespace that shares the keys (staging into production, one tenant's history into another's): the codec of a
client (duragent/_config/connection.py) is bound to that client's namespace, the codec endpoint to the namespace each
request names. (The workflow or the field a payload belongs to is not bound: the codec endpoint, the CLI and
archive readers decode without that context.)

Earlier formats still decrypt, so history written before stays readable: `encryption-format: 2` (associated
data `binary/encrypted|2|<kid>`, what a codec without a namespace still writes) and no marker at all
(Temporal's encryption samples: no associated data).

Decoding leaves payloads that are not `binary/encrypted` alone, so history written before the codec was
turned on stays readable — unless `strict` (`AGENT_CODEC_STRICT=1`), which refuses them: then a client
without the keys cannot slip a plaintext input or signal in. A payload under a key id that is not loaded
fails loudly (`UnknownKeyError`). The codec gives confidentiality and integrity of each payload; it does not
say who wrote it (anyone with the keys can) and does not hide its length (docs/operations.md, Trust model).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

from duragent._config.codec.keys import KeyRing

ENCODING = b"binary/encrypted"
KEY_ID = "encryption-key-id"
FORMAT = "encryption-format"
FORMAT_VERSION = b"2"  # key id and format bound; what a codec without a namespace writes
FORMAT_NAMESPACED = b"3"  # ... and the namespace
NONCE_BYTES = 12


class DecryptionError(ValueError):
    """The ciphertext does not authenticate under its key: tampered with, truncated, or a different key
    under the same id."""


class PlaintextPayloadError(DecryptionError):
    """Strict mode met a payload that is not encrypted."""


def associated_data(kid: str, namespace: str | None = None) -> bytes:
    if namespace is None:
        return ENCODING + b"|" + FORMAT_VERSION + b"|" + kid.encode()
    return ENCODING + b"|" + FORMAT_NAMESPACED + b"|" + json.dumps([kid, namespace]).encode()


class AesGcmCodec(PayloadCodec):
    """`namespace`: the Temporal namespace the payloads belong to (a client's); None writes format 2."""

    def __init__(self, keyring: KeyRing, *, strict: bool = False, namespace: str | None = None) -> None:
        self.keyring = keyring
        self.strict = strict
        self.namespace = namespace
        self._ciphers = {kid: AESGCM(key) for kid, key in keyring.keys.items()}

    def in_namespace(self, namespace: str) -> AesGcmCodec:
        """The same keys, bound to `namespace` (the codec endpoint: per request)."""
        return AesGcmCodec(self.keyring, strict=self.strict, namespace=namespace)

    @property
    def active_key_id(self) -> str:
        return self.keyring.active

    # The synchronous core, shared by the SDK (async) and the codec HTTP server.

    def seal(self, plain: bytes, context: bytes) -> tuple[str, bytes]:
        """(active key id, nonce || ciphertext || tag), authenticating `context` (associated data) too."""
        kid = self.keyring.active
        nonce = os.urandom(NONCE_BYTES)
        return kid, nonce + self._ciphers[kid].encrypt(nonce, plain, context)

    def open(self, kid: str, data: bytes, context: bytes | None) -> bytes:
        self.keyring.key(kid)  # raises UnknownKeyError naming the id
        if len(data) < NONCE_BYTES + 16:
            raise DecryptionError(f"encrypted data under key {kid!r} is too short")
        try:
            return self._ciphers[kid].decrypt(data[:NONCE_BYTES], data[NONCE_BYTES:], context)
        except InvalidTag:
            raise DecryptionError(f"encrypted data under key {kid!r} does not authenticate") from None

    def encrypt(self, payload: Payload) -> Payload:
        kid = self.keyring.active
        marker = FORMAT_VERSION if self.namespace is None else FORMAT_NAMESPACED
        kid, data = self.seal(payload.SerializeToString(), associated_data(kid, self.namespace))
        return Payload(metadata={"encoding": ENCODING, KEY_ID: kid.encode(), FORMAT: marker}, data=data)

    def decrypt(self, payload: Payload) -> Payload:
        if payload.metadata.get("encoding") != ENCODING:
            if self.strict:
                raise PlaintextPayloadError(
                    "refused an unencrypted payload (AGENT_CODEC_STRICT is on): it was written by a client "
                    "without the codec keys"
                )
            return payload
        kid = payload.metadata.get(KEY_ID, b"").decode(errors="replace")
        marker = payload.metadata.get(FORMAT)
        if marker == FORMAT_NAMESPACED:
            if self.namespace is None:
                raise DecryptionError(
                    f"encrypted payload under key {kid!r} belongs to a namespace, and this codec was given none"
                )
            context: bytes | None = associated_data(kid, self.namespace)
        elif marker == FORMAT_VERSION:
            context = associated_data(kid)
        elif marker is None:  # the format before associated data (Temporal's samples), still readable
            context = None
        else:
            raise DecryptionError(f"encrypted payload under key {kid!r} has an unknown format")
        return Payload.FromString(self.open(kid, payload.data, context))

    def encrypt_all(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.encrypt(p) for p in payloads]

    def decrypt_all(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.decrypt(p) for p in payloads]

    # PayloadCodec

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return self.encrypt_all(payloads)

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return self.decrypt_all(payloads)
