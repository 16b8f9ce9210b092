"""One way to connect, so every process uses the same data converter (pydantic models on the wire) and the
same connection security.

- Encryption at rest: when `AGENT_CODEC_KEYS` / `AGENT_CODEC_KEY_FILE` are set, every payload goes through
  the AES-GCM codec (`codec/`), and failure messages and stack traces are moved into an encoded payload
  too (`DefaultFailureConverterWithEncodedAttributes`), so none of them is readable in Temporal.
- Where and how: Temporal's standard client configuration (`temporalio.envconfig`: `TEMPORAL_ADDRESS`,
  `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`, `TEMPORAL_TLS_*`, TOML profiles), read by `duragent._config.settings`;
  `connect_options` turns it into `Client.connect` arguments.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter, DefaultFailureConverterWithEncodedAttributes
from temporalio.service import TLSConfig

from duragent._config.codec import AesGcmCodec, KeyConfigError, load_keyring
from duragent._config.settings import Settings


class ConnectionSettingsError(ValueError):
    """The TLS / API key settings contradict each other or name files that cannot be read."""


def data_converter(settings: Settings) -> DataConverter:
    keyring = load_keyring(settings.codec_keys, settings.codec_key_file)
    if keyring is None:
        if settings.codec_strict:
            raise KeyConfigError("AGENT_CODEC_STRICT is on but no codec keys are set (AGENT_CODEC_KEYS)")
        return pydantic_data_converter
    return dataclasses.replace(
        pydantic_data_converter,
        # Bound to the namespace: a ciphertext copied into another namespace does not decrypt there.
        payload_codec=AesGcmCodec(keyring, strict=settings.codec_strict, namespace=settings.namespace),
        failure_converter_class=DefaultFailureConverterWithEncodedAttributes,
    )


def tls_config(settings: Settings) -> TLSConfig | bool:
    """What `Client.connect(tls=...)` gets: False (plaintext), True (TLS, system roots) or a TLSConfig with
    the profile's files read. An API key is never sent in plaintext."""
    files = settings.temporal.tls
    if files is not None and (files.client_cert is None) != (files.client_private_key is None):
        raise ConnectionSettingsError(
            "TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH go together (mTLS needs both)"
        )
    try:
        tls = files.to_connect_tls_config() if files is not None else bool(settings.api_key)
    except OSError as exc:
        raise ConnectionSettingsError(
            f"cannot read the TLS file {exc.filename}: {exc.strerror} (TEMPORAL_TLS_CLIENT_CERT_PATH, "
            "TEMPORAL_TLS_CLIENT_KEY_PATH, TEMPORAL_TLS_SERVER_CA_CERT_PATH or the profile)"
        ) from None
    if settings.tls is True and tls is False:
        tls = True
    elif settings.tls is False:
        tls = False
    if tls is False and settings.api_key:
        raise ConnectionSettingsError("an API key is never sent without TLS; unset TEMPORAL_TLS=false")
    return tls


def connect_options(settings: Settings) -> dict[str, Any]:
    """The keyword arguments for `Client.connect`, from the settings (no I/O beyond reading PEM files)."""
    return {
        "target_host": settings.address,
        "namespace": settings.namespace,
        "data_converter": data_converter(settings),
        "tls": tls_config(settings),
        "api_key": settings.api_key,
        "rpc_metadata": dict(settings.temporal.grpc_meta),
    }
