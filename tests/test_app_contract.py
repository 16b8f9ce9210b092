"""The repository's application (workflows/, activities/) is built on the library's public names only: the
import contract that says so (pyproject.toml, run by `lint-imports`) lists every underscored module of
`duragent`, so a new internal module is covered the day it is added; and the application's own `duragent`
imports name public modules only."""

from __future__ import annotations

import tomllib

import pytest

from duragent._config.settings import ROOT

pytestmark = pytest.mark.unit

CONTRACT = "The application imports only the library's public names"


def contract() -> dict:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return next(c for c in config["contracts"] if c["name"] == CONTRACT)


def test_the_contract_forbids_every_underscored_module_of_the_library() -> None:
    children = (ROOT / "duragent").iterdir()
    private = {f"duragent.{p.stem}" for p in children if p.name.startswith("_") and not p.name.startswith("__")}
    assert set(contract()["forbidden_modules"]) == private
    assert contract()["source_modules"] == ["workflows", "activities"]


def test_the_application_imports_duragent_by_its_public_names() -> None:
    imported = set()
    for path in [*(ROOT / "workflows").glob("*.py"), *(ROOT / "activities").glob("*.py")]:
        for line in path.read_text().splitlines():
            words = line.strip().split()
            if words[:1] in (["from"], ["import"]) and len(words) > 1 and words[1].startswith("duragent"):
                imported.add(words[1])
    assert imported and all(not part.startswith("_") for name in imported for part in name.split(".")), imported
