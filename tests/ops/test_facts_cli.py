"""`starter.py facts` and `job facts` without a server (facts live in the workers' store, not in Temporal):
what they print, how they forget, and one clear line with the right exit code for each bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import starter
from agentic.errors import ProtectedFactError
from agentic.memory import Fact
from duragent._ops.cli import job as job_cli
from duragent._stores.facts import SqliteFactStore


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENT_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("AGENT_DATABASE_URL", raising=False)
    return tmp_path


@pytest.fixture
def remembered(data_dir: Path) -> SqliteFactStore:
    store = SqliteFactStore(data_dir / "facts.db")
    c7 = store.namespace("C-7")
    c7.write(Fact("preferred_courier", "BlueDart", "ticket T-1"), writer="courier", run_id="run-1", call_id="1.1")
    c7.write(Fact("preferred_courier", "Evil\x1b[2JCourier", "doc-poisoned"), writer="courier", run_id="run-2")
    c7.write(Fact("city", "Pune", "ticket T-1"))
    with pytest.raises(ProtectedFactError):
        c7.write(Fact("is_admin", True, "doc-poisoned"), writer="courier", run_id="run-2", call_id="2.1")
    store.namespace("C-8").write(Fact("city", "Delhi", "ticket T-4"))
    return store


def facts(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = starter.main(["facts", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_lists_namespaces_then_facts_with_their_sources_escaping_control_characters(remembered, capsys) -> None:
    assert facts(capsys) == (0, "C-7: 2 facts\nC-8: 1 fact\n", "")
    code, out, _ = facts(capsys, "--namespace", "C-7")
    assert code == 0
    assert out.splitlines()[0] == 'city = "Pune"'
    assert out.splitlines()[2] == 'preferred_courier = "Evil\\u001b[2JCourier"'  # shown, never interpreted
    assert "\x1b" not in out
    assert "source: doc-poisoned; written by courier in run run-2, call None," not in out  # no call: not invented
    assert "    source: ticket T-1; written by operator at " in out
    code, out, _ = facts(capsys, "--namespace", "C-7", "--json")
    assert [(r["key"], r["source"]) for r in json.loads(out)] == [
        ("city", "ticket T-1"),
        ("preferred_courier", "doc-poisoned"),
    ]


def test_forget_says_how_many_and_what_reverted_history_and_audit_show_it(remembered, capsys) -> None:
    code, out, _ = facts(capsys, "forget", "--namespace", "C-7", "--source", "doc-poisoned", "--by", "maria")
    assert code == 0
    assert out.strip() == (
        "forgot 1 fact taught by 'doc-poisoned' in C-7: preferred_courier "
        "(now from an earlier source: preferred_courier)"
    )
    assert remembered.namespace("C-7").get("preferred_courier") == Fact("preferred_courier", "BlueDart", "ticket T-1")
    assert remembered.namespace("C-8").keys() == ["city"]

    code, out, _ = facts(capsys, "history", "--namespace", "C-7", "--key", "preferred_courier")
    lines = out.splitlines()
    assert lines[0] == '#1 preferred_courier = "BlueDart"  [kept]'
    assert lines[2].startswith("#2 preferred_courier = (erased)  [forgotten at ") and lines[2].endswith(" by maria]")

    code, out, _ = facts(capsys, "audit", "--namespace", "C-7", "--json")
    assert [(a["action"], a["key"], a["writer"]) for a in json.loads(out)] == [
        ("refused", "is_admin", "courier"),
        ("forgot", None, "maria"),
    ]


def test_job_facts_reads_and_forgets_the_same_store(remembered, capsys) -> None:
    assert job_cli.main(["facts", "--namespace", "C-8", "--json"]) == 0
    assert [r["value"] for r in json.loads(capsys.readouterr().out)] == ["Delhi"]
    assert job_cli.main(["facts", "forget", "--namespace", "C-8", "--source", "ticket T-4"]) == 0
    assert capsys.readouterr().out.startswith("forgot 1 fact")
    assert job_cli.main(["facts", "forget", "--namespace", "C-8"]) == 2
    assert capsys.readouterr().err.strip() == "error: facts forget needs --source (the source whose facts are removed)"


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["forget", "--source", "ticket T-1"], 2, "facts forget needs --namespace"),
        (["audit"], 2, "facts audit needs --namespace"),
        (["forget", "--namespace", "C-7"], 2, "facts forget needs --source"),
        (["forget", "--namespace", "C-7", "--source", "   "], 2, "facts forget needs --source"),
        (["forget", "--namespace", "C-7", "--source", "x" * 501], 2, "source is 501 characters"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_and_forgets_nothing(remembered, capsys, argv, code, message) -> None:
    before = remembered.namespace("C-7").dump()
    got, out, err = facts(capsys, *argv)
    assert (got, out) == (code, "")
    assert err.count("\n") == 1 and message in err
    assert remembered.namespace("C-7").dump() == before


def test_a_blank_namespace_is_refused_when_parsed(data_dir, capsys) -> None:
    assert starter.main(["facts", "--namespace", " "]) == 2  # the boundary returns the exit code
    [line] = capsys.readouterr().err.splitlines()
    assert "namespace must not be blank" in line


def test_no_store_in_the_data_directory_is_one_line_and_creates_nothing(data_dir, capsys) -> None:
    code, _, err = facts(capsys, "--namespace", "C-7")
    assert code == 1
    assert (
        err.strip()
        == f"error: no fact store at {data_dir / 'facts.db'} (set AGENT_DATA_DIR to the workers' data directory)"
    )
    assert not (data_dir / "facts.db").exists()
