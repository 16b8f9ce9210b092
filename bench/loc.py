"""Lines of code each engine needs for durability, counted with `tokenize` and `ast` (no dependencies).

A line counts as code when it holds at least one token that is not a comment, a docstring or layout
(blank lines, indentation, newlines). Logical lines are statements (one `NEWLINE` token each; a
statement spanning several physical lines is one logical line). Docstrings — the first string statement
of a module, class or function — are documentation, not code, and are counted apart, as are comments.
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from duragent._config.settings import ROOT

SHARED = "shared"

_LAYOUT = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENCODING,
    tokenize.ENDMARKER,
}

# Which files each engine needs, by role. Globs are relative to the repository root. Files both engines use
# (the loop, tools, models, agents, the ledger, the agents modules, the run options both command lines
# take) are listed under "shared" and counted for neither, even where an engine's glob also matches them.
FILE_SETS: dict[str, dict[str, list[str]]] = {
    "temporal": {
        # The workflow and its activities, the worker, the Python client that starts, approves, cancels and awaits
        # runs (duragent/_client.py, duragent/_errors.py), the plugin wiring a client or worker, the connection and
        # its settings.
        "durability": [
            "duragent/_workflows/*.py",
            "duragent/_activities/*.py",
            "duragent/_worker.py",
            "duragent/_plugin.py",
            "duragent/_config/connection.py",
            "duragent/_config/settings.py",
        ],
        # Not listed: the payload codec and observability (ops/codec, duragent/_config/observability.py), which the
        # baseline has no counterpart of.
        "operations": [
            "duragent/_ops/devstack/devserver.py",
            "duragent/_ops/devstack/worker_process.py",
            "starter.py",
            "duragent/_ops/cli/*.py",
        ],
    },
    "baseline": {
        "durability": [
            "duragent/_baseline/__init__.py",
            "duragent/_baseline/store.py",
            "duragent/_baseline/schema.py",
            "duragent/_baseline/lease.py",
            "duragent/_baseline/journal.py",
            "duragent/_baseline/steps.py",
            "duragent/_baseline/runner.py",
            "duragent/_baseline/compensation.py",
            "duragent/_baseline/approvals.py",
            "duragent/_baseline/jobs.py",
            "duragent/_baseline/options.py",
            "duragent/_baseline/errors.py",
            "agentic/progress.py",
        ],
        # Everything else in baseline/ (so a new file is never silently left out).
        "operations": ["duragent/_baseline/*.py"],
    },
    SHARED: {
        "not counted": [
            "agentic/**/*.py",  # the loop, Agent, AgentSet, AgentSpec, tools, models, ledger, stores
            "examples/*.py",  # the demo agents both engines run
            "duragent/_config/agent_modules.py",  # `--agents MODULE`: worker.py and `job`
            "duragent/_config/models.py",  # the models a worker or a `job` process declares
            "duragent/_ops/cli/run_options.py",  # the run flags of `starter.py run` and `job run`
        ]
    },
}


@dataclass(frozen=True)
class FileCount:
    path: str
    code: int  # physical lines with code
    logical: int  # statements
    comments: int  # lines with a comment and no code
    docstrings: int  # lines of docstrings and no code
    blank: int
    total: int


def count_source(source: str, path: str = "<source>") -> FileCount:
    """Count one file's lines; see the module docstring for the rules."""
    docstrings = _docstring_spans(source)
    code_lines: set[int] = set()
    comment_lines: set[int] = set()
    doc_lines: set[int] = set()
    logical = 0
    line_has_code = False
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            comment_lines.add(token.start[0])
        elif token.type == tokenize.NEWLINE:
            logical += line_has_code
            line_has_code = False
        elif token.type == tokenize.STRING and _inside(token.start, docstrings):
            doc_lines.update(range(token.start[0], token.end[0] + 1))
        elif token.type not in _LAYOUT:
            code_lines.update(range(token.start[0], token.end[0] + 1))
            line_has_code = True
    lines = source.splitlines()
    blank = sum(1 for line in lines if not line.strip())
    return FileCount(
        path=path,
        code=len(code_lines),
        logical=logical,
        comments=len(comment_lines - code_lines),
        docstrings=len(doc_lines - code_lines),
        blank=blank,
        total=len(lines),
    )


def _docstring_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    spans = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                value = first.value
                assert value.end_lineno is not None and value.end_col_offset is not None
                spans.append(((value.lineno, value.col_offset), (value.end_lineno, value.end_col_offset)))
    return spans


def _inside(position: tuple[int, int], spans: list[tuple[tuple[int, int], tuple[int, int]]]) -> bool:
    return any(start <= position < end for start, end in spans)


def resolve(patterns: list[str], root: Path = ROOT, exclude: set[Path] | None = None) -> list[Path]:
    found: set[Path] = set()
    for pattern in patterns:
        found.update(p for p in root.glob(pattern) if p.is_file() and "__pycache__" not in p.parts)
    return sorted(found - (exclude or set()))


def count_sets(root: Path = ROOT, file_sets: dict[str, dict[str, list[str]]] | None = None) -> dict[str, Any]:
    """Per engine and role: the files with their counts, and totals. A file lands in the first role that
    lists it, so broad globs ("everything else") never count a file twice; a shared file lands in no
    engine's roles."""
    file_sets = file_sets or FILE_SETS
    shared = {path for patterns in file_sets.get(SHARED, {}).values() for path in resolve(patterns, root)}
    out: dict[str, Any] = {}
    for engine, roles in file_sets.items():
        taken: set[Path] = set() if engine == SHARED else set(shared)
        engine_out: dict[str, Any] = {}
        for role, patterns in roles.items():
            files = resolve(patterns, root, exclude=taken)
            taken.update(files)
            counts = [count_source(f.read_text(), str(f.relative_to(root))) for f in files]
            engine_out[role] = {
                "patterns": patterns,
                "files": [asdict(c) for c in counts],
                "code": sum(c.code for c in counts),
                "logical": sum(c.logical for c in counts),
            }
        out[engine] = engine_out
    return out
