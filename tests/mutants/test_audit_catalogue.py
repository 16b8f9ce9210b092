"""The mutants stay re-runnable as the code moves: each audit mutant's text is still in its file exactly once and
its test files exist; each sweep target and its tests exist (`python -m tests.mutants`)."""

from __future__ import annotations

import pytest

from tests.mutants.audit import AUDIT_2, AUDITS, AuditMutant
from tests.mutants.audit_3 import AUDIT_3
from tests.mutants.scratch import ROOT
from tests.mutants.sweep import TARGETS


def test_audit_2_has_its_39_mutants_once_each() -> None:
    assert [m.id for m in AUDIT_2] == [f"N{n:02d}" for n in range(1, 40)]


def test_audit_3_has_its_40_mutants_once_each_four_of_them_equivalent() -> None:
    assert [m.id for m in AUDIT_3] == [f"M{n:02d}" for n in range(1, 41)]
    assert [m.id for m in AUDIT_3 if m.equivalent] == ["M09", "M12", "M25", "M39"]
    assert AUDITS["3"] is AUDIT_3


@pytest.mark.parametrize("mutant", AUDIT_2 + AUDIT_3, ids=[m.id for m in AUDIT_2 + AUDIT_3])
def test_each_audit_mutant_still_applies_and_names_its_tests(mutant: AuditMutant) -> None:
    assert (ROOT / mutant.path).read_text().count(mutant.old) == 1, f"{mutant.path} no longer has {mutant.old!r}"
    assert mutant.new != mutant.old and mutant.tests
    assert [t for t in mutant.tests if not (ROOT / t).is_file()] == []


def test_each_sweep_target_and_its_tests_exist() -> None:
    for target, tests in TARGETS.items():
        assert (ROOT / target).is_file(), target
        assert [t for t in tests if not (ROOT / t.split("::")[0]).is_file()] == [], target
