"""The providers reached through the model layer (agentic/models/layer.py), each built the same way: the key and
the endpoint the worker gives it and no other (never one found in the environment: a model pointed at another
endpoint would send it along), the SDK's own retries off, a timeout.

    anthropic_model("claude-sonnet-4-5", api_key=...)      # duragent[anthropic]
    google_model("gemini-2.5-flash", api_key=...)          # duragent[google]
    bedrock_model("anthropic.claude-sonnet-4-5-20250929-v1:0", access_key_id=..., secret_access_key=...,
                  region="us-east-1")                       # duragent[bedrock]
    groq_model("llama-3.3-70b-versatile", api_key=...)     # duragent[groq]
    mistral_model("mistral-large-latest", api_key=...)     # duragent[mistral]

Any other pydantic-ai model class (xAI, Cohere, ...) is one `LayerModel(name, that_model)` away.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentic.extras import require_extra
from agentic.models.base import ModelSettings, Pricing

DEFAULT_TIMEOUT = 120.0
# botocore's session variables that point at a profile or at the files holding profiles: none is read.
_AWS_FILES = ("profile", "config_file", "credentials_file")


def anthropic_model(
    model: str,
    *,
    api_key: str,
    base_url: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    settings: ModelSettings | None = None,
    pricing: Pricing | None = None,
    provider_settings: Mapping[str, Any] | None = None,
) -> Any:
    """Claude through the Messages API: thinking blocks and their signatures kept across tool turns."""
    require_extra("anthropic")
    from anthropic import AsyncAnthropic
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    from agentic.models.layer import LayerModel

    client = AsyncAnthropic(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0)
    layer = AnthropicModel(model, provider=AnthropicProvider(anthropic_client=client))
    return LayerModel(
        f"anthropic:{model}",
        layer,
        credentials=[api_key],
        settings=settings,
        pricing=pricing,
        provider_settings=provider_settings,
    )


def google_model(
    model: str,
    *,
    api_key: str,
    base_url: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    settings: ModelSettings | None = None,
    pricing: Pricing | None = None,
    provider_settings: Mapping[str, Any] | None = None,
) -> Any:
    """Gemini through the Gemini API (generateContent): thought signatures kept across tool turns."""
    require_extra("google")
    import httpx2
    from google.genai.types import HttpRetryOptions
    from pydantic_ai.models.google import GoogleModel
    from pydantic_ai.providers.google import GoogleProvider

    from agentic.models.layer import LayerModel

    provider = GoogleProvider(
        api_key=api_key,
        base_url=base_url,
        http_client=httpx2.AsyncClient(timeout=timeout),
        retry_options=HttpRetryOptions(attempts=1),  # 1 attempt: google-genai's own retries off
    )
    return LayerModel(
        f"google:{model}",
        GoogleModel(model, provider=provider),
        credentials=[api_key],
        settings=settings,
        pricing=pricing,
        provider_settings=provider_settings,
    )


def bedrock_model(
    model: str,
    *,
    access_key_id: str,
    secret_access_key: str,
    region: str,
    session_token: str | None = None,
    base_url: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    settings: ModelSettings | None = None,
    pricing: Pricing | None = None,
    provider_settings: Mapping[str, Any] | None = None,
) -> Any:
    """Amazon Bedrock through the Converse API, each request signed (SigV4) with these credentials: reasoning
    blocks and their signatures kept across tool turns."""
    require_extra("bedrock")
    import boto3
    import botocore.session
    from botocore.config import Config
    from pydantic_ai.models.bedrock import BedrockConverseModel
    from pydantic_ai.providers.bedrock import BedrockProvider

    from agentic.models.layer import LayerModel

    # A session of these credentials alone, reading no profile and no AWS config file: boto3's defaults would sign
    # with whatever the host happens to hold (an ambient session token, a profile's keys), fail on an
    # `AWS_PROFILE` that names no profile, and take endpoints and retries from files the worker does not own.
    isolated = botocore.session.Session(session_vars={name: (None, None, None, None) for name in _AWS_FILES})
    session = boto3.session.Session(
        aws_access_key_id=access_key_id,
        aws_secret_access_key=secret_access_key,
        aws_session_token=session_token,
        region_name=region,
        botocore_session=isolated,
    )
    client = session.client(
        "bedrock-runtime",
        endpoint_url=base_url,
        config=Config(
            read_timeout=timeout,
            connect_timeout=min(timeout, 60.0),
            retries={"total_max_attempts": 1, "mode": "standard"},  # 1 attempt: botocore's own retries off
            # `AWS_ENDPOINT_URL` in the environment would send the signed requests (and the token) elsewhere.
            ignore_configured_endpoint_urls=True,
        ),
    )
    return LayerModel(
        f"bedrock:{model}",
        BedrockConverseModel(model, provider=BedrockProvider(bedrock_client=client)),
        credentials=[c for c in (access_key_id, secret_access_key, session_token) if c],
        settings=settings,
        pricing=pricing,
        provider_settings=provider_settings,
    )


def groq_model(
    model: str,
    *,
    api_key: str,
    base_url: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    settings: ModelSettings | None = None,
    pricing: Pricing | None = None,
    provider_settings: Mapping[str, Any] | None = None,
) -> Any:
    """Groq's chat completions (OpenAI-shaped, at /openai/v1)."""
    require_extra("groq")
    from groq import AsyncGroq
    from pydantic_ai.models.groq import GroqModel
    from pydantic_ai.providers.groq import GroqProvider

    from agentic.models.layer import LayerModel

    client = AsyncGroq(api_key=api_key, base_url=base_url or "https://api.groq.com", timeout=timeout, max_retries=0)
    return LayerModel(
        f"groq:{model}",
        GroqModel(model, provider=GroqProvider(groq_client=client)),
        credentials=[api_key],
        settings=settings,
        pricing=pricing,
        provider_settings=provider_settings,
    )


def mistral_model(
    model: str,
    *,
    api_key: str,
    base_url: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    settings: ModelSettings | None = None,
    pricing: Pricing | None = None,
    provider_settings: Mapping[str, Any] | None = None,
) -> Any:
    """Mistral's chat completions (La Plateforme); retries off per request (`max_retries: 0` in the layer)."""
    require_extra("mistral")
    import httpx2
    from mistralai.client import Mistral
    from pydantic_ai.models.mistral import MistralModel
    from pydantic_ai.providers.mistral import MistralProvider

    from agentic.models.layer import LayerModel

    client = Mistral(api_key=api_key, server_url=base_url, async_client=httpx2.AsyncClient(timeout=timeout))
    return LayerModel(
        f"mistral:{model}",
        MistralModel(model, provider=MistralProvider(mistral_client=client)),
        credentials=[api_key],
        settings=settings,
        pricing=pricing,
        provider_settings=provider_settings,
    )
