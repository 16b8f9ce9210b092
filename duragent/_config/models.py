"""The models a worker declares (`ModelCatalog`), from its settings: where each endpoint is and which key
it gets stays here, on the worker; a run only names one.

- `local`: the embedded model server (`python starter.py model-server`), at `AGENT_LOCAL_MODEL_URL`, asked with
  llama-cpp-python's tool calls; `local-schema`: the same server asked one JSON step at a time under a JSON-schema
  grammar (agentic/models/constrained.py), what the small models need to finish a task.
- `openai:<model>` (e.g. `openai:gpt-4.1-mini`): when `OPENAI_API_KEY` is set, at `AGENT_OPENAI_BASE_URL`
  (default: api.openai.com).
- `anthropic:<model>` (e.g. `anthropic:claude-sonnet-4-5`): when `ANTHROPIC_API_KEY` is set, at
  `AGENT_ANTHROPIC_BASE_URL` (default: api.anthropic.com); the `anthropic` extra.
- `google:<model>` (e.g. `google:gemini-2.5-flash`): when `GOOGLE_API_KEY` (or `GEMINI_API_KEY`) is set, at
  `AGENT_GOOGLE_BASE_URL` (default: the Gemini API); the `google` extra.
- `bedrock:<model id>` (e.g. `bedrock:anthropic.claude-sonnet-4-5-20250929-v1:0`): when `AWS_ACCESS_KEY_ID` and
  `AWS_SECRET_ACCESS_KEY` are set (and `AWS_SESSION_TOKEN`), in `AWS_REGION` (default us-east-1), at
  `AGENT_BEDROCK_BASE_URL` (default: the region's bedrock-runtime endpoint); the `bedrock` extra.
- `groq:<model>` (e.g. `groq:llama-3.3-70b-versatile`): when `GROQ_API_KEY` is set, at `AGENT_GROQ_BASE_URL`;
  the `groq` extra.
- `mistral:<model>` (e.g. `mistral:mistral-large-latest`): when `MISTRAL_API_KEY` is set, at
  `AGENT_MISTRAL_BASE_URL`; the `mistral` extra.

A declared provider whose extra is missing fails the run that names it with the one line naming the extra.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from agentic import Model
from agentic.models.catalog import ModelCatalog
from duragent._config.settings import Settings


def declared_models(settings: Settings, extra: Mapping[str, Model] | None = None) -> ModelCatalog:
    catalog = ModelCatalog()
    local_url = settings.local_model_url
    catalog.add("local", lambda: _local_model(local_url))
    catalog.add("local-schema", lambda: _local_model(local_url, constrained=True))
    # `partial`, not a closure: each prefix keeps the key and URL it was declared with (closures over one
    # variable reassigned per provider would all send the last provider's key).
    if settings.openai_api_key:
        catalog.add_prefix(
            "openai:", partial(_openai_chat, api_key=settings.openai_api_key, base_url=settings.openai_base_url)
        )
    if settings.anthropic_api_key:
        catalog.add_prefix(
            "anthropic:",
            partial(
                _provider, "anthropic_model", api_key=settings.anthropic_api_key, base_url=settings.anthropic_base_url
            ),
        )
    if settings.google_api_key:
        catalog.add_prefix(
            "google:",
            partial(_provider, "google_model", api_key=settings.google_api_key, base_url=settings.google_base_url),
        )
    if settings.aws_access_key_id and settings.aws_secret_access_key:
        catalog.add_prefix(
            "bedrock:",
            partial(
                _provider,
                "bedrock_model",
                access_key_id=settings.aws_access_key_id,
                secret_access_key=settings.aws_secret_access_key,
                session_token=settings.aws_session_token,
                region=settings.aws_region or "us-east-1",
                base_url=settings.bedrock_base_url,
            ),
        )
    if settings.groq_api_key:
        catalog.add_prefix(
            "groq:", partial(_provider, "groq_model", api_key=settings.groq_api_key, base_url=settings.groq_base_url)
        )
    if settings.mistral_api_key:
        catalog.add_prefix(
            "mistral:",
            partial(_provider, "mistral_model", api_key=settings.mistral_api_key, base_url=settings.mistral_base_url),
        )
    for name, model in (extra or {}).items():
        catalog.add(name, model)
    return catalog


def _local_model(url: str, *, constrained: bool = False) -> Model:
    # The embedded model server's quirks (tool results as user turns, no `required`) live with it.
    from agentic.models.local import constrained_local_model, local_model

    return constrained_local_model(url) if constrained else local_model(url)


def _openai_chat(name: str, **options: Any) -> Model:
    # The OpenAI SDK costs about a second to import: only a process that uses such a model pays for it.
    from agentic.models.openai_chat import OpenAIChatModel

    return OpenAIChatModel(name, **options)


def _provider(factory: str, name: str, **options: Any) -> Model:
    # The model layer and a provider's SDK cost seconds to import: only a process that uses one pays for it.
    from agentic.models import providers

    made: Model = getattr(providers, factory)(name, **options)
    return made
