"""Durable agent memory: `Fact`s that outlive a run, kept in a `FactStore` that dumps to JSON.

Anything the model can write here it can read back in every later run, so a prompt injection that
lands a fact is an injection that persists. Hence two defences: every fact names its `source` (so a
poisoned document can be forgotten wholesale), and keys that grant power (`PROTECTED`) are refused
on write and on load — however they are spelled: a key is compared as its words, so `is-admin`,
`isAdmin`, `IS ADMIN`, `user_role`, `discount_percent`, `refund_limit_usd`, `ro\u200ble` and `Role\u00ad` are
all protected. A model names keys; a few false refusals cost less than one persisted grant.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterable, Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError, field_validator

from agentic.errors import ProtectedFactError

_DUMP_VERSION = 1
_UNSET: Any = object()


class Fact(BaseModel):
    """One remembered value, with where it came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    value: JsonValue
    source: str

    def __init__(self, key: str = _UNSET, value: JsonValue = _UNSET, source: str = _UNSET, **data: Any) -> None:
        # Pydantic routes validation (including `load`) through this __init__, so an argument that was
        # not given is left out, to be reported as a missing field rather than as a TypeError.
        given = {name: arg for name, arg in (("key", key), ("value", value), ("source", source)) if arg is not _UNSET}
        super().__init__(**given, **data)

    @field_validator("key", "source")
    @classmethod
    def _not_blank(cls, text: str) -> str:
        if not text.strip():
            raise ValueError("must not be blank")
        return text

    @field_validator("value")
    @classmethod
    def _finite(cls, value: JsonValue) -> JsonValue:
        # NaN and infinities are accepted by JsonValue but are not JSON: a store holding one could
        # not be dumped, so refuse them here rather than at checkpoint time.
        if not _is_finite(value):
            raise ValueError("must be valid JSON (no NaN or infinity)")
        return value


class _Dump(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    version: Literal[1]
    facts: list[Fact]


class FactStore:
    """Facts by key; `dump`/`load` round-trip them through deterministic JSON."""

    PROTECTED: frozenset[str] = frozenset(
        {
            "is_admin",
            "admin",
            "administrator",
            "superuser",
            "role",
            "roles",
            "permissions",
            "privileges",
            "entitlements",
            "scopes",
            "access_level",
            "price",
            "pricing",
            "balance",
            "discount",
            "credit_limit",
            "refund_limit",
            "spending_limit",
        }
    )

    def __init__(self, facts: Iterable[Fact] = ()) -> None:
        self._facts: dict[str, Fact] = {}
        for fact in facts:
            self.write(fact)

    @classmethod
    def is_protected(cls, key: str) -> bool:
        """Whether `key` names a protected fact, however it is cased, padded, separated or Unicode-spelled:
        when any run of its words, joined, is a protected key's words joined (`user_role` holds `role`,
        `isAdmin` is `is admin`, `isadmin` is `isadmin`), plurals folded."""
        words = key_words(key)
        terms = _terms(cls.PROTECTED)
        longest = max((len(term) for term in terms), default=0)
        for start in range(len(words)):
            joined = ""
            for word in words[start:]:
                joined += word
                if joined in terms:
                    return True
                if len(joined) > longest:
                    break
        return False

    @classmethod
    def refuse_protected(cls, fact: Fact) -> None:
        """ProtectedFactError when `fact`'s key is protected: every store (this one, the durable one) refuses
        with these words."""
        if cls.is_protected(fact.key):
            raise ProtectedFactError(
                f"fact key {fact.key!r} is protected: a durable store the model can influence is one a "
                "prompt injection can influence permanently, so this value must come from the system of "
                f"record, never from memory (source {fact.source!r})"
            )

    def write(self, fact: Fact) -> None:
        """Store `fact`, replacing any fact with the same key."""
        self.refuse_protected(fact)
        self._facts[fact.key] = fact

    def get(self, key: str) -> Fact | None:
        return self._facts.get(key)

    def forget_source(self, source: str) -> int:
        """Remove every fact from `source` (e.g. a document found to be poisoned); return how many."""
        doomed = [key for key, fact in self._facts.items() if fact.source == source]
        for key in doomed:
            del self._facts[key]
        return len(doomed)

    def keys(self) -> list[str]:
        return sorted(self._facts)

    def __iter__(self) -> Iterator[Fact]:
        return (self._facts[key] for key in self.keys())

    def __len__(self) -> int:
        return len(self._facts)

    def __contains__(self, key: object) -> bool:
        return key in self._facts

    def __repr__(self) -> str:
        return f"FactStore({len(self)} facts)"

    def dump(self) -> str:
        """The store as JSON: sorted keys and ASCII-only, so equal stores dump to equal text."""
        payload = {"version": _DUMP_VERSION, "facts": [fact.model_dump() for fact in self]}
        return json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False)

    @classmethod
    def load(cls, text: str | bytes) -> FactStore:
        """Rebuild a store from `dump` output; ValueError if it is not, ProtectedFactError if tampered."""
        try:
            raw = json.loads(text, parse_constant=_reject_constant)
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, and NaN/Infinity
            raise ValueError(f"FactStore.load: not valid JSON: {exc}") from exc
        if not isinstance(raw, dict):
            raise ValueError(f"FactStore.load: expected a JSON object, got {type(raw).__name__}")
        try:
            dump = _Dump.model_validate(raw)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in error['loc']) or '<root>'}: {error['msg']}" for error in exc.errors()
            )
            raise ValueError(f"FactStore.load: wrong shape: {problems}") from None
        seen: set[str] = set()
        for fact in dump.facts:
            # A dump never repeats a key, so a repeat means hand-editing; refusing beats guessing.
            if fact.key in seen:
                raise ValueError(f"FactStore.load: duplicate fact key {fact.key!r}")
            seen.add(fact.key)
        return cls(dump.facts)


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[\W_]+")
_INVISIBLE = {"Cf", "Cc", "Mn", "Me", "Mc"}  # zero-width and bidi marks, soft hyphen, controls, combining marks


def key_words(key: str) -> list[str]:
    """A fact key as the words it reads as: look-alikes folded (NFKC), invisible characters and accents
    dropped, split at separators and camelCase, casefolded, a plural `s` dropped."""
    text = unicodedata.normalize("NFKC", key)
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if unicodedata.category(c) not in _INVISIBLE)
    text = _CAMEL.sub(" ", text)
    return [_singular(word) for word in _SEPARATORS.split(text.casefold()) if word]


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _terms(keys: frozenset[str]) -> frozenset[str]:
    return frozenset("".join(key_words(key)) for key in keys)


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def _is_finite(value: JsonValue) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_is_finite(item) for item in value)
    if isinstance(value, dict):
        return all(_is_finite(item) for item in value.values())
    return True
