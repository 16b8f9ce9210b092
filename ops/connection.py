"""One way to connect, so every process uses the same data converter (pydantic models on the wire) and the
same connection security.

- Encryption at rest: when `AGENT_CODEC_KEYS` / `AGENT_CODEC_KEY_FILE` are set, every payload goes through
  the AES-GCM codec (`codec/`), and failure messages and stack traces are moved into an encoded payload
  too (`DefaultFailureConverterWithEncodedAttributes`), so none of them is readable in Temporal.
- Where and how: Temporal's standard client configuration (`temporalio.envconfig`: `TEMPORAL_ADDRESS`,
  `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`, `TEMPORAL_TLS_*`, TOML profiles), read by `ops.settings`;
  `connect_options` turns it into `Client.connect` arguments.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any

from temporalio.client import Client, Interceptor
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter, DefaultFailureConverterWithEncodedAttributes
from temporalio.runtime import Runtime
from temporalio.service import TLSConfig

from ops.codec import AesGcmCodec, KeyConfigError, load_keyring
from ops.settings import Settings


class ConnectionSettingsError(ValueError):
    """The TLS / API key settings contradict each other or name files that cannot be read."""


class TemporalConnectError(RuntimeError):
    """Connecting failed; the message says what was tried (address, namespace, TLS or not) and the cause."""


def data_converter(settings: Settings) -> DataConverter:
    keyring = load_keyring(settings.codec_keys, settings.codec_key_file)
    if keyring is None:
        if settings.codec_strict:
            raise KeyConfigError("AGENT_CODEC_STRICT is on but no codec keys are set (AGENT_CODEC_KEYS)")
        return pydantic_data_converter
    return dataclasses.replace(
        pydantic_data_converter,
        payload_codec=AesGcmCodec(keyring, strict=settings.codec_strict),
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


async def connect(
    settings: Settings | None = None, *, runtime: Runtime | None = None, interceptors: Sequence[Interceptor] = ()
) -> Client:
    """A client with the `DurableAgentsPlugin` (data converter, codec, interceptors) from the settings."""
    from workflows.plugin import DurableAgentsPlugin  # the plugin imports this module's data_converter

    settings = settings or Settings()
    options = connect_options(settings)
    del options["data_converter"]  # the plugin sets it, for this client and every worker built from it
    try:
        return await Client.connect(
            **options, plugins=[DurableAgentsPlugin(settings)], interceptors=list(interceptors), runtime=runtime
        )
    except RuntimeError as exc:
        raise TemporalConnectError(_explain(settings, options["tls"], exc)) from exc


def _plain(detail: str) -> str:
    """The transport error's own words (`Connection refused`) instead of the SDK's nested Rust dump."""
    found = re.search(r'message: "([^"]+)"', detail)
    if found and "tonic::transport" in detail:
        return found.group(1).lower()
    return detail.removeprefix("Failed client connect: ")


def _explain(settings: Settings, tls: TLSConfig | bool, exc: BaseException) -> str:
    where = f"{settings.address} (namespace {settings.namespace})"
    detail = _plain(str(exc))
    if tls is False:
        return f"cannot reach Temporal at {where} without TLS: {detail}"
    hint = ""
    if any(marker in detail for marker in ("InvalidContentType", "InvalidMessage", "CorruptMessage", "wrong version")):
        hint = (
            " — the server answered, but not with TLS: it is a plaintext endpoint (e.g. a dev server). "
            "Unset TEMPORAL_TLS / TEMPORAL_TLS_* / TEMPORAL_API_KEY for it, or point TEMPORAL_ADDRESS at a TLS endpoint"
        )
    elif "certificate" in detail.lower() or "UnknownIssuer" in detail:
        hint = (
            " — the server's certificate was not accepted: "
            "check TEMPORAL_TLS_SERVER_CA_CERT_PATH and TEMPORAL_TLS_SERVER_NAME"
        )
    return f"cannot reach Temporal at {where} over TLS: {detail}{hint}"
