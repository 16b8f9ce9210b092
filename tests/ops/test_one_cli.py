"""One command-line convention for both engines: `starter.py` (Temporal) and `job` (the checkpoint
engine) take the same flags with the same defaults for the same things, look in the same data directory, and
take an agent and a run id the same two ways. In-process through each `main(argv)`, no server needed. (Each
bad input's one line and exit code, and the same message in both: tests/ops/test_cli_bad_input.py.)"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

import starter
import worker
from duragent._baseline.store import Store
from duragent._config.agent_modules import AgentModuleError, module_names
from duragent._ops.cli import job as job_cli
from duragent._ops.cli.boundary import load_settings

# What only one engine has; everything else a shared command takes, it takes in both, with the same default.
ONLY_STARTER = {
    "run": {"--wait", "--timeout", "--heartbeat-timeout"},  # Temporal waits, and retries a silent tool
    "prune": {"--wait"},  # Temporal deletes asynchronously
}
ONLY_JOB = {
    "run": {"--webhook", "--lease-seconds", "--max-attempts", "--poll-interval"},  # the checkpoint worker's own
    "status": {"--messages"},  # the transcript rebuilt from checkpoints
    "serve": {"--max-runs"},  # a worker process per run it starts, bounded
}
JOB_EVERYWHERE = {"--db", "--ledger", "--agents"}  # where job's store and agents are, on every command
SHARED = ("run", "status", "cancel", "approve", "deny", "effects", "facts", "prune", "serve")


def subcommands(root: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    [group] = [a for a in root._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(group.choices)


def flags(parser: argparse.ArgumentParser) -> dict[str, object]:
    """Every option string, with its default; positionals by their name."""
    taken: dict[str, object] = {}
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        for name in action.option_strings or [action.dest]:
            taken[name] = action.default
    return taken


@pytest.mark.parametrize("command", SHARED)
def test_both_command_lines_take_the_same_flags_with_the_same_defaults(command: str) -> None:
    ours = flags(subcommands(starter.parser())[command])
    theirs = flags(subcommands(job_cli.parser())[command])
    assert set(ours) - set(theirs) == ONLY_STARTER.get(command, set())
    assert set(theirs) - set(ours) == (ONLY_JOB.get(command, set()) | JOB_EVERYWHERE) - set(ours)
    assert {name: ours[name] for name in set(ours) & set(theirs)} == {
        name: theirs[name] for name in set(ours) & set(theirs)
    }
    assert {"--json", "--debug"} <= set(ours)


@pytest.mark.parametrize("cli", [starter.parser, job_cli.parser])
def test_an_agent_and_a_run_id_are_given_either_way_in_both(cli) -> None:
    for argv in (["run", "billing"], ["run", "--agent", "billing"], ["run", "--scenario", "billing"]):
        assert cli().parse_args(argv).agent == "billing", argv
    for command in ("status", "cancel", "approve", "deny", "effects"):
        for argv in ([command, "r-1"], [command, "--id", "r-1"]):
            assert cli().parse_args(argv).run_id == "r-1", argv
    assert cli().parse_args(["effects"]).run_id is None  # every row of the ledger, in both


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """AGENT_DATA_DIR set, AGENT_LEDGER not, and the working directory somewhere else entirely; the demo agents
    named as a user names theirs (`duragent-job` has no default agents module)."""
    for name in ("AGENT_LEDGER", "AGENT_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AGENT_MODULES", "examples")
    monkeypatch.setenv("AGENT_DATA_DIR", str(tmp_path / "data"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return tmp_path / "data"


def test_with_agent_data_dir_set_job_starter_and_worker_use_the_same_ledger(data_dir: Path, capsys) -> None:
    """`job`'s --db and --ledger defaulted to `.data/` under the
    working directory and ignored AGENT_DATA_DIR, so `job run` and `starter.py effects` looked in different
    places. Now both read the one Settings: the run's effect is where `starter.py effects` and the worker look."""
    assert job_cli.main(["run", "billing", "--id", "b-1"]) == 0
    assert Store(data_dir / "baseline.db").run("b-1").status == "completed"
    assert not (data_dir.parent / "elsewhere" / ".data").exists()
    assert load_settings().ledger_path == data_dir / "ledger.db"  # what worker.py's make_deps opens
    capsys.readouterr()
    assert starter.main(["effects", "b-1", "--json"]) == 0
    by_starter = json.loads(capsys.readouterr().out)
    assert [(row["tool"], row["run_id"]) for row in by_starter] == [("charge", "b-1")]
    assert job_cli.main(["effects", "b-1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == by_starter  # one command, one format


def test_job_run_name_is_job_run_agent_name(data_dir: Path, capsys) -> None:
    """`job run NAME` works as `starter.py run NAME` does, and is the same run as `--agent NAME` (and the old
    `--scenario NAME`): the same agent and options recorded, the same end. With --json the id is said first on
    stderr (a crash must not lose it), and stdout is one JSON document."""
    ends = {}
    for run_id, how in (("p", ["migration"]), ("a", ["--agent", "migration"]), ("s", ["--scenario", "migration"])):
        capsys.readouterr()
        assert job_cli.main(["run", *how, "--id", run_id, "--option", "records=2", "--json"]) == 0
        out, err = capsys.readouterr()
        assert err == f"started {run_id}\n"
        view = json.loads(out)
        ends[run_id] = (view["status"], view["stop"], view["progress"]["total"], view["options"])
    assert ends["p"] == ends["a"] == ends["s"] == ("completed", "answered", 5, ends["p"][3])
    assert ends["p"][3]["options"] == {"records": 2}
    rows = Store(data_dir / "baseline.db").query("SELECT run_id, scenario FROM runs ORDER BY run_id")
    assert [(r["run_id"], r["scenario"]) for r in rows] == [("a", "migration"), ("p", "migration"), ("s", "migration")]


def test_only_the_repositorys_command_lines_fall_back_to_the_demo_agents(monkeypatch: pytest.MonkeyPatch) -> None:
    """The library has no default agents module (duragent/_config/agent_modules.py), nor have the installed
    commands (`duragent-job` here): the repository's starter.py and worker.py name the demo agents as their own,
    and AGENT_MODULES or --agents replaces them in all three."""
    monkeypatch.delenv("AGENT_MODULES", raising=False)
    with pytest.raises(AgentModuleError, match=r"give --agents MODULE \(a module of yours exporting `agents`\)"):
        module_names()

    def agents(cli: Any, argv: list[str]) -> list[str]:  # as each entry point resolves them, settings read
        args = cli().parse_args(argv)
        load_settings(args)
        return args.agents

    assert agents(starter.parser, ["run", "billing"]) == ["examples"] == agents(worker.parser, [])
    named = r"no agents module named: give --agents MODULE \(a module of yours exporting `agents`\)"
    with pytest.raises(AgentModuleError, match=named):
        agents(job_cli.parser, ["status", "x"])
    monkeypatch.setenv("AGENT_MODULES", "my.agents, more.agents")
    assert agents(starter.parser, ["serve"]) == ["my.agents", "more.agents"]
    assert agents(job_cli.parser, ["run", "x", "--agents", "flag.agents"]) == ["flag.agents"]
    assert agents(worker.parser, []) == ["my.agents", "more.agents"]


@pytest.mark.parametrize(
    ("main", "argv", "said"),
    [
        (job_cli.main, ["run", "billing", "--poll-interval", "-1"], "argument --poll-interval: must be more than 0"),
        (starter.main, ["run", "billing", "--heartbeat-timeout", "0"], "argument --heartbeat-timeout: must be more"),
        (job_cli.main, ["run", "billing", "--temperature", "5"], "--temperature: Input should be less than or equal"),
        (job_cli.main, ["run", "billing", "--bogus"], "unrecognized arguments: --bogus"),
        (starter.main, ["status", "x", "--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_a_flag_error_names_the_flag_typed_and_the_commands_help(data_dir: Path, capsys, main, argv, said) -> None:
    """`poll_seconds: Input should be greater than 0` named the internal field, and a parse
    error said `(see job --help)` rather than the subcommand's help."""
    capsys.readouterr()
    assert main(argv) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: {said}")
    assert "_seconds" not in line and "poll_interval" not in line
    if "(see " in line:
        assert line.endswith(f" {argv[0]} --help)") and " --help) (see " not in line
