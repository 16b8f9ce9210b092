"""One hand-written mutant of a mutation audit, as the audits' catalogues list it (tests/mutants/audit.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AuditMutant:
    id: str
    path: str
    old: str
    new: str
    rule: str  # what the mutant breaks
    tests: tuple[str, ...]
    # Why no test can catch it, when none can (an equivalent mutant): it is run, and expected to survive.
    equivalent: str | None = None


def _t(*names: str) -> tuple[str, ...]:
    """Test files by their short names (`agentic/signing_rules` -> tests/agentic/test_signing_rules.py)."""
    return tuple(f"tests/{name.rsplit('/', 1)[0]}/test_{name.rsplit('/', 1)[1]}.py" for name in names)
