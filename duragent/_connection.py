"""Connecting to Temporal from settings: the one way every process of ours connects (`AgentClient.connect` is
this, wrapped), and the same as a user's `Client.connect(..., plugins=[DurableAgentsPlugin(...)])` with the
options filled in."""

from __future__ import annotations

import re
from collections.abc import Sequence

from temporalio.client import Client, Interceptor
from temporalio.runtime import Runtime
from temporalio.service import TLSConfig

from duragent._config.connection import connect_options
from duragent._config.settings import Settings
from duragent._errors import TemporalUnavailable
from duragent._plugin import DurableAgentsPlugin


async def connect(
    settings: Settings | None = None, *, runtime: Runtime | None = None, interceptors: Sequence[Interceptor] = ()
) -> Client:
    """A client with the `DurableAgentsPlugin` (data converter, codec, interceptors) of `settings` (none: the
    environment's, `Settings.from_env()`). TemporalUnavailable says what was tried (address, namespace, TLS or
    not) and why it failed; settings that contradict themselves (TLS, keys) are a ValueError."""
    settings = settings if settings is not None else Settings.from_env()
    options = connect_options(settings)
    del options["data_converter"]  # the plugin sets it, for this client and every worker built from it
    try:
        return await Client.connect(
            **options, plugins=[DurableAgentsPlugin(settings)], interceptors=list(interceptors), runtime=runtime
        )
    except RuntimeError as exc:
        raise TemporalUnavailable(_explain(settings, options["tls"], exc)) from exc


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
