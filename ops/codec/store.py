"""The transcript store encrypted at rest with the same key ring as the payload codec.

With the codec on, Temporal's database holds only ciphertext — but by reference the transcript itself lives
in our store, so its bodies (messages, claim-checked outputs) are encrypted too. Node rows hold only hashes.
A hash of plaintext still tells two identical messages apart from two different ones; nothing more.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence

from temporalio.api.common.v1 import Payload

from agentic.transcript_store import TranscriptStore
from ops.codec.aesgcm import AesGcmCodec

PREFIX = "enc:"


class EncryptedTranscriptStore:
    def __init__(self, inner: TranscriptStore, codec: AesGcmCodec) -> None:
        self.inner = inner
        self.codec = codec

    def put_blobs(self, blobs: dict[str, str]) -> None:
        self.inner.put_blobs({ref: self._seal(body) for ref, body in blobs.items()})

    def get_blobs(self, refs: Sequence[str]) -> dict[str, str]:
        return {ref: self._open(body) for ref, body in self.inner.get_blobs(refs).items()}

    def put_nodes(self, nodes: Sequence[tuple[str, str, str]]) -> None:
        self.inner.put_nodes(nodes)

    def get_nodes(self, refs: Sequence[str]) -> dict[str, tuple[str, str]]:
        return self.inner.get_nodes(refs)

    def _seal(self, body: str) -> str:
        sealed = self.codec.encrypt(Payload(data=body.encode()))
        return PREFIX + base64.b64encode(sealed.SerializeToString()).decode()

    def _open(self, stored: str) -> str:
        if not stored.startswith(PREFIX):
            return stored  # written before encryption was turned on
        payload = Payload()
        payload.ParseFromString(base64.b64decode(stored[len(PREFIX) :]))
        return self.codec.decrypt(payload).data.decode()
