"""Every name 0.2 moved (CHANGELOG.md's table) still works once, with a deprecation naming its new home.

Imports run in a fresh interpreter each (the aliases are process-wide), from the checkout's root as 0.1's users
ran them, and must give the very object the new name gives: an alias, never a second copy of a module.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import starter
from duragent.config.settings import ROOT

# Processes of its own (fresh interpreters, the old commands).
pytestmark = pytest.mark.system

# The checkout's old names, and what each must be the same object as.
# (0.1's module, a name in it, the module it must be the same object as, what the warning says moved)
MOVED_IMPORTS = [
    ("durable_agents", "Agent", "duragent", "`durable_agents` moved to `duragent`"),
    ("durable_agents.testing", "agent_server", "duragent.testing", "`durable_agents` moved to `duragent`"),
    ("workflows", "AgentClient", "duragent", "`workflows.AgentClient` moved to `duragent.AgentClient`"),
    ("workflows.agent", "AgentWorkflow", "duragent.workflows.agent", "`workflows` moved to `duragent.workflows`"),
    ("activities.tools", "ToolActivities", "duragent.activities.tools", "`activities` moved to `duragent.activities`"),
    ("stores.ledger", "EffectsLedger", "duragent.stores.ledger", "`stores` moved to `duragent.stores`"),
    ("config.settings", "Settings", "duragent.config.settings", "`config` moved to `duragent.config`"),
    ("ops.cli.job", "main", "duragent.ops.cli.job", "`ops` moved to `duragent.ops`"),
    ("baseline.runner", "Runner", "duragent.baseline.runner", "`baseline` moved to `duragent.baseline`"),
]


def python(*argv: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "always::DeprecationWarning", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(("old", "name", "new", "warning"), MOVED_IMPORTS, ids=[m[0] for m in MOVED_IMPORTS])
def test_an_old_import_name_is_the_new_object_and_warns_where_it_went(old: str, name: str, new: str, warning: str):
    statement = f"from {old} import {name} as a; from {new} import {name} as b; print(a is b)"
    done = python("-c", statement)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"  # an alias: the engine's own class, not a copy
    assert f"DeprecationWarning: {warning} in 0.2; the old name goes in 0.3" in done.stderr
    assert "<string>:1" in done.stderr  # pointed at the importer's line, not at our shim


def test_the_wheel_names_are_not_what_the_old_names_find() -> None:
    """The old names are the checkout's shims: outside it (where a user's project is) they are not ours."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import importlib.util as u; print(u.find_spec('stores'), u.find_spec('durable_agents'))",
        ],
        cwd="/",
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert done.stdout.split() == ["None", "None"], done.stdout + done.stderr


@pytest.mark.parametrize(
    ("module", "argv", "says", "new"),
    [
        ("ops.approver_keys", ["new", "maria"], "maria=", "duragent approver-key"),
        ("ops.codec.keys", ["new", "k2027"], "k2027:", "duragent codec-key"),
        ("ops.codec.server", ["--help"], "codec", "duragent codec-server"),
    ],
)
def test_an_old_command_runs_its_new_subcommand_and_says_so(module: str, argv: list[str], says: str, new: str):
    done = python("-m", module, *argv)
    assert done.returncode == 0, done.stderr
    assert says in done.stdout
    assert f"warning: `python -m {module}` is now `{new.split()[0]} {new.split()[1]}`" in done.stderr


def test_the_old_demo_flags_become_options_with_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    args = starter.parser().parse_args(["run", "migration", "--step-delay", "0.5", "--fail-at", "car"])
    assert args.option == [("step_delay", 0.5), ("fail_at", "car")]
    said = capsys.readouterr().err
    assert "warning: --step-delay is now --option step_delay=VALUE" in said
    assert "warning: --fail-at is now --option fail_at=VALUE" in said


def test_the_job_command_is_duragent_job_with_a_warning() -> None:
    old = Path(sys.executable).parent / "job"
    done = subprocess.run([str(old), "--help"], capture_output=True, text=True, timeout=60)
    new = subprocess.run([str(old.with_name("duragent-job")), "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == new.returncode == 0
    assert done.stderr.startswith("warning: the `job` command is now `duragent-job`")
    assert new.stderr == "" and done.stdout == new.stdout  # the same command line
