"""Agents modules named on a command line (`--agents MODULE`): one in the current directory is found, for that
import only — the directory is not left on `sys.path`, where every later import (an optional package not
installed) would look for a file someone planted there — and a directory anyone may write to is not searched."""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pytest

from duragent._config.agent_modules import AgentModuleError, load_agents

AGENTS = """
from pathlib import Path
from duragent import Agent, FakeModel, Registry
Path({marker!r}).write_text("imported")
agents = [Agent(FakeModel(["Hi."]), Registry(), name="hello")]
"""


def plant(directory: Path) -> tuple[str, Path]:
    name = f"my_agents_{uuid.uuid4().hex[:8]}"
    marker = directory / f"{name}.imported"
    (directory / f"{name}.py").write_text(AGENTS.format(marker=str(marker)))
    return name, marker


def test_a_module_in_the_current_directory_loads_and_the_directory_leaves_sys_path(tmp_path, monkeypatch) -> None:
    tmp_path.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    name, marker = plant(tmp_path)
    try:
        [agent] = load_agents([name])
    finally:
        sys.modules.pop(name, None)
    assert agent.name == "hello" and marker.read_text() == "imported"
    assert str(tmp_path) not in sys.path and "" not in sys.path[1:]
    # What an attacker would plant for a later optional import is not found there any more.
    (tmp_path / "psycopg_pool_planted.py").write_text("raise SystemExit('planted code ran')")
    with pytest.raises(ModuleNotFoundError):
        __import__("psycopg_pool_planted")


def test_a_directory_anyone_may_write_to_is_not_searched(tmp_path, monkeypatch) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # like /tmp
    monkeypatch.chdir(shared)
    name, marker = plant(shared)
    with pytest.raises(AgentModuleError) as refused:
        load_agents([name])
    assert not marker.exists() and name not in sys.modules
    assert str(refused.value) == (
        f"cannot import agents module {name!r}: No module named {name!r} (the current directory {shared} is not "
        "searched: anyone may write to it; add the directory that holds it to PYTHONPATH)"
    )
    assert os.getcwd() not in sys.path
