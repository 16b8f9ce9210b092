"""`duragent`, the package a program imports, loads each public name where it lives on first use
(duragent/__init__.py): every name in `__all__` resolves to the object its home module defines, the table
of homes says what the imports for type checkers say, and a name it does not have is an AttributeError."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import duragent
from duragent._config.settings import ROOT

pytestmark = pytest.mark.unit

SOURCE = Path(duragent.__file__).read_text()


def imports_for_type_checkers() -> dict[str, str]:
    block = next(n for n in ast.parse(SOURCE).body if isinstance(n, ast.If))  # `if TYPE_CHECKING:`
    return {alias.asname or alias.name: node.module for node in block.body for alias in node.names}  # type: ignore[attr-defined]


def test_every_public_name_resolves_to_the_object_its_home_defines() -> None:
    homes = duragent._HOMES
    assert sorted(duragent.__all__) == sorted(homes)
    for name in duragent.__all__:
        assert getattr(duragent, name) is getattr(importlib.import_module(homes[name]), name), name


def test_the_table_of_homes_is_what_the_type_checkers_read() -> None:
    assert imports_for_type_checkers() == duragent._HOMES


def test_a_name_the_package_does_not_have_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'Agnet'"):
        duragent.Agnet  # noqa: B018
    with pytest.raises(ImportError):
        from duragent import Agnet  # noqa: F401


def test_star_import_and_dir_list_the_public_names() -> None:
    namespace: dict[str, object] = {}
    exec("from duragent import *", namespace)
    assert set(duragent.__all__) <= set(namespace) and set(duragent.__all__) <= set(dir(duragent))


def test_the_public_api_document_lists_every_public_name_and_nothing_else() -> None:
    """docs/public-api.md is the policy's list: a name added to `__all__` without it (or kept there after it
    went) fails here."""
    listed = set(re.findall(r"`(\w+)`", (ROOT / "docs" / "public-api.md").read_text().split("## Defining")[1]))
    listed -= {"asyncio", "run", "duragent", "mcp", "ImportError"}
    assert listed == set(duragent.__all__) - {"run"}
    assert "`run`" in (ROOT / "docs" / "public-api.md").read_text()


def test_the_in_workflow_api_is_documented_name_by_name_and_each_name_says_what_it_does() -> None:
    import duragent.workflow

    intro = (ROOT / "docs" / "public-api.md").read_text().split("## Defining")[0]
    assert "`duragent.workflow`" in intro
    assert duragent.workflow.__all__ == ["run_agent", "start_agent"]
    for name in duragent.workflow.__all__:
        assert f"`{name}`" in intro, name
        assert (getattr(duragent.workflow, name).__doc__ or "").strip(), name
