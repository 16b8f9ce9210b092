"""The transcript store encrypted at rest with the same key ring as the payload codec.

With the codec on, Temporal's database holds only ciphertext — but by reference the transcript itself lives
in our store, so its bodies (messages, claim-checked outputs) are encrypted too, and its references are keyed:

- References are `hmac:<kid>:<HMAC-SHA256>` under a key derived (HKDF) from the codec key, not SHA-256 of the
  plaintext, so whoever reads the file cannot confirm a guess of a message. Still deterministic
  for a given key: writes stay idempotent, and equal messages still share a row.
- Each body is `enc2:<kid>:<base64(nonce || ciphertext || tag)>` with the reference as AES-GCM associated
  data: a body moved under another reference does not decrypt. A plaintext body under a keyed
  reference is refused: it can only have been planted.
- What was written before keeps reading: plaintext bodies and `enc:` bodies (the earlier format, no
  associated data) under `sha256:` references. Those are self-checking — `Transcripts` verifies every body
  and node against its reference on read, and the head comes from the run's history — but a guess of them
  can be confirmed from their refs; a codec built with `strict=True` refuses the plaintext ones too.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Sequence

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from google.protobuf.message import DecodeError
from temporalio.api.common.v1 import Payload

from duragent._config.codec.aesgcm import AesGcmCodec, DecryptionError
from duragent._config.codec.keys import KeyRing
from duragent._stores.transcripts import (
    SHA256,
    ContentRefs,
    Released,
    TranscriptIntegrityError,
    TranscriptStore,
    releasable,
    same_text,
)

LEGACY_PREFIX = "enc:"
PREFIX = "enc2:"
HMAC_PREFIX = "hmac:"
_REF_KEY_INFO = b"durable-agents transcript refs v1"
_BLOB_CONTEXT = b"durable-agents transcript blob v2|"


class KeyedRefs:
    """HMAC-SHA256 references under a per-key-id key derived with HKDF from the codec key."""

    def __init__(self, keyring: KeyRing) -> None:
        self.active = keyring.active
        self._keys = {
            kid: HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_REF_KEY_INFO).derive(key)
            for kid, key in keyring.keys.items()
        }

    def of(self, text: str) -> str:
        return self._ref(self.active, text)

    def matches(self, ref: str, text: str) -> bool:
        if ref.startswith(SHA256):
            return ContentRefs().matches(ref, text)  # written before the keys (self-checking, unkeyed)
        kid = ref[len(HMAC_PREFIX) :].split(":", 1)[0] if ref.startswith(HMAC_PREFIX) else ""
        return kid in self._keys and same_text(self._ref(kid, text), ref)

    def _ref(self, kid: str, text: str) -> str:
        return f"{HMAC_PREFIX}{kid}:{hmac.new(self._keys[kid], text.encode(), hashlib.sha256).hexdigest()}"


class EncryptedTranscriptStore:
    def __init__(self, inner: TranscriptStore, codec: AesGcmCodec) -> None:
        self.inner = inner
        self.codec = codec
        self.refs = KeyedRefs(codec.keyring)  # `Transcripts` on this store makes and checks refs with these

    def put_blobs(self, blobs: dict[str, str], owner: str | None = None) -> None:
        self.inner.put_blobs(self._sealed(blobs), owner)

    def get_blobs(self, refs: Sequence[str]) -> dict[str, str]:
        return {ref: self._open(ref, body) for ref, body in self.inner.get_blobs(refs).items()}

    def put_messages(
        self, blobs: dict[str, str], nodes: Sequence[tuple[str, str, str]], owner: str | None = None
    ) -> None:
        self.inner.put_messages(self._sealed(blobs), nodes, owner)

    def get_nodes(self, refs: Sequence[str]) -> dict[str, tuple[str, str]]:
        return self.inner.get_nodes(refs)

    # Owners are plain run ids and refs, like node rows: nothing to encrypt.
    def owned_blobs(self, owner: str) -> list[str]:
        return releasable(self.inner).owned_blobs(owner)

    def owners_of(self, ref: str) -> set[str]:
        return releasable(self.inner).owners_of(ref)

    def release(self, owner: str) -> Released:
        return releasable(self.inner).release(owner)

    def _sealed(self, blobs: dict[str, str]) -> dict[str, str]:
        return {ref: self._seal(ref, body) for ref, body in blobs.items()}

    def _seal(self, ref: str, body: str) -> str:
        kid, data = self.codec.seal(body.encode(), _BLOB_CONTEXT + ref.encode())
        return f"{PREFIX}{kid}:{base64.b64encode(data).decode()}"

    def _open(self, ref: str, stored: str) -> str:
        legacy = ref.startswith(SHA256)
        try:
            if stored.startswith(PREFIX):
                kid, _, data = stored[len(PREFIX) :].partition(":")
                return self.codec.open(kid, base64.b64decode(data), _BLOB_CONTEXT + ref.encode()).decode()
            if stored.startswith(LEGACY_PREFIX) and legacy:
                payload = Payload()
                payload.ParseFromString(base64.b64decode(stored[len(LEGACY_PREFIX) :]))
                return self.codec.decrypt(payload).data.decode()
        except (DecryptionError, DecodeError, binascii.Error, ValueError) as exc:
            raise TranscriptIntegrityError(
                f"transcript body {ref[:24]}… does not decrypt under its reference: {exc}"
            ) from None
        if legacy and not stored.startswith(LEGACY_PREFIX) and not self.codec.strict:
            return stored  # written before encryption was turned on; `Transcripts` checks it against its ref
        raise TranscriptIntegrityError(
            f"transcript body {ref[:24]}… is plaintext (or in an unexpected format) where only ciphertext was "
            "written: refused"
        )
