"""FactStore: the lesson's round trip, source forgetting, and refusal of protected keys."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from agentic.errors import ProtectedFactError
from agentic.memory import Fact, FactStore

FULLWIDTH_IS_ADMIN = "\uff49\uff53_\uff41\uff44\uff4d\uff49\uff4e"  # looks like "is_admin"


def test_lesson_example() -> None:
    facts = FactStore()
    facts.write(Fact(key="preferred_courier", value="BlueDart", source="ticket T-1"))
    restored = FactStore.load(facts.dump())
    assert restored.get("preferred_courier").value == "BlueDart"
    assert restored.get("preferred_courier").source == "ticket T-1"


def test_fact_is_frozen_and_accepts_positional_arguments() -> None:
    fact = Fact("k", "v", "src")
    assert fact == Fact(key="k", value="v", source="src")
    with pytest.raises(ValidationError):
        fact.value = "other"  # type: ignore[misc]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), [1, float("-inf")], (1, 2), object()])
def test_fact_refuses_values_that_are_not_json(value: object) -> None:
    with pytest.raises(ValidationError):
        Fact("k", value, "src")


def test_fact_refuses_blank_key_or_source() -> None:
    with pytest.raises(ValidationError):
        Fact("  ", 1, "src")
    with pytest.raises(ValidationError):
        Fact("k", 1, "")


def test_round_trip_keeps_non_string_values() -> None:
    values = {
        "int": 3,
        "float": 2.5,
        "bool": False,
        "null": None,
        "list": [1, "two", None, [3.0]],
        "dict": {"b": 1, "a": {"nested": True}},
        "unicode": "Zürich ✓",
    }
    store = FactStore(Fact(key, value, f"src-{key}") for key, value in values.items())
    restored = FactStore.load(store.dump())
    assert len(restored) == len(values)
    for key, value in values.items():
        fact = restored.get(key)
        assert fact is not None
        assert fact.value == value
        assert type(fact.value) is type(value)
        assert fact.source == f"src-{key}"
    assert restored.dump() == store.dump()


def test_write_overwrites_the_same_key() -> None:
    store = FactStore()
    store.write(Fact("courier", "BlueDart", "ticket T-1"))
    store.write(Fact("courier", "DTDC", "ticket T-2"))
    assert len(store) == 1
    assert store.get("courier") == Fact("courier", "DTDC", "ticket T-2")


def test_get_missing_key_returns_none() -> None:
    assert FactStore().get("nope") is None


def test_container_protocol() -> None:
    store = FactStore([Fact("b", 2, "s"), Fact("a", 1, "s")])
    assert "a" in store
    assert "c" not in store
    assert len(store) == 2
    assert store.keys() == ["a", "b"]
    assert [fact.key for fact in store] == ["a", "b"]


def test_forget_source_removes_only_that_source_and_counts() -> None:
    store = FactStore(
        [
            Fact("courier", "BlueDart", "doc-poisoned"),
            Fact("city", "Pune", "doc-poisoned"),
            Fact("language", "en", "ticket T-1"),
        ]
    )
    assert store.forget_source("doc-poisoned") == 2
    assert store.keys() == ["language"]
    assert store.get("language") == Fact("language", "en", "ticket T-1")
    assert store.forget_source("doc-poisoned") == 0
    assert store.forget_source("never-seen") == 0
    assert len(store) == 1


def test_protected_contains_the_dangerous_keys() -> None:
    assert {"is_admin", "price", "role", "permissions", "balance", "discount"} <= FactStore.PROTECTED


@pytest.mark.parametrize(
    "key",
    ["is_admin", "IS_ADMIN", " Is_Admin ", "\tprice\n", "Price", "ROLE", "permissions ", FULLWIDTH_IS_ADMIN],
)
def test_protected_keys_are_refused_and_store_is_unchanged(key: str) -> None:
    store = FactStore([Fact("courier", "BlueDart", "ticket T-1")])
    before = store.dump()
    with pytest.raises(ProtectedFactError, match="protected") as excinfo:
        store.write(Fact(key, True, "email from attacker"))
    assert "injection" in str(excinfo.value)
    assert store.dump() == before
    assert key not in store
    assert len(store) == 1


def test_unprotected_lookalike_keys_are_allowed() -> None:
    # Words that contain a protected word are other words. (A key that holds one as a word of its own, like
    # `price_currency`, is protected: tests/agentic/test_protected_keys.py.)
    store = FactStore()
    store.write(Fact("roleplay_style", "pirate", "chat"))
    store.write(Fact("badminton_club", "Pune", "chat"))
    store.write(Fact("preferred_courier", "BlueDart", "ticket T-1"))
    assert len(store) == 3


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        "not json",
        '{"version": 1, "facts": [}',
        '{"version":1,"facts":[{"key":"a","value":NaN,"source":"s"}]}',
    ],
)
def test_load_refuses_malformed_json(text: str) -> None:
    with pytest.raises(ValueError, match="not valid JSON"):
        FactStore.load(text)


@pytest.mark.parametrize(
    ("payload", "named"),
    [
        ([], "JSON object"),
        ("facts", "JSON object"),
        ({"facts": []}, "version"),
        ({"version": 2, "facts": []}, "version"),
        ({"version": 1}, "facts"),
        ({"version": 1, "facts": {"a": 1}}, "facts"),
        ({"version": 1, "facts": [5]}, "facts.0"),
        ({"version": 1, "facts": [{"key": "a", "value": 1}]}, "source"),
        ({"version": 1, "facts": [{"key": 1, "value": 1, "source": "s"}]}, "key"),
        ({"version": 1, "facts": [{"key": "a", "value": 1, "source": "s", "trusted": True}]}, "trusted"),
        ({"version": 1, "facts": [], "extra": 1}, "extra"),
    ],
)
def test_load_refuses_wrong_shape_naming_the_problem(payload: object, named: str) -> None:
    with pytest.raises(ValueError, match=named):
        FactStore.load(json.dumps(payload))


def test_load_refuses_duplicate_keys() -> None:
    fact = {"key": "a", "value": 1, "source": "s"}
    with pytest.raises(ValueError, match="duplicate"):
        FactStore.load(json.dumps({"version": 1, "facts": [fact, {**fact, "value": 2}]}))


@pytest.mark.parametrize("key", ["is_admin", " Discount", "BALANCE"])
def test_load_refuses_protected_keys_in_a_tampered_dump(key: str) -> None:
    dump = json.loads(FactStore([Fact("courier", "BlueDart", "ticket T-1")]).dump())
    dump["facts"].append({"key": key, "value": True, "source": "ticket T-1"})
    with pytest.raises(ProtectedFactError, match="protected"):
        FactStore.load(json.dumps(dump))


def test_dump_is_deterministic() -> None:
    facts = [
        Fact("zeta", {"y": 1, "x": [2, 1]}, "s1"),
        Fact("alpha", 1.5, "s2"),
        Fact("mid", "Zürich", "s3"),
    ]
    forward = FactStore(facts)
    backward = FactStore(reversed(facts))
    assert forward.dump() == backward.dump()
    assert forward.dump() == forward.dump()
    assert FactStore.load(forward.dump()).dump() == forward.dump()
    assert forward.dump().isascii()
    assert [fact["key"] for fact in json.loads(forward.dump())["facts"]] == ["alpha", "mid", "zeta"]


def test_empty_store_round_trips() -> None:
    restored = FactStore.load(FactStore().dump())
    assert len(restored) == 0
    assert restored.keys() == []
