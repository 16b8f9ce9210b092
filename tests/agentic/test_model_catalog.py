"""The model catalog keeps a bounded number of models made from a prefix: a run chooses the name,
so whoever may start runs could otherwise make the worker build and keep one client per name they invent."""

from __future__ import annotations

import gc
import weakref

import pytest

from agentic import FakeModel
from agentic.models.catalog import PREFIX_CACHE_SIZE, ModelCatalog, UnknownModel


def test_a_flood_of_invented_model_names_keeps_a_bounded_number_of_models_alive() -> None:
    alive: weakref.WeakSet[FakeModel] = weakref.WeakSet()
    made: list[str] = []

    def factory(name: str) -> FakeModel:
        made.append(name)
        model = FakeModel(["ok"], name=name)
        alive.add(model)
        return model

    declared = FakeModel(["ok"], name="declared")
    catalog = ModelCatalog({"local": declared}, prefixes={"openai:": factory})
    for i in range(2000):  # what runs naming `openai:m0` ... `openai:m1999` make a worker do
        assert catalog.resolve(f"openai:m{i}").name == f"m{i}"
    gc.collect()
    assert len(made) == 2000
    assert len(alive) <= PREFIX_CACHE_SIZE, f"{len(alive)} models still held"
    assert catalog.resolve("local") is declared, "a declared model is never dropped"


def test_names_in_use_are_reused_and_the_least_recent_one_is_made_again() -> None:
    made: list[str] = []

    def factory(name: str) -> FakeModel:
        made.append(name)
        return FakeModel(["ok"], name=name)

    catalog = ModelCatalog(prefixes={"openai:": factory}, prefix_cache_size=2)
    first = catalog.resolve("openai:a")
    catalog.resolve("openai:b")
    assert catalog.resolve("openai:a") is first  # used again: now the most recent
    catalog.resolve("openai:c")  # drops b, the least recently used
    assert catalog.resolve("openai:a") is first
    catalog.resolve("openai:b")
    assert made == ["a", "b", "c", "b"]


def test_bad_names_and_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ModelCatalog(prefix_cache_size=0)
    with pytest.raises(UnknownModel, match="not declared"):
        ModelCatalog(prefixes={"openai:": lambda name: FakeModel(["ok"])}).resolve("openai:")
