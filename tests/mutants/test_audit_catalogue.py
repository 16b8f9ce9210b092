"""The mutants stay re-runnable as the code moves: each audit mutant's text is still in its file exactly once and
its test files exist; each sweep target and its tests exist (`python -m tests.mutants`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mutants.audit import AUDIT_2, AUDITS, AuditMutant
from tests.mutants.audit_3 import AUDIT_3
from tests.mutants.audit_4 import AUDIT_4
from tests.mutants.audit_5 import AUDIT_5
from tests.mutants.scratch import ROOT, copy_repository
from tests.mutants.sweep import TARGETS


def test_audit_2_has_its_39_mutants_once_each() -> None:
    assert [m.id for m in AUDIT_2] == [f"N{n:02d}" for n in range(1, 40)]


def test_audit_3_has_its_40_mutants_once_each_four_of_them_equivalent() -> None:
    assert [m.id for m in AUDIT_3] == [f"M{n:02d}" for n in range(1, 41)]
    assert [m.id for m in AUDIT_3 if m.equivalent] == ["M09", "M12", "M25", "M39"]
    assert AUDITS["3"] is AUDIT_3


def test_audit_4_has_its_43_mutants_once_each_none_equivalent() -> None:
    assert [m.id for m in AUDIT_4] == [f"P{n:02d}" for n in range(1, 44)]
    assert [m.id for m in AUDIT_4 if m.equivalent] == []
    assert AUDITS["4"] is AUDIT_4


def test_audit_5_has_its_16_mutants_once_each_none_equivalent() -> None:
    assert [m.id for m in AUDIT_5] == [f"Q{n:02d}" for n in range(1, 17)]
    assert [m.id for m in AUDIT_5 if m.equivalent] == []
    assert AUDITS["5"] is AUDIT_5


ALL = AUDIT_2 + AUDIT_3 + AUDIT_4 + AUDIT_5


@pytest.mark.parametrize("mutant", ALL, ids=[m.id for m in ALL])
def test_each_audit_mutant_still_applies_and_names_its_tests(mutant: AuditMutant) -> None:
    assert (ROOT / mutant.path).read_text().count(mutant.old) == 1, f"{mutant.path} no longer has {mutant.old!r}"
    assert mutant.new != mutant.old and mutant.tests
    assert [t for t in mutant.tests if not (ROOT / t).is_file()] == []


def test_each_sweep_target_and_its_tests_exist() -> None:
    for target, tests in TARGETS.items():
        assert (ROOT / target).is_file(), target
        assert [t for t in tests if not (ROOT / t.split("::")[0]).is_file()] == [], target


@pytest.mark.system  # starts git and a Python
def test_the_scratch_copy_imports_its_own_workflow_and_activity_modules(tmp_path) -> None:
    """A mutant of `duragent/_workflows/visibility.py` must be what `duragent._workflows.visibility` is in the copy,
    not the module of the checkout the venv's editable install was made from."""
    copy_repository(tmp_path)
    code = "import duragent._workflows.visibility as w, duragent._activities.worked as a; print(w.__file__, a.__file__)"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    shown = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert [Path(f).resolve() for f in shown] == [
        (tmp_path / "duragent" / "_workflows" / "visibility.py").resolve(),
        (tmp_path / "duragent" / "_activities" / "worked.py").resolve(),
    ]
