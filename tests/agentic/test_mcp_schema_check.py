"""What a hostile MCP server can put in a tool's listing, played as data: a
catastrophic pattern is checked in linear time, a pattern only a backtracking engine takes is refused at
listing, schemas and arguments have named limits, and annotations that contradict take the safe side."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from typing import Any

import pytest

from agentic import ToolCall, ToolStatus
from agentic.mcp import MCPConfigError, MCPServer, schema_check
from agentic.mcp.schema_check import (
    MAX_ARGUMENT_BYTES,
    MAX_PATTERNS,
    MAX_PROPERTIES,
    MAX_SCHEMA_BYTES,
    argument_errors,
    schema_problem,
)
from agentic.mcp.toolset import checked_off_loop, specs_of

CATASTROPHIC = {"type": "object", "properties": {"q": {"type": "string", "pattern": "^(a+)+$"}}, "required": ["q"]}


def tool(name: str, schema: dict[str, Any] | None = None, **annotations: bool) -> dict[str, Any]:
    return {"name": name, "inputSchema": schema or {"type": "object"}, "annotations": annotations}


def test_a_catastrophic_pattern_is_checked_in_linear_time_and_still_means_what_it_says():
    started = time.perf_counter()
    for q in ("a" * 30 + "!", "a" * 100_000 + "!"):  # `re` needs about a minute for the first one
        assert argument_errors(CATASTROPHIC, {"q": q}) is not None
    assert argument_errors(CATASTROPHIC, {"q": "a" * 100_000}) is None
    assert time.perf_counter() - started < 2.0
    refused = argument_errors(CATASTROPHIC, {"q": "a" * 30 + "!"})
    assert refused == "q: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!' does not match '^(a+)+$'"


def test_the_call_is_refused_off_the_event_loop_as_invalid_arguments():
    [spec] = specs_of(MCPServer.stdio("evil", ["unused"]), [tool("lookup", CATASTROPHIC)]).values()

    async def meanwhile() -> tuple[object, int]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        ticker = asyncio.ensure_future(tick())
        result = await checked_off_loop(spec, ToolCall(id="1", name="evil__lookup", arguments={"q": "a" * 30 + "!"}))
        ticker.cancel()
        return result, ticks

    result, ticks = asyncio.run(meanwhile())
    assert result.status is ToolStatus.INVALID_ARGUMENTS  # an answer for the model: never retried
    assert ticks > 0  # the loop ran other tasks while the arguments were checked


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [(r"^(a)\1$", r"invalid escape sequence: \1"), ("^(?=a)a+$", "invalid perl operator: (?=")],
)
def test_a_pattern_the_linear_engine_refuses_is_refused_at_listing_naming_the_tool(pattern, reason):
    schema = {"type": "object", "properties": {"q": {"type": "string", "pattern": pattern}}}
    for where in (schema, {"type": "object", "patternProperties": {pattern: {"type": "string"}}}):
        with pytest.raises(MCPConfigError) as refused:
            specs_of(MCPServer.stdio("evil", ["unused"]), [tool("lookup", where)])
        message = str(refused.value)
        assert message.startswith("MCP server 'evil': tool 'lookup' cannot be used: its input schema has a pattern")
        assert reason in message and "(RE2)" in message and "leave it out with tools=[...]" in message
    # Left out, the rest of the server's tools are used.
    assert list(specs_of(MCPServer.stdio("evil", ["unused"], tools=["ok"]), [tool("lookup", schema), tool("ok")]))
    # A recorded spec (a run started before this check) still never reaches `re`: the call is refused.
    assert "RE2" in (argument_errors(schema, {"q": "a"}) or "")


def test_schemas_and_arguments_have_named_limits():
    huge = {"type": "object", "description": "x" * MAX_SCHEMA_BYTES}
    with pytest.raises(MCPConfigError, match=r"tool 'big' cannot be used: its input schema is 65,5\d\d bytes, over"):
        specs_of(MCPServer.stdio("evil", ["unused"]), [tool("big", huge)])
    problem = argument_errors({"type": "object"}, {"text": "x" * MAX_ARGUMENT_BYTES})
    assert problem == "they are 131,083 bytes, over the limit of 131,072 (MAX_ARGUMENT_BYTES)"


def test_unique_items_and_pattern_properties_are_checked_in_linear_time_with_jsonschemas_meaning():
    unique = {"type": "object", "properties": {"x": {"type": "array", "uniqueItems": True}}}
    many = [{"id": i} for i in range(8000)]  # jsonschema's own check compares every pair: a minute here
    started = time.perf_counter()
    assert argument_errors(unique, {"x": many}) is None
    assert time.perf_counter() - started < 2.0
    assert argument_errors(unique, {"x": [1, 1.0]}) is not None  # equal numbers
    assert argument_errors(unique, {"x": [1, True]}) is None  # a boolean is not a number
    assert argument_errors(unique, {"x": [{"a": 1, "b": 2}, {"b": 2, "a": 1}]}) is not None
    keyed = {"type": "object", "patternProperties": {"^(a+)+$": {"type": "integer"}}, "additionalProperties": False}
    assert argument_errors(keyed, {"aaa": 1}) is None
    wrong = argument_errors(keyed, {"a" * 30 + "!": 1, "aa": "x"})
    assert wrong is not None and "does not match any of the regexes: '^(a+)+$'" in wrong and "aa: 'x'" in wrong
    mixed = {"type": "object", "patternProperties": {"^a": {}}, "unevaluatedProperties": False}
    with pytest.raises(MCPConfigError, match="patternProperties with unevaluatedProperties"):
        specs_of(MCPServer.stdio("evil", ["unused"]), [tool("mixed", mixed)])


def test_no_dialect_named_in_the_schema_brings_backtracking_back():
    """jsonschema checks a subschema that names its dialect (`$schema`) with its stock validator, on `re`:
    nested, that is refused; at the root it picks the dialect, and a `$ref` back to the root stays on RE2."""
    draft7 = "http://json-schema.org/draft-07/schema#"
    nested = {"type": "object", "properties": {"q": {"$schema": draft7, "pattern": "^(a+)+$"}}}
    with pytest.raises(MCPConfigError, match=r"names a dialect of its own \(\$schema\)"):
        specs_of(MCPServer.stdio("evil", ["unused"]), [tool("lookup", nested)])
    recursive = {"$schema": draft7, "properties": {"q": {"pattern": "^(a+)+$"}, "child": {"$ref": "#"}}}
    started = time.perf_counter()
    problems = argument_errors(recursive, {"child": {"child": {"q": "a" * 30 + "!"}}})
    assert time.perf_counter() - started < 10.0  # on `re`, about a minute; generous for a loaded machine
    assert problems is not None and problems.startswith("child.child.q: ")


def test_a_schema_that_takes_exponential_time_to_check_is_cut_off_at_the_deadline(monkeypatch):
    # x_n = anyOf(x_n-1, x_n-1): a failing value is tried against 2^40 branches, in a 2 KB schema.
    defs: dict[str, Any] = {"x0": {"type": "integer"}}
    for n in range(1, 41):
        defs[f"x{n}"] = {"anyOf": [{"$ref": f"#/$defs/x{n - 1}"}, {"$ref": f"#/$defs/x{n - 1}"}]}
    schema = {"type": "object", "properties": {"q": {"$ref": "#/$defs/x40"}}, "$defs": defs}
    monkeypatch.setattr(schema_check, "CHECK_SECONDS", 0.3)
    started = time.perf_counter()
    assert (
        argument_errors(schema, {"q": "no"})
        == "checking them against the server's schema took over 0.3s (CHECK_SECONDS)"
    )
    # The check stopped near its deadline (unbounded, 2^40 branches never end); generous for a loaded machine.
    assert time.perf_counter() - started < 10 * 0.3


def test_a_schema_that_cannot_be_checked_is_a_clear_refusal_never_an_exception():
    assert (
        argument_errors({"allOf": [{"$ref": "#"}]}, {"x": 1})
        == "the server's input schema refers to itself without end"
    )
    unresolvable = argument_errors({"$ref": "https://example.invalid/schema"}, {"x": 1})
    assert unresolvable is not None and unresolvable.startswith("the server's input schema cannot be checked (")


def test_contradictory_hints_take_the_safe_side():
    listed = [tool("wipe", readOnlyHint=True, destructiveHint=True), tool("read", readOnlyHint=True)]
    specs = specs_of(MCPServer.stdio("evil", ["unused"]), listed)
    flags = {name: (s.mutating, s.requires_confirmation) for name, s in specs.items()}
    assert flags == {"evil__wipe": (True, True), "evil__read": (False, False)}


def test_with_a_trusted_list_every_other_tool_waits_for_approval_whatever_it_claims():
    listed = [tool("read", readOnlyHint=True), tool("export", readOnlyHint=True), tool("append", destructiveHint=False)]
    trusting = MCPServer.stdio("evil", ["unused"], trusted_read_only=["read"])
    flags = {name: (s.mutating, s.requires_confirmation) for name, s in specs_of(trusting, listed).items()}
    assert flags == {"evil__read": (False, False), "evil__export": (True, True), "evil__append": (True, True)}
    # An explicit rule gates more, never less: the listed tool too, when it says so.
    strict = MCPServer.stdio("evil", ["unused"], trusted_read_only=["read"], requires_confirmation=["read"])
    assert all(s.requires_confirmation for s in specs_of(strict, listed).values())
    with pytest.raises(MCPConfigError, match=re.escape("requires_confirmation=False contradicts trusted_read_only")):
        MCPServer.stdio("evil", ["unused"], trusted_read_only=["read"], requires_confirmation=False)
    with pytest.raises(MCPConfigError, match="trusted_read_only takes a list of tool names"):
        MCPServer.stdio("evil", ["unused"], trusted_read_only="read")  # type: ignore[arg-type]


def _patterned(patterns: int) -> dict[str, Any]:
    """Review 4, U2's shape: no additional properties, and `patterns` patternProperties."""
    return {
        "type": "object",
        "additionalProperties": False,
        "patternProperties": {f"^z{i}$": {} for i in range(patterns)},
    }


def test_a_listing_over_the_caps_on_patterns_or_properties_is_refused_with_the_cap_named():
    assert schema_problem(_patterned(MAX_PATTERNS)) is None
    assert schema_problem(_patterned(3000)) == f"its input schema has over {MAX_PATTERNS} patterns (MAX_PATTERNS)"
    nested = {
        "type": "object",
        "properties": {"a": _patterned(MAX_PATTERNS // 2), "b": _patterned(MAX_PATTERNS // 2 + 1)},
    }
    assert schema_problem(nested) == f"its input schema has over {MAX_PATTERNS} patterns (MAX_PATTERNS)"
    named = {"type": "object", "properties": {f"p{i}": {} for i in range(MAX_PROPERTIES + 1)}}
    assert schema_problem(named) == f"its input schema names over {MAX_PROPERTIES:,} properties (MAX_PROPERTIES)"
    with pytest.raises(MCPConfigError, match="tool 'bulk' cannot be used: its input schema has over 256 patterns"):
        specs_of(MCPServer.stdio("evil", ["unused"]), [tool("bulk", _patterned(3000))])


def test_a_check_past_its_deadline_stops_in_its_loops_not_minutes_later(monkeypatch):
    """patterns times keys searches: the deadline is checked between them, so the thread that was refused ends."""
    monkeypatch.setattr(schema_check, "CHECK_SECONDS", 0.2)
    finished: list[str | None] = []
    many_keys = {f"k{i}": 0 for i in range(8000)}  # under MAX_ARGUMENT_BYTES
    checking = threading.Thread(target=lambda: finished.append(argument_errors(_patterned(MAX_PATTERNS), many_keys)))
    checking.start()
    checking.join(60)  # unbounded, the check would end with the wrong answer: the keys that match no pattern
    assert finished == ["checking them against the server's schema took over 0.2s (CHECK_SECONDS)"]


def test_a_tool_whose_check_still_runs_is_not_checked_again_and_the_checks_have_their_own_threads():
    [spec] = specs_of(MCPServer.stdio("heavy", ["unused"]), [tool("bulk", _patterned(MAX_PATTERNS))]).values()
    calls = [ToolCall(id=str(n), name="heavy__bulk", arguments={f"r{n}-{i}": 0 for i in range(2500)}) for n in range(6)]

    async def six_at_once() -> tuple[list[Any], set[str]]:
        results = await asyncio.gather(*(checked_off_loop(spec, call) for call in calls))
        return list(results), {t.name.rsplit("_", 1)[0] for t in threading.enumerate() if "argument-check" in t.name}

    results, pools = asyncio.run(six_at_once())
    assert [r.status for r in results] == [ToolStatus.INVALID_ARGUMENTS] * 6
    unchecked = [r for r in results if "a check of this tool's arguments" in r.content and "still running" in r.content]
    assert len(unchecked) == 5  # the first call's check ran; the other five did not queue up behind it
    assert pools == {"mcp-argument-check"}  # not the loop's default executor


def test_a_nested_schema_naming_even_the_roots_own_dialect_is_refused():
    """jsonschema checks any subschema carrying `$schema` with its stock validator, on `re`: the same dialect
    as the root's too — and that brings the catastrophic pattern back."""
    draft = "https://json-schema.org/draft/2020-12/schema"
    nested = {"$schema": draft, "type": "string", "pattern": "^(a+)+$"}
    schema = {"$schema": draft, "type": "object", "properties": {"q": nested}}
    assert schema_problem(schema) == (
        "a subschema of its input schema names a dialect of its own ($schema): not checkable in bounded time"
    )


def test_pattern_is_an_unanchored_search_as_json_schema_says():
    schema = {"type": "object", "properties": {"order": {"type": "string", "pattern": "[0-9]{4}"}}}
    assert argument_errors(schema, {"order": "order 4471"}) is None
    assert argument_errors(schema, {"order": "order 44"}) == "order: 'order 44' does not match '[0-9]{4}'"
    keyed = {"type": "object", "patternProperties": {"[0-9]{4}": {"type": "integer"}}, "additionalProperties": False}
    assert argument_errors(keyed, {"id-4471-x": 1}) is None
