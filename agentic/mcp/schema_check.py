"""A tool's arguments checked against the input schema its MCP server gave, in bounded time, whatever the
server put in that schema.

The schema is the server's: a hostile one lists `"pattern": "^(a+)+$"`, and Python's backtracking `re` takes
minutes over 30 characters — holding the GIL, so a thread does not help: the whole worker freezes. So:

- every regex of a schema (`pattern`, `patternProperties`) runs on RE2, a linear-time engine; a pattern RE2
  cannot take (a backreference, a lookaround) is refused with its reason, never run on `re` instead;
- `uniqueItems` is checked in linear time (jsonschema compares every pair: 20 KB of objects took seconds);
- each keyword checks a deadline (`CHECK_SECONDS`), and so does every step of the loops over patterns and
  keys inside our own keywords, so no combination of keywords runs on — a thread that gave up is a thread
  that stops, not one that keeps checking for minutes after the call was refused;
- a schema over `MAX_SCHEMA_BYTES`, or with more than `MAX_PATTERNS` patterns or `MAX_PROPERTIES` named
  properties, is refused when the tools are listed, arguments over `MAX_ARGUMENT_BYTES` when the call is made
  — before any of the above runs.

`schema_problem` is the listing's check; `argument_errors` the call's (a runner calls it in a thread, so the
event loop that heartbeats keeps running while it works).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

from agentic.extras import require_extra
from agentic.messages import canonical_json

MAX_SCHEMA_BYTES = 64 * 1024
"""A tool's input schema, as canonical JSON: the largest a listing may record (it is in every run's history)."""
MAX_ARGUMENT_BYTES = 128 * 1024
"""A call's arguments, as canonical JSON: larger ones are refused before they are checked or sent."""
CHECK_SECONDS = 2.0
"""How long checking one call's arguments may take; past it the call is refused (a normal check takes ms)."""
MAX_PATTERNS = 256
"""Regexes in one schema (`pattern` values and `patternProperties` keys): each key of an object is searched
with every pattern of its schema, so the patterns times the keys is the work of one check."""
MAX_PROPERTIES = 1024
"""Named properties in one schema, at every depth (`properties`, `dependentRequired`... keys): a real tool
has tens."""

_DEADLINE: ContextVar[float] = ContextVar("mcp_schema_check_deadline", default=float("inf"))


class _Overtime(Exception):
    """The deadline passed in the middle of a check."""


def schema_problem(schema: Mapping[str, Any]) -> str | None:
    """Why a listed input schema cannot be checked in bounded time (too large, a pattern RE2 cannot take, a
    combination only backtracking `re` evaluates), or None."""
    require_extra("mcp")  # RE2 and jsonschema: one line naming the extra where they are missing
    size = len(canonical_json(schema).encode())
    if size > MAX_SCHEMA_BYTES:
        return f"its input schema is {size:,} bytes, over the limit of {MAX_SCHEMA_BYTES:,} (MAX_SCHEMA_BYTES)"
    keywords: set[str] = set()
    counted_patterns = counted_properties = 0
    for keyword, value in _keywords(schema):
        keywords.add(keyword)
        if keyword == "$schema":
            # jsonschema checks a subschema that names its own dialect with its stock validator, on `re`.
            return "a subschema of its input schema names a dialect of its own ($schema): not checkable in bounded time"
        if keyword in _NAMING_PROPERTIES and isinstance(value, Mapping):
            counted_properties += len(value)
            if counted_properties > MAX_PROPERTIES:
                return f"its input schema names over {MAX_PROPERTIES:,} properties (MAX_PROPERTIES)"
        if keyword == "pattern":
            patterns = [value]
        elif keyword == "patternProperties" and isinstance(value, Mapping):
            patterns = list(value)
        else:
            continue
        counted_patterns += len(patterns)
        if counted_patterns > MAX_PATTERNS:
            return f"its input schema has over {MAX_PATTERNS:,} patterns (MAX_PATTERNS)"
        for pattern in patterns:
            if isinstance(pattern, str) and (why := _re2_refuses(pattern)) is not None:
                return (
                    f"its input schema has a pattern {pattern[:80]!r} that the linear-time engine (RE2) refuses: {why}"
                )
    if {"patternProperties", "unevaluatedProperties"} <= keywords:
        # jsonschema evaluates `unevaluatedProperties` through its own `re.search` on `patternProperties`.
        return "its input schema combines patternProperties with unevaluatedProperties: not checkable in bounded time"
    return None


# Keywords whose value is an object keyed by property names.
_NAMING_PROPERTIES = frozenset({"properties", "dependentRequired", "dependentSchemas", "dependencies"})


def argument_errors(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> str | None:
    """Why `arguments` do not fit the tool's input schema (the first few problems), or None. Blocking, but
    bounded: call it off the event loop."""
    # Imported here, where an MCP tool's arguments are checked: jsonschema takes a tenth of a second to import,
    # which every command line and worker would pay at its start whether it serves MCP tools or not.
    require_extra("mcp")
    from jsonschema import SchemaError

    size = len(canonical_json(arguments).encode())
    if size > MAX_ARGUMENT_BYTES:
        return f"they are {size:,} bytes, over the limit of {MAX_ARGUMENT_BYTES:,} (MAX_ARGUMENT_BYTES)"
    if (problem := schema_problem(schema)) is not None:
        return f"the server's schema cannot be checked: {problem}"
    deadline = _DEADLINE.set(time.monotonic() + CHECK_SECONDS)
    try:
        validator = _bounded_validator(schema)
        problems = sorted(validator.iter_errors(dict(arguments)), key=lambda e: list(e.absolute_path))
    except SchemaError as exc:
        return f"the server's input schema is invalid ({exc.message})"
    except _Overtime:
        return f"checking them against the server's schema took over {CHECK_SECONDS:g}s (CHECK_SECONDS)"
    except RecursionError:
        return "the server's input schema refers to itself without end"
    except Exception as exc:  # an unresolvable $ref, a keyword given a value of the wrong type...
        return f"the server's input schema cannot be checked ({type(exc).__name__}: {str(exc)[:200]})"
    finally:
        _DEADLINE.reset(deadline)
    if not problems:
        return None
    described = [f"{'.'.join(map(str, e.absolute_path)) or 'arguments'}: {_short(e.message)}" for e in problems[:3]]
    more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
    return "; ".join(described) + more


def _short(message: str, limit: int = 300) -> str:
    """jsonschema quotes the argument in its messages: up to `MAX_ARGUMENT_BYTES` of it is no help to a model."""
    return message if len(message) <= limit else f"{message[:limit]}… ({len(message):,} characters)"


def _bounded_validator(schema: Mapping[str, Any]) -> Any:
    """jsonschema's validator for the schema's draft, with its regex keywords on RE2, `uniqueItems` linear,
    and every keyword checking this thread's deadline first."""
    from jsonschema.validators import validator_for

    # The root's `$schema` picks the dialect, then goes: jsonschema picks a validator for every subschema it
    # enters by its `$schema`, our class only where there is none (nested ones are refused: `schema_problem`).
    document = {keyword: value for keyword, value in schema.items() if keyword != "$schema"}
    return _bounded_class(validator_for(schema))(document)


@functools.cache
def _bounded_class(base: Any) -> Any:
    from jsonschema.validators import extend

    ours: dict[str, Callable[..., Any]] = {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
        "uniqueItems": _unique_items,
    }
    checks = {keyword: ours.get(keyword, check) for keyword, check in base.VALIDATORS.items()}
    return extend(base, {keyword: _in_time(check) for keyword, check in checks.items()})


def _in_time(check: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(check)
    def checked(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        _on_time()
        return check(validator, value, instance, schema)

    return checked


def _on_time() -> None:
    """Raise `_Overtime` once this thread's deadline has passed: called by every keyword, and at every step
    of the loops over keys and patterns (one keyword's loop is patterns times keys long)."""
    if time.monotonic() > _DEADLINE.get():
        raise _Overtime


# -- jsonschema's regex keywords, on RE2 (their messages as jsonschema words them) -------------------


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            _on_time()
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, allowed: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema._utils import extras_msg
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = {k for k in instance if k not in properties and not _matches_any(patterns, k)}
    if validator.is_type(allowed, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], allowed, path=extra)
    elif not allowed and extras:
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(each) for each in sorted(extras))
            listed = ", ".join(repr(each) for each in sorted(patterns))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {listed}")
        else:
            error = "Additional properties are not allowed (%s %s unexpected)"
            yield ValidationError(error % extras_msg(sorted(extras, key=str)))


def _matches_any(patterns: list[str], key: str) -> bool:
    for pattern in patterns:
        _on_time()
        if _search(pattern, key):
            return True
    return False


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if unique and validator.is_type(instance, "array"):
        seen = set()
        for item in instance:
            _on_time()
            identity = _identity(item)
            if identity in seen:
                yield ValidationError(f"{instance!r} has non-unique elements")
                return
            seen.add(identity)


def _identity(value: Any) -> Any:
    """A hashable form that is equal exactly when jsonschema's `equal` says so: booleans apart from numbers,
    1 the same as 1.0, objects whatever their key order."""
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, list | tuple):
        return ("array", tuple(_identity(v) for v in value))
    if isinstance(value, Mapping):
        return ("object", frozenset((k, _identity(v)) for k, v in value.items()))
    return ("other", repr(value))


# -- RE2 -------------------------------------------------------------------------------------------------


def _search(pattern: str, text: str) -> bool:
    return _compiled(pattern).search(text) is not None


@functools.lru_cache(maxsize=2 * MAX_PATTERNS)  # one schema's patterns and then some: a check never recompiles
def _compiled(pattern: str) -> Any:
    import re2

    options = re2.Options()
    options.log_errors = False  # a refused pattern is reported by us, once, not logged to stderr by RE2
    return re2.compile(pattern, options)


def _re2_refuses(pattern: str) -> str | None:
    import re2

    try:
        _compiled(pattern)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        return reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
    return None


def _keywords(schema: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """Every (keyword, value) in the schema at any depth, but the root's own `$schema` (iteratively: a deep
    schema is not a deep stack)."""
    yield from ((k, v) for k, v in schema.items() if k != "$schema")
    stack = [v for k, v in schema.items() if k != "$schema"]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            for key, value in node.items():
                yield str(key), value
                stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)
