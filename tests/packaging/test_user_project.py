"""`duragent` installs into a user's own Temporal project as a well-behaved library, and serves agents from the
user's own worker, beside the user's own workflows, one of which runs an agent as its middle step.

The wheel is built from this checkout (`pip wheel --no-deps .`) and installed into fresh venvs outside the repo,
in a project laid out the way Temporal's samples lay one out: its own `config.py`, `workflows.py`,
`activities.py` and an `ops/` package at the root, which shadowed our top-level packages in 0.1. There the
README's own-agent program runs as written against a dev server, and the testing-kit example of docs/testing.md passes
under pytest; then the user's own program serves their `GreetWorkflow`, their workflow with an agent step and the
README's agent on one `Worker` of theirs (`DurableAgentsPlugin(agents=...)`), and their own test has that step
wait a day for an approval on the time-skipping server. All of it once with the slim core plus only the extras
those need (`[testing]`), once with `[all]`; and the core imports next to neighbours pinned to other minors than
our lock (another fastapi and openai).

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


# The user's own Temporal code, as they write it: an activity, a workflow of theirs and one with an agent as its
# middle step (`duragent.workflow.run_agent`), the README's agent in a module of theirs, one program serving it
# all on their own `Worker`, and a test of the agent step on the time-skipping server.
USERS_ACTIVITIES = """\
from temporalio import activity


@activity.defn
async def compose_greeting(name: str) -> str:
    return f"Hello, {name}!"
"""

USERS_WORKFLOWS = """\
from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities import compose_greeting
    from duragent import ApprovalPolicy, Stop
    from duragent.workflow import run_agent


@workflow.defn
class GreetWorkflow:
    @workflow.run
    async def run(self, name: str) -> str:
        return await workflow.execute_activity(compose_greeting, name, start_to_close_timeout=timedelta(seconds=10))


@workflow.defn
class RefundThenThank:
    @workflow.run
    async def run(self, order_id: str) -> str:
        policy = ApprovalPolicy(timeout_seconds=2 * 86400)  # a human has two days
        refund = await run_agent("refunds", f"Refund order {order_id}", approvals=policy)
        if refund.stop is not Stop.ANSWERED:
            return f"not refunded: {refund.stop.value}"
        thanks = await workflow.execute_activity(
            compose_greeting, "customer of " + order_id, start_to_close_timeout=timedelta(seconds=10)
        )
        return f"{refund.output} {thanks}"
"""

USERS_PROGRAM = """\
import os, uuid
import httpx
import duragent
from temporalio.client import Client
from temporalio.worker import Worker
from duragent import AgentClient, DurableAgentsPlugin

import config
from activities import compose_greeting
from shop_agents import agent
from workflows import GreetWorkflow, RefundThenThank


async def main() -> None:
    client = await Client.connect(os.environ["TEMPORAL_ADDRESS"], plugins=[DurableAgentsPlugin()])
    orders = httpx.Client(base_url=os.environ["ORDERS_URL"])
    async with Worker(
        client,
        task_queue=config.TASK_QUEUE,
        workflows=[GreetWorkflow, RefundThenThank],
        activities=[compose_greeting],
        plugins=[DurableAgentsPlugin(agents=[agent], deps=orders)],
    ):
        greeting = await client.execute_workflow(
            GreetWorkflow.run, "Maria", id=f"greet-{uuid.uuid4().hex[:6]}", task_queue=config.TASK_QUEUE
        )
        print(greeting)
        handle = await client.start_workflow(
            RefundThenThank.run, "A-1", id=f"refund-{uuid.uuid4().hex[:6]}", task_queue=config.TASK_QUEUE
        )
        agents = AgentClient(client, task_queue=config.TASK_QUEUE)
        [waiting] = await agents.handle(handle.id).wait_for_approval()
        await agents.handle(waiting.run_id).approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash)
        print(await handle.result())


duragent.run(main())
"""

USERS_TEST = """\
from datetime import timedelta

import pytest
from temporalio.worker import Worker

from activities import compose_greeting
from duragent import DurableAgentsPlugin
from duragent.testing import agent_server
from workflows import RefundThenThank
from shop_agents import refund, agent


class Refunds:  # the deps of this test: the refunds made, by key
    def __init__(self) -> None:
        self.made: list[str] = []

    def post(self, path: str, headers: dict[str, str]) -> "Refunds":
        self.made.append(headers["Idempotency-Key"])
        return self

    def raise_for_status(self) -> "Refunds":
        return self

    def json(self) -> dict[str, str]:
        return {"answer": "refunded"}


@pytest.mark.asyncio
async def test_the_refund_step_waits_a_day_for_maria_then_the_customer_is_thanked():
    refunds = Refunds()
    async with agent_server() as agents:  # the time-skipping server; the worker is ours
        serving = DurableAgentsPlugin(agents=[agent], deps=refunds)
        async with Worker(
            agents.client,
            task_queue=agents.task_queue,
            workflows=[RefundThenThank],
            activities=[compose_greeting],
            plugins=[serving],
        ):
            handle = await agents.client.start_workflow(
                RefundThenThank.run, "A-1", id="refund-A-1", task_queue=agents.task_queue
            )
            [waiting] = await agents.handle(handle.id).wait_for_approval()
            await agents.sleep(timedelta(days=1))
            assert refunds.made == []
            await agents.handle(waiting.run_id).approve(
                waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash
            )
            assert await handle.result() == "Refunded A-1. Hello, customer of A-1!"
    assert refunds.made == [f"{waiting.run_id}:{waiting.call_id}"] == ["refund-A-1~refunds-1:1.1"]
"""


def readme_agent() -> str:
    """The README program's tool and agent, as a module of the user's (its program's part before `main`)."""
    program = code_block_after("README.md", "## Your own agent")
    return program.split("\n\nasync def main")[0] + "\n"


def user_project(tmp: Path) -> Path:
    """A Temporal project of a user's own: module names that were ours in 0.1 are theirs here."""
    project = tmp / "project"
    (project / "ops").mkdir(parents=True)
    (project / "config.py").write_text('TASK_QUEUE = "refunds"  # the user\'s own configuration module\n')
    (project / "workflows.py").write_text(USERS_WORKFLOWS)
    (project / "activities.py").write_text(USERS_ACTIVITIES)
    (project / "ops" / "__init__.py").write_text('"""The user\'s own operations package."""\nOWNER = "user"\n')
    (project / "refunds.py").write_text(code_block_after("README.md", "## Your own agent"))
    (project / "test_refunds.py").write_text(code_block_after("docs/testing.md", "## Testing your agent"))
    (project / "shop_agents.py").write_text(readme_agent())
    (project / "shop.py").write_text(USERS_PROGRAM)
    (project / "test_shop.py").write_text(USERS_TEST)
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
    # The user's own Worker: their workflows and activity, and the agents by the plugin. Their greeting runs, and
    # their workflow's agent step waits for Maria, refunds once, then their activity thanks the customer.
    said = run([str(python), "shop.py"], cwd=project, env=env, timeout=180).strip().splitlines()
    assert said[-2:] == ["Hello, Maria!", "Refunded A-1. Hello, customer of A-1!"]
    assert [r["order_id"] for r in service.refunds()] == ["A-1", "A-1"]  # the README program's, then this one
    assert service.refunds()[-1]["key"].startswith("refund-")  # the user's workflow id...
    assert service.refunds()[-1]["key"].endswith("~refunds-1:1.1")  # ...its agent step's run, the call's key
    # ...and the same step tested on the time-skipping server: a day's wait for the approval.
    tested = run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_shop.py"], cwd=project, env=env)
    assert "1 passed" in tested
    # The user's own modules are theirs: ours never shadowed them, and theirs never shadowed ours.
    probe = "import config, ops, workflows, duragent; print(config.TASK_QUEUE, ops.OWNER, duragent.__file__)"
    said = run([str(python), "-c", probe], cwd=project, env=env).split()
    assert "GreetWorkflow" in (project / "workflows.py").read_text()
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
            [str(python), "-m", "duragent._ops.cli.starter", "serve", "--agents", "shop_agents", "--port", "8765"],
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
