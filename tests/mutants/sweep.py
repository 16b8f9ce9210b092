"""`python -m tests.mutants sweep`: every single-token mutant of the core rules — do the tests notice?

Each mutant changes one operator or constant of one line of a target file (a comparison flipped or loosened,
`and`/`or` swapped, a `not` dropped, `True`/`False` swapped, `+`/`-` swapped, an integer moved by one, a
reversal `[::-1]` dropped, a `raise` or `return` guard turned into `pass`). It runs that file's targeted
tests against the mutant, in a scratch copy of the repository (tests/mutants/scratch.py), one mutant at a
time. A mutant is *killed* when the tests fail (or time out), and *survives* when they pass: a change to a
rule nobody would notice.

    python -m tests.mutants sweep                       # every target; prints each survivor and the score
    python -m tests.mutants sweep --only agentic/loop.py --limit 20
    python -m tests.mutants sweep --json results/mutation.json
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from tests.mutants.scratch import ROOT, copy_repository, preload, run_tests

# Each target and the tests that state its rules (fast ones: the whole set runs once per mutant).
TARGETS: dict[str, list[str]] = {
    "agentic/loop.py": [
        "tests/agentic/test_loop.py",
        "tests/agentic/test_agent.py",
        "tests/agentic/test_properties_runs.py::test_in_process_runs_keep_the_invariants",
        "tests/agentic/test_properties_runs.py::test_a_reply_of_10000_tool_calls_is_refused_whole_in_every_runner",
        "tests/agentic/test_loop_details.py",
        "tests/temporal/test_threats.py::test_the_per_reply_limits_are_the_documented_ones",
        "tests/temporal/test_threats.py::test_a_reply_at_the_call_limit_is_admitted_and_one_more_is_refused",
        "tests/temporal/test_threats.py::test_megabytes_of_arguments_are_refused_and_cut_short",
        "tests/temporal/test_threats.py::test_ids_and_names_count_towards_the_byte_limit",
        "tests/temporal/test_threats.py::test_a_refused_reply_keeps_ids_up_to_200_characters_and_shortens_longer_ones_uniquely",
        "tests/temporal/test_threats.py::test_a_reply_from_the_wrong_role_is_recorded_as_the_assistants",
    ],
    "agentic/budget.py": [
        "tests/agentic/test_loop.py",
        "tests/agentic/test_agent.py",
        "tests/agentic/test_loop_details.py",
    ],
    "agentic/approvals.py": [
        "tests/agentic/test_properties_approvals.py::test_at_most_one_outcome_per_call_and_only_from_a_matching_timely_decision",
        "tests/temporal/test_mutation_classes.py::test_the_expiry_instant_is_the_deadline_itself",
        "tests/temporal/test_signed_decisions.py::test_only_a_decision_signed_by_the_named_approver_counts",
        "tests/temporal/test_signed_decisions.py::test_without_keys_nothing_changes",
        "tests/agentic/test_approval_rules.py",
        "tests/agentic/test_loop_details.py",
    ],
    "agentic/saga.py": [
        "tests/agentic/test_saga_rules.py",
        "tests/agentic/test_properties_runs.py::test_the_checkpoint_runner_reaches_the_in_process_transcript",
    ],
    "agentic/registry.py": ["tests/agentic/test_dispatch.py", "tests/agentic/test_tools.py"],
    "agentic/signing.py": [
        "tests/agentic/test_signing_rules.py",
        "tests/temporal/test_signed_decisions.py::test_only_a_decision_signed_by_the_named_approver_counts",
        "tests/temporal/test_signed_decisions.py::test_key_entries_are_checked_and_never_echoed",
        "tests/temporal/test_signed_decisions.py::test_python_m_ops_approver_keys_new_prints_a_usable_pair",
    ],
    **{
        target: [
            "tests/baseline/test_lease_rules.py",
            "tests/stores/test_store_rules.py",
            "tests/baseline/test_baseline_transcript.py",
            "tests/temporal/test_mutation_classes.py::test_a_worker_that_lost_its_lease_cannot_renew_it",
            "tests/temporal/test_mutation_classes.py::test_steps_recorded_past_the_end_of_a_run_stop_its_resume",
            "tests/agentic/test_properties_runs.py::test_the_checkpoint_runner_reaches_the_in_process_transcript",
        ]
        for target in ("duragent/_baseline/store.py", "duragent/_baseline/lease.py", "duragent/_baseline/journal.py")
    },
}

_SWAP_COMPARE = {
    ast.GtE: ">",
    ast.Gt: ">=",
    ast.LtE: "<",
    ast.Lt: "<=",
    ast.Eq: "!=",
    ast.NotEq: "==",
    ast.Is: "is not",
    ast.IsNot: "is",
    ast.In: "not in",
    ast.NotIn: "in",
}
_SPELLING = {
    ast.GtE: ">=",
    ast.Gt: ">",
    ast.LtE: "<=",
    ast.Lt: "<",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}


@dataclass(frozen=True)
class Mutant:
    path: str
    line: int
    before: str  # the whole line, as written
    after: str  # the whole line, mutated
    kind: str

    @property
    def name(self) -> str:
        return f"{self.path}:{self.line} {self.kind}"


@dataclass
class Outcome:
    mutant: Mutant
    killed: bool
    seconds: float
    detail: str = ""


def mutants(path: str, root: Path = ROOT) -> Iterator[Mutant]:
    """Every single-token mutant of `path`, line by line. Docstrings, annotations and strings are left alone."""
    source = (root / path).read_text()
    lines = source.splitlines()
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    annotations = {id(n) for a in _annotations(tree) for n in ast.walk(a)}
    # `ConfigDict(frozen=True)` is how pydantic models are declared, not a rule of the code: left alone.
    annotations |= {
        id(k.value) for n in ast.walk(tree) if isinstance(n, ast.Call) for k in n.keywords if k.arg == "frozen"
    }
    seen: set[tuple[int, str]] = set()
    for node in ast.walk(tree):
        if id(node) in annotations or id(node) in docstrings:
            continue
        for line, before, after, kind in _mutations(node, lines):
            if after != before and (line, after) not in seen:
                seen.add((line, after))
                yield Mutant(path, line, before, after, kind)


def _annotations(tree: ast.AST) -> Iterator[ast.AST]:
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) or (isinstance(node, ast.arg) and node.annotation is not None):
            yield node.annotation
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
            yield node.returns


def _replace(lines: list[str], node: ast.AST, start: int, end: int, text: str) -> tuple[int, str, str] | None:
    """The line of `node` with columns [start, end) replaced; None when the node spans lines."""
    line = lines[node.lineno - 1]  # type: ignore[attr-defined]
    if start < 0 or end > len(line):
        return None
    return node.lineno, line, line[:start] + text + line[end:]  # type: ignore[attr-defined]


def _between(line: str, left_end: int, right_start: int, spelled: str) -> tuple[int, int] | None:
    """Where the operator `spelled` stands between two operands on one line."""
    segment = line[left_end:right_start]
    at = segment.find(f" {spelled} ")
    if at < 0:
        return None
    return left_end + at + 1, left_end + at + 1 + len(spelled)


def _mutations(node: ast.AST, lines: list[str]) -> Iterator[tuple[int, str, str, str]]:
    if isinstance(node, ast.Compare) and node.lineno == node.end_lineno:
        left = node.left
        for op, right in zip(node.ops, node.comparators, strict=True):
            spelled = _SPELLING[type(op)]
            line = lines[node.lineno - 1]
            where = _between(line, left.end_col_offset or 0, right.col_offset, spelled)  # type: ignore[arg-type]
            if where is not None:
                found = _replace(lines, node, *where, _SWAP_COMPARE[type(op)])
                if found:
                    yield (*found, f"{spelled} -> {_SWAP_COMPARE[type(op)]}")
            left = right
    elif isinstance(node, ast.BoolOp) and node.lineno == node.end_lineno:
        spelled, other = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
        line = lines[node.lineno - 1]
        where = _between(line, node.values[0].end_col_offset or 0, node.values[1].col_offset, spelled)
        if where is not None:
            found = _replace(lines, node, *where, other)
            if found:
                yield (*found, f"{spelled} -> {other}")
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and node.lineno == node.end_lineno:
        found = _replace(lines, node, node.col_offset, node.operand.col_offset, "")
        if found:
            yield (*found, "drop not")
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool) and node.lineno == node.end_lineno:
        found = _replace(lines, node, node.col_offset, node.end_col_offset or 0, str(not node.value))
        if found:
            yield (*found, f"{node.value} -> {not node.value}")
    elif (
        isinstance(node, ast.Constant)
        and type(node.value) is int
        and node.lineno == node.end_lineno
        and lines[node.lineno - 1][node.col_offset : node.end_col_offset].isdigit()
    ):
        found = _replace(lines, node, node.col_offset, node.end_col_offset or 0, str(node.value + 1))
        if found:
            yield (*found, f"{node.value} -> {node.value + 1}")
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub) and node.lineno == node.end_lineno:
        spelled, other = ("+", "-") if isinstance(node.op, ast.Add) else ("-", "+")
        line = lines[node.lineno - 1]
        where = _between(line, node.left.end_col_offset or 0, node.right.col_offset, spelled)
        if where is not None:
            found = _replace(lines, node, *where, other)
            if found:
                yield (*found, f"{spelled} -> {other}")
    elif isinstance(node, ast.Subscript) and node.lineno == node.end_lineno:
        line = lines[node.lineno - 1]
        text = line[node.col_offset : node.end_col_offset]
        if text.endswith("[::-1]"):
            found = _replace(lines, node, node.end_col_offset - 6, node.end_col_offset, "")  # type: ignore[operator]
            if found:
                yield (*found, "drop [::-1]")
    elif isinstance(node, ast.If) and len(node.body) == 1 and isinstance(node.body[0], ast.Raise | ast.Return):
        guard = node.body[0]
        if guard.lineno == guard.end_lineno and guard.lineno != node.lineno:
            line = lines[guard.lineno - 1]
            indent = len(line) - len(line.lstrip())
            yield guard.lineno, line, " " * indent + "pass", f"{type(guard).__name__.lower()} -> pass"


def _apply(copy: Path, mutant: Mutant) -> str:
    path = copy / mutant.path
    original = path.read_text()
    lines = original.splitlines(keepends=True)
    ending = "\n" if lines[mutant.line - 1].endswith("\n") else ""
    lines[mutant.line - 1] = mutant.after + ending
    path.write_text("".join(lines))
    return original


def _worker(mutants_: list[Mutant], timeout: float, results: list[Outcome], report: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="mutate-") as scratch:
        copy = Path(scratch)
        copy_repository(copy)
        baseline: dict[str, bool] = {}
        for mutant in mutants_:
            tests = TARGETS[mutant.path]
            if mutant.path not in baseline:  # the unmutated code must pass its tests, or nothing is measured
                unmutated = run_tests(copy, tests, timeout)
                if not unmutated.passed:
                    why = unmutated.last_line
                    raise SystemExit(f"mutants: the tests of {mutant.path} fail without any mutant: {why}")
                baseline[mutant.path] = True
            original = _apply(copy, mutant)
            started = time.monotonic()
            try:
                tested = run_tests(copy, tests, timeout)
            finally:
                (copy / mutant.path).write_text(original)
            seconds = round(time.monotonic() - started, 1)
            outcome = Outcome(mutant, killed=not tested.passed, seconds=seconds, detail=tested.last_line)
            results.append(outcome)
            if report:
                mark = "killed  " if outcome.killed else "SURVIVED"
                print(f"{mark} {mutant.name}: {mutant.after.strip()}", flush=True)


def run(args: argparse.Namespace) -> int:
    targets = args.only or list(TARGETS)
    unknown = [t for t in targets if t not in TARGETS]
    if unknown:
        print(f"mutants sweep: no targeted tests for {unknown}; targets: {', '.join(TARGETS)}", file=sys.stderr)
        return 2
    everything = [m for target in targets for m in mutants(target)]
    if args.limit:
        everything = everything[: args.limit]
    print(f"mutants sweep: {len(everything)} mutants of {len(targets)} files, one at a time", flush=True)
    if args.list:
        for m in everything:
            print(f"{m.name}: {m.after.strip()}")
        return 0
    preload()
    results: list[Outcome] = []
    _worker(everything, args.timeout, results, True)  # one at a time: each test run forks this process
    killed = sum(o.killed for o in results)
    survivors = sorted((o for o in results if not o.killed), key=lambda o: (o.mutant.path, o.mutant.line))
    score = 100.0 * killed / len(results) if results else 100.0
    print(f"\nmutation score: {killed}/{len(results)} killed ({score:.1f} %)")
    for per_file in targets:
        mine = [o for o in results if o.mutant.path == per_file]
        if mine:
            print(f"  {per_file}: {sum(o.killed for o in mine)}/{len(mine)}")
    for o in survivors:
        print(f"  survivor {o.mutant.name}: {o.mutant.before.strip()}  ->  {o.mutant.after.strip()}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        body = {
            "killed": killed,
            "total": len(results),
            "score": round(score, 1),
            "survivors": [asdict(o.mutant) for o in survivors],
        }
        Path(args.json).write_text(json.dumps(body, indent=2) + "\n")
    return 0


def configure(parser: argparse.ArgumentParser) -> None:
    parser.set_defaults(handler=run)
    parser.add_argument("--only", action="append", metavar="FILE", help="a target file (repeatable); default: all")
    parser.add_argument("--limit", type=int, default=0, help="at most this many mutants (a quick look)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per test run before it counts as killed")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    parser.add_argument("--json", help="also write the score and the survivors to this file")
