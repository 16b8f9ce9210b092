"""`duragent` installs into a user's own Temporal project as a well-behaved library.

The wheel is built from this checkout (`pip wheel --no-deps .`) and installed into fresh venvs outside the repo,
in a project laid out the way Temporal's samples lay one out: its own `config.py`, `workflows.py`,
`activities.py` and an `ops/` package at the root, which shadowed our top-level packages in 0.1. There the
README's own-agent program runs as written against a dev server, and the testing-kit example of docs/testing.md passes
under pytest: once with the slim core plus only the extras those need (`[testing]`), once with `[all]`; and the
core imports next to neighbours pinned to other minors than our lock (another fastapi and openai).

Installs come from the package index (pip's cache makes them quick), pinned by requirements.lock as constraints
so the versions are the ones the suite runs on.
"""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.support.docs import code_block_after
from tests.support.wheels import VERSION, isolated_env, new_venv, run
from tests.temporal.test_own_agent import OrdersService

# Processes of its own (pip, venvs, the user's program, a dev server).
pytestmark = pytest.mark.system


def user_project(tmp: Path) -> Path:
    """A Temporal project of a user's own: module names that were ours in 0.1 are theirs here."""
    project = tmp / "project"
    (project / "ops").mkdir(parents=True)
    (project / "config.py").write_text('TASK_QUEUE = "refunds"  # the user\'s own configuration module\n')
    (project / "workflows.py").write_text('"""The user\'s own workflows module (Temporal samples\' layout)."""\n')
    (project / "activities.py").write_text('"""The user\'s own activities module."""\n')
    (project / "ops" / "__init__.py").write_text('"""The user\'s own operations package."""\nOWNER = "user"\n')
    (project / "refunds.py").write_text(code_block_after("README.md", "## Your own agent"))
    (project / "test_refunds.py").write_text(code_block_after("docs/testing.md", "## Testing your agent"))
    return project


def test_the_wheel_adds_the_product_root_and_agentic_and_nothing_else(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as built:
        names = built.namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"duragent", "agentic", f"duragent-{VERSION}.dist-info"}
    assert "duragent/_workflows/agent.py" in names and "duragent/_activities/tools.py" in names  # mapped in
    assert "duragent/py.typed" in names and "agentic/py.typed" in names
    assert not [n for n in names if n.startswith(("duragent/examples", "duragent/bench", "tests/"))]
    with zipfile.ZipFile(wheel) as built:
        entry_points = built.read(f"duragent-{VERSION}.dist-info/entry_points.txt").decode()
    assert "duragent = duragent._ops.cli.starter:console" in entry_points
    assert "duragent-job = duragent._ops.cli.job:console" in entry_points


def run_the_readme_programs(python: Path, project: Path, tmp: Path, dev_env, service: OrdersService) -> None:
    """The own-agent program against a dev server, and the testing-kit example under pytest, as written."""
    env = isolated_env(
        TEMPORAL_ADDRESS=dev_env.client.service_client.config.target_host,
        ORDERS_URL=service.url,
        AGENT_DATA_DIR=str(tmp / "data"),
    )
    out = run([str(python), "refunds.py"], cwd=project, env=env, timeout=180)
    assert out.strip().splitlines()[-1] == "Refunded A-1."
    assert [r["order_id"] for r in service.refunds()] == ["A-1"]  # once, under its key
    tested = run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_refunds.py"], cwd=project, env=env)
    assert "1 passed" in tested
    # The user's own modules are theirs: ours never shadowed them, and theirs never shadowed ours.
    probe = "import config, ops, workflows, duragent; print(config.TASK_QUEUE, ops.OWNER, duragent.__file__)"
    said = run([str(python), "-c", probe], cwd=project, env=env).split()
    assert said[:2] == ["refunds", "user"] and "site-packages" in said[2]


@pytest.mark.parametrize(
    "requirement",
    [
        pytest.param("duragent[testing]", id="slim-core-and-testing"),
        pytest.param("duragent[all]", id="all"),
    ],
)
def test_the_readme_programs_run_in_a_users_project(requirement, wheel, tmp_path, dev_env) -> None:
    python = new_venv(tmp_path, wheel, requirement, "pytest", "pytest-asyncio")
    project = user_project(tmp_path)
    service = OrdersService(tmp_path).wait_ready()
    try:
        run_the_readme_programs(python, project, tmp_path, dev_env, service)
    finally:
        service.stop()
    if requirement == "duragent[testing]":  # a part whose extra is missing says which, in one line
        failed = subprocess.run(
            [str(python), "-m", "duragent._ops.cli.starter", "codec-server", "--port", "8765"],
            cwd=project,
            env=isolated_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert failed.returncode == 2
        assert failed.stderr.strip().splitlines() == [
            "error: the runs API, the approvals inbox and the codec endpoint needs the `http` extra: "
            'pip install "duragent[http]"'
        ]


def test_the_core_imports_next_to_neighbours_pinned_to_other_minors(wheel, tmp_path) -> None:
    neighbours = ("fastapi==0.160.0", "openai==3.50.0")  # the lock has fastapi 0.165.0 and openai 3.57.0
    python = new_venv(tmp_path, wheel, "duragent", *neighbours, leave_out=("fastapi", "openai", "starlette"))
    project = user_project(tmp_path)
    probe = (
        "import fastapi, openai, duragent\n"
        "from duragent import Agent, AgentClient, FakeModel, Registry, build_worker, tool\n"
        "from agentic import Budget, Message, Stop, ToolCall, tool_call\n"
        "from agentic.memory import Fact, FactStore\n"
        "@tool(description='Echo.', text='The text.')\n"
        "def echo(text: str) -> str:\n"
        "    return text\n"
        "run = Agent(FakeModel([tool_call('echo', {'text': 'hi'}), 'Done.']), Registry([echo])).run('Say hi')\n"
        "print(fastapi.__version__, openai.__version__, run.output)\n"
    )
    said = run([str(python), "-c", probe], cwd=project, env=isolated_env())
    assert said.split() == ["0.160.0", "3.50.0", "Done."]
