"""`ModelCatalog`: the models a worker declares, by name. A run may choose one by name; it never supplies
an endpoint. Endpoints and API keys are the worker's configuration, so a key can only ever be sent where
the operator configured it to go — never to a URL somebody put in a workflow input.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping

from agentic.errors import AgenticError
from agentic.models.base import Model

ModelFactory = Callable[[str], Model]

# How many models made from a prefix (`openai:` + any name) are kept. A run chooses the name, so without a
# bound every distinct name would add a client for good (about 0.8 MB each); past it, the model
# used least recently is dropped and made again if a run names it later.
PREFIX_CACHE_SIZE = 32


class UnknownModel(AgenticError, LookupError):
    """A run named a model this worker does not declare: bad input, never worth retrying."""


def undeclared(name: str, models: Iterable[str], prefixes: Iterable[str]) -> str | None:
    """Why `name` is not a model of a catalog declaring `models` and `prefixes` (None: it is one) — the catalog's
    own rule, also applied where only the names are known (a conversation refusing a message that names a model
    its worker does not declare, from the names the worker recorded)."""
    models, prefixes = set(models), sorted(prefixes)
    if name in models or any(name.startswith(p) and len(name) > len(p) for p in prefixes):
        return None
    declared = ", ".join([*sorted(models), *(f"{p}<model>" for p in prefixes)]) or "none"
    return f"model {name!r} is not declared by this worker; it declares: {declared}"


class ModelCatalog:
    """Named models, plus prefixes that make a family of names (`openai:` + any model name).

    A declared model is made once and reused: models are thread-safe clients. A model made from a prefix is
    reused while it is among the `prefix_cache_size` used most recently.
    """

    def __init__(
        self,
        models: Mapping[str, Model] | None = None,
        *,
        prefixes: Mapping[str, ModelFactory] | None = None,
        prefix_cache_size: int = PREFIX_CACHE_SIZE,
    ) -> None:
        if prefix_cache_size < 1:
            raise ValueError("prefix_cache_size must be at least 1")
        self._models: dict[str, Model] = dict(models or {})
        self._lazy: dict[str, Callable[[], Model]] = {}
        self._prefixes: dict[str, ModelFactory] = dict(prefixes or {})
        self._made: OrderedDict[str, Model] = OrderedDict()  # from a prefix, least recently used first
        self.prefix_cache_size = prefix_cache_size
        self._lock = threading.Lock()  # activities resolve models from several threads at once

    def add(self, name: str, model: Model | Callable[[], Model]) -> ModelCatalog:
        """Declare `name`: a model, or a function making it on first use (clients can be slow to import)."""
        if isinstance(model, Model):
            self._models[name] = model
        else:
            self._lazy[name] = model
        return self

    def add_prefix(self, prefix: str, factory: ModelFactory) -> ModelCatalog:
        """Declare every name `prefix` + model (e.g. `openai:` + any OpenAI model name)."""
        self._prefixes[prefix] = factory
        return self

    def names(self) -> list[str]:
        return sorted({*self._models, *self._lazy}) + [f"{prefix}<model>" for prefix in sorted(self._prefixes)]

    def declared(self) -> tuple[list[str], list[str]]:
        """The names declared one by one, and the prefixes (`undeclared` tells whether a name is among them)."""
        return sorted({*self._models, *self._lazy}), sorted(self._prefixes)

    def resolve(self, name: str) -> Model:
        with self._lock:
            return self._resolve(name)

    def _resolve(self, name: str) -> Model:
        model = self._models.get(name)
        if model is not None:
            return model
        if name in self._lazy:
            model = self._models[name] = self._lazy.pop(name)()
            return model
        if (made := self._made.get(name)) is not None:
            self._made.move_to_end(name)
            return made
        for prefix, factory in self._prefixes.items():
            if name.startswith(prefix) and len(name) > len(prefix):
                model = self._made[name] = factory(name[len(prefix) :])
                while len(self._made) > self.prefix_cache_size:
                    self._made.popitem(last=False)
                return model
        raise UnknownModel(undeclared(name, *self.declared()))
