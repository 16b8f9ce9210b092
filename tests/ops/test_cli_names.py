"""A command line's messages name the command its user typed: `duragent ...` when installed, `python
starter.py ...` in the repository — never a file a pip install does not have."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import starter
import worker
from duragent._ops.cli import output, prune, waits, watch
from duragent._ops.cli.output import CliError


@pytest.fixture(autouse=True)
def _name_restored() -> Iterator[None]:
    yield
    output.invoked_as("duragent")


@pytest.mark.parametrize(("prog", "typed"), [("duragent", "duragent"), ("starter.py", "python starter.py")])
def test_next_commands_are_named_as_typed(prog: str, typed: str) -> None:
    output.invoked_as(prog)
    assert waits.timed_out("r-1", 8, None).endswith(f"`{typed} result r-1` waits again")
    progress = {"run_id": "r-1"}
    pending = {"call_id": "2.1", "arguments_hash": "abcdef0123456789"}
    assert watch.decide_hint(progress, pending) == (
        f" — {typed} approve r-1 --call 2.1 --by NAME --hash abcdef012345 (or deny)"
    )
    with pytest.raises(CliError, match=f"needs the run id: {typed} archive show FILE RUN_ID"):
        prune.cmd_archive(type("Args", (), {"action": "show", "run_id": None})(), None)  # type: ignore[arg-type]


def test_the_repository_script_names_itself_and_serves_the_demo_agents_by_default() -> None:
    parsed = starter.parser().parse_args(["run", "billing"])
    assert parsed.default_agents == ("examples",)
    assert "python starter.py run AGENT --agents MODULE" in starter.parser().description


def test_a_worker_suggests_the_command_line_beside_it_not_itself() -> None:
    worker.main(["--help"])  # parsed and left: what matters is the name it set
    assert output.command("server") == "python starter.py server"
