"""Every name `duragent` exports explains itself in `help()`: a docstring of its own, not one inherited from
pydantic's BaseModel, temporalio's SimplePlugin, an Enum or object — and so does each public method of the
classes a program drives runs with."""

from __future__ import annotations

import enum
import inspect

import pytest

import duragent


def own_doc(obj: object) -> str | None:
    """The docstring `obj` states itself; None when it has none, or repeats a base class's."""
    if isinstance(obj, type):
        doc = obj.__dict__.get("__doc__")
        inherited = {getattr(base, "__doc__", None) for base in obj.__mro__[1:]}
        return doc if doc and doc not in inherited and doc != enum.Enum.__doc__ else None
    return inspect.getdoc(obj)


@pytest.mark.parametrize("name", duragent.__all__)
def test_each_public_name_has_a_docstring_of_its_own(name: str) -> None:
    doc = own_doc(getattr(duragent, name))
    assert doc and len(doc.split()) >= 5, f"duragent.{name} has no docstring of its own"


@pytest.mark.parametrize("cls", [duragent.AgentClient, duragent.RunHandle])
def test_each_public_method_of_the_client_has_a_docstring(cls: type) -> None:
    undocumented = [
        name
        for name, member in vars(cls).items()
        if not name.startswith("_") and callable(member) and not inspect.getdoc(member)
    ]
    assert undocumented == []


def test_help_shows_the_plugins_own_text_and_the_approvals_not_the_frameworks() -> None:
    assert "durable agents" in inspect.getdoc(duragent.DurableAgentsPlugin)  # type: ignore[operator]
    assert "limited set of configurations" not in inspect.getdoc(duragent.DurableAgentsPlugin)  # type: ignore[operator]
    assert "__pydantic_fields__" not in inspect.getdoc(duragent.PendingApproval)  # type: ignore[operator]
    assert "arguments_hash" in inspect.getdoc(duragent.RunHandle.approve)  # type: ignore[operator]
