"""The providers reached through the model layer (agentic/models/layer.py), each built the same way: the key and
the endpoint the worker gives it and no other (never one found in the environment: a model pointed at another
endpoint would send it along), the SDK's own retries off, a timeout.

    anthropic_model("claude-sonnet-4-5", api_key=...)      # duragent[anthropic]
    google_model("gemini-2.5-flash", api_key=...)          # duragent[google]

Any other pydantic-ai model class (Bedrock, Groq, Mistral, ...) is one `LayerModel(name, that_model)` away.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentic.extras import require_extra
from agentic.models.base import ModelSettings, Pricing

DEFAULT_TIMEOUT = 120.0


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
