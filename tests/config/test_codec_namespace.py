"""The payload codec binds each ciphertext to its namespace, not only to its key id. The attacker
holds a ciphertext from one namespace's history (staging, another tenant) and puts it into a namespace that
shares the keys — as a workflow input or a signal argument: it does not decrypt there, through a client's data
converter or through the codec endpoint. Payloads written before (format 2, and the samples' format without a
marker) still decrypt, and a format-3 payload cannot be relabelled as one of them."""

from __future__ import annotations

import base64
import json
import os

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads

from duragent._config.codec import new_key
from duragent._config.codec.aesgcm import (
    ENCODING,
    FORMAT,
    FORMAT_NAMESPACED,
    FORMAT_VERSION,
    KEY_ID,
    AesGcmCodec,
    DecryptionError,
)
from duragent._config.codec.keys import KeyRing
from duragent._config.connection import data_converter
from duragent._config.settings import Settings
from tests.config.test_codec import http
from tests.ops.test_codec_endpoint_security import serving

SECRET = "refund order 4471 to IBAN DE02..."
INNER = Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(SECRET).encode())


def settings(namespace: str, keys: str) -> Settings:
    return Settings(namespace=namespace, codec_keys=keys)


async def test_a_ciphertext_copied_into_another_namespace_does_not_decrypt() -> None:
    keys = f"k1:{new_key()}"
    staging, production = data_converter(settings("staging", keys)), data_converter(settings("production", keys))
    [sealed] = await staging.encode([SECRET])
    assert sealed.metadata[FORMAT] == FORMAT_NAMESPACED and SECRET.encode() not in sealed.data
    assert await staging.decode([sealed], [str]) == [SECRET]
    with pytest.raises(DecryptionError, match="does not authenticate"):
        await production.decode([sealed], [str])
    # Relabelled as the format without a namespace, or without any marker: still nothing.
    for label in ({FORMAT: FORMAT_VERSION}, {}):
        forged = Payload(metadata={"encoding": ENCODING, KEY_ID: b"k1", **label}, data=sealed.data)
        for converter in (staging, production):
            with pytest.raises(DecryptionError):
                await converter.decode([forged], [str])


def test_payloads_written_before_still_decrypt_in_any_namespace() -> None:
    raw = new_key()
    bound = AesGcmCodec(KeyRing.parse(f"k1:{raw}"), namespace="production")
    unbound = AesGcmCodec(KeyRing.parse(f"k1:{raw}"))  # what wrote format 2
    format_2 = unbound.encrypt(INNER)
    assert format_2.metadata[FORMAT] == FORMAT_VERSION
    nonce = os.urandom(12)
    samples = Payload(
        metadata={"encoding": ENCODING, KEY_ID: b"k1"},
        data=nonce + AESGCM(base64.b64decode(raw)).encrypt(nonce, INNER.SerializeToString(), None),
    )
    assert bound.decrypt(format_2) == bound.decrypt(samples) == INNER
    # A codec that knows no namespace cannot read a bound payload, and says why.
    with pytest.raises(DecryptionError, match="belongs to a namespace"):
        unbound.decrypt(bound.encrypt(INNER))


def body(*payloads: Payload) -> bytes:
    return json_format.MessageToJson(Payloads(payloads=list(payloads))).encode()


def test_the_codec_endpoint_decodes_in_the_namespace_a_request_names() -> None:
    keys = f"k1:{new_key()}"
    token = "codec-token-0123456789abcdef"
    [sealed] = data_converter(settings("staging", keys)).payload_codec.encrypt_all([INNER])  # type: ignore[union-attr]
    auth = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    with serving(AesGcmCodec(KeyRing.parse(keys), namespace="default"), token) as served:
        url = served.url
        for path, headers in (("/decode", {"X-Namespace": "staging"}), ("/staging/decode", {})):
            status, _, answer = http(url + path, body(sealed), auth | headers)
            assert status == 200, answer
            assert json_format.Parse(answer, Payloads()).payloads[0] == INNER
        for path, headers in (("/decode", {"X-Namespace": "production"}), ("/decode", {}), ("/production/decode", {})):
            status, _, answer = http(url + path, body(sealed), auth | headers)
            assert status == 422 and b"does not authenticate" in answer and SECRET.encode() not in answer
        # What the Web UI encodes for a namespace (a signal it sends) is bound to that namespace.
        status, _, answer = http(url + "/encode", body(INNER), auth | {"X-Namespace": "production"})
        [encoded] = json_format.Parse(answer, Payloads()).payloads
        assert AesGcmCodec(KeyRing.parse(keys), namespace="production").decrypt(encoded) == INNER
        with pytest.raises(DecryptionError):
            AesGcmCodec(KeyRing.parse(keys), namespace="staging").decrypt(encoded)
