"""Shared fixtures: the real Temporal servers from PyPI (time-skipping and dev), and helpers.

Servers are started by these fixtures and stopped by their own handles (by pid), never by name.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import platform
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import pytest_asyncio
from hypothesis import HealthCheck, settings
from temporalio.api.workflowservice.v1 import ListOpenWorkflowExecutionsRequest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

import examples
from agentic import Agent
from duragent._config.observability import CORE_LOGGER
from duragent._config.settings import ROOT, Settings
from duragent._ops.devstack import modelserver
from duragent._ops.devstack.devserver import free_port
from duragent._ops.devstack.signals import stop_on_signals
from duragent._stores.facts import SqliteFactStore
from duragent._stores.ledger import EffectsLedger
from duragent._stores.transcripts import SqliteTranscriptStore, Transcripts
from duragent._worker import build_worker
from duragent.testing import start_dev_server, start_time_skipping
from examples.options import DemoDeps
from tests.support import agents_for_tests, cost_markers
from tests.support.backends import BACKENDS, Backend
from tests.support.postgres_server import HOW_TO_GET_ONE, LocalPostgres, binaries, scratch_database
from tests.support.process_guard import ProcessGuard

# What a test worker serves: the demo agents and the small agents of tests/support/agents_for_tests.py.
TEST_AGENTS: list[Agent] = [*examples.agents, *agents_for_tests.agents]

# Property tests (hypothesis): a bounded run in `make test`, a deeper one with HYPOTHESIS_PROFILE=deep (what
# `make test-slow` sets). Derandomized, so a failure in CI is the same failure on a laptop; no example
# database, so nothing is written into the work tree.
_PROFILE = {"deadline": None, "derandomize": True, "database": None, "print_blob": True}
settings.register_profile(
    "default", max_examples=25, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large], **_PROFILE
)
settings.register_profile(
    "deep", max_examples=400, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large], **_PROFILE
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


class SkippingServer:
    """The session's time-skipping test server, replaced when a test leaves it unable to skip time.

    The test server locks time skipping while an activity task is out and releases the lock when the task
    completes or fails. Terminate a run while its activity task is out (what this file does to a run a test
    left open) and that release never comes — the run is closed — so the lock stays held and every later test
    that waits on a timer hangs (on CI, four tests failed after one such leak). Reproduced in
    tests/temporal/test_workflow_hygiene.py. A continue-as-new can leak it too: under load the server started
    the new run yet refused the old run's completion, leaving the old run open with its workflow task out (the
    crossing-approval test in tests/temporal/test_long_runs.py, which now runs on a dev server for it)."""

    def __init__(self, env: WorkflowEnvironment) -> None:
        self.env = env

    async def skips_time(self, within: float = 5.0) -> bool:
        """Whether an hour of server time passes at once (nothing may be running between tests)."""
        try:
            await asyncio.wait_for(self.env.sleep(timedelta(hours=1)), timeout=within)
        except TimeoutError:
            return False
        return True

    async def replace(self) -> None:
        await self.env.shutdown()
        self.env = await start_time_skipping()


@pytest_asyncio.fixture(scope="session")
async def skipping_server() -> AsyncIterator[SkippingServer]:
    server = SkippingServer(await start_time_skipping())
    try:
        yield server
    finally:
        await server.env.shutdown()


@pytest_asyncio.fixture
async def skipping_env(skipping_server: SkippingServer) -> WorkflowEnvironment:
    """The time-skipping test server: durable timers of days complete in milliseconds."""
    return skipping_server.env


async def open_workflow_ids(env: WorkflowEnvironment) -> list[str]:
    """The workflows still open on `env`'s server (the time-skipping server has no visibility queries, but
    it answers the older ListOpenWorkflowExecutions)."""
    request = ListOpenWorkflowExecutionsRequest(namespace=env.client.namespace, maximum_page_size=1000)
    reply = await env.client.workflow_service.list_open_workflow_executions(request)
    return [e.execution.workflow_id for e in reply.executions]


async def terminate_open_workflows(env: WorkflowEnvironment) -> list[str]:
    """Terminate every workflow left open on `env`; returns their ids."""
    left = await open_workflow_ids(env)
    for workflow_id in left:
        with contextlib.suppress(Exception):  # closed meanwhile
            await env.client.get_workflow_handle(workflow_id).terminate(reason="left open by a test")
    return left


# Loggers a command line configures when a test runs its `main` in-process (worker.py's configure_logging,
# starter.py --debug's core log handler, the codec server's basicConfig).
_CONFIGURED_LOGGERS = ("", CORE_LOGGER)


@pytest.fixture(autouse=True)
def _loggers_as_they_were() -> Iterator[None]:
    """A handler a test's in-process `main` installs writes to the stream pytest captured for that test, closed
    when it ends: left in place, every later log line in this process (a workflow's "run started", on another
    test's worker) fails with "I/O operation on closed file" and that test reads a traceback on its stderr. So
    the loggers' handlers, levels and propagation are put back after each test."""
    saved = [
        (logger, list(logger.handlers), logger.level, logger.propagate)
        for logger in map(logging.getLogger, _CONFIGURED_LOGGERS)
    ]
    yield
    for logger, handlers, level, propagate in saved:
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate


@pytest_asyncio.fixture(autouse=True)
async def _no_workflow_outlives_its_test(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """A test on the shared time-skipping server that fails (or forgets) with a workflow open would stop
    time skipping for every later test: the server only skips while no workflow it knows of is busy. So
    whatever a test left open is terminated when it ends, pass or fail — and before a test starts, whatever is
    still open (a run some module-scoped fixture left behind), named on stderr so a hang can be traced. If time
    still does not skip after that (see SkippingServer), the tests after this one get a fresh server."""
    if "skipping_env" not in request.fixturenames:
        yield
        return
    server: SkippingServer = request.getfixturevalue("skipping_server")
    if left := await terminate_open_workflows(server.env):
        print(f"terminated before {request.node.nodeid}: workflows left open {left}", file=sys.stderr)
    yield
    await terminate_open_workflows(server.env)
    if not await server.skips_time():
        STUCK_AFTER.append(request.node.nodeid)
        await server.replace()


# The tests after which time skipping was stuck, named at the end of the run (a passing test's output is
# never shown, and these should be: each one ends with an activity out).
STUCK_AFTER: list[str] = []


@pytest.fixture
def ledger(tmp_path: Path) -> EffectsLedger:
    return EffectsLedger(tmp_path / "ledger.db")


@pytest.fixture
def task_queue() -> str:
    return f"tq-{uuid.uuid4().hex[:12]}"


def agent_named(name: str) -> Agent:
    """One of `TEST_AGENTS`, by name."""
    return next(a for a in TEST_AGENTS if a.name == name)


def transcripts_next_to(ledger: EffectsLedger) -> Transcripts:
    """The transcript store a worker built by `new_worker` uses: next to its ledger."""
    return Transcripts(SqliteTranscriptStore(ledger.path.parent / "transcripts.db"))


def new_worker(client: Client, task_queue: str, ledger: EffectsLedger, **kwargs: object) -> Worker:
    """A worker serving `TEST_AGENTS` (or `agents=`), their tools recording into `ledger`, the transcript
    store and the fact store next to it."""
    kwargs.setdefault("agents", TEST_AGENTS)
    kwargs.setdefault("deps", DemoDeps(ledger=ledger, facts=SqliteFactStore(ledger.path.parent / "facts.db")))
    kwargs.setdefault("transcripts", transcripts_next_to(ledger))
    return build_worker(client, task_queue=task_queue, **kwargs)  # type: ignore[arg-type]


@pytest_asyncio.fixture(scope="session")
async def dev_env() -> AsyncIterator[WorkflowEnvironment]:
    """The real dev server (`temporal server start-dev`), with our search attributes: for crash tests
    that kill worker processes, which need a server that outlives them."""
    env = await start_dev_server()
    try:
        yield env
    finally:
        await env.shutdown()


@pytest.fixture(scope="session")
def local_model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[modelserver.ModelServer]:
    """The embedded local model (SmolLM2-135M on llama-cpp-python's server), one per session, on a free
    port. Without the `llm` group every test using it is skipped with one line saying why."""
    if (reason := modelserver.missing()) is not None:
        pytest.skip(reason)
    server = modelserver.start(free_port(), log=tmp_path_factory.mktemp("model-server") / "server.log")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def own_servers(tmp_path: Path) -> Iterator[Callable[..., modelserver.ModelServer]]:
    """Model servers a test may kill and restart, each stopped (by pid) at the end."""
    if (reason := modelserver.missing()) is not None:
        pytest.skip(reason)
    started: list[modelserver.ModelServer] = []

    def start(port: int | None = None, n_ctx: int = 512) -> modelserver.ModelServer:
        server = modelserver.start(port or free_port(), n_ctx, log=tmp_path / f"server-{len(started)}.log")
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def dev_settings(env: WorkflowEnvironment, task_queue: str, tmp_path: Path) -> Settings:
    """Settings for a worker subprocess talking to `env`, with its own ledger file."""
    return Settings(
        address=env.client.service_client.config.target_host,
        namespace=env.client.namespace,
        task_queue=task_queue,
        ledger_path=tmp_path / "ledger.db",
        data_dir=tmp_path,
    )


async def eventually(check: Callable[[], Awaitable[bool] | bool], timeout: float = 60.0, what: str = "") -> None:
    """Poll instead of sleeping a guessed amount."""
    deadline = time.monotonic() + timeout
    while True:
        outcome = check()
        if isinstance(outcome, Awaitable):
            outcome = await outcome
        if outcome:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or check}")
        await asyncio.sleep(0.1)


def _needs_postgres(item: pytest.Item) -> str | None:
    """ "any": a test that needs some PostgreSQL; "own": one it can stop and start; None: neither."""
    if "own_postgres" in getattr(item, "fixturenames", ()):
        return "own"
    callspec = getattr(item, "callspec", None)
    uses_backend = callspec is not None and callspec.params.get("backend") == "postgres"
    return "any" if uses_backend or "postgres_url" in getattr(item, "fixturenames", ()) else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test gets the markers of what it needs (tests/support/cost_markers.py). Without a PostgreSQL to use,
    its tests are set aside and the summary says so in ONE line (a skip per test would print a line per test),
    never silently."""
    cost_markers.apply(items)
    have_binaries = binaries() is not None
    have_url = bool(os.environ.get("AGENT_TEST_DATABASE_URL", "").strip())
    cannot = [
        item
        for item in items
        if (need := _needs_postgres(item)) and not (have_binaries or (need == "any" and have_url))
    ]
    if cannot:
        items[:] = [item for item in items if item not in cannot]
        config.hook.pytest_deselected(items=cannot)
        why = (
            "they stop and start a server of their own, which needs PostgreSQL's binaries"
            " (`apt-get install postgresql`, or AGENT_TEST_POSTGRES_BIN)"
            if have_url
            else HOW_TO_GET_ONE
        )
        config.stash[_postgres_set_aside] = f"NOT RUN: {len(cannot)} PostgreSQL tests. {why}"


_postgres_set_aside = pytest.StashKey[str]()


# Tests in `make test-fast` start no process (tests/support/process_guard.py); a test that breaks the rule fails.
GUARD = ProcessGuard()


def pytest_configure(config: pytest.Config) -> None:
    """The guard, and a data directory of this process's own: a test or a command line it starts that writes
    local state without naming a directory (the demo's worker log, a default transcript store) writes there, not
    into the work tree — and never into another xdist worker's files, nor a user's real AGENT_DATA_DIR."""
    if not hasattr(config, "workerinput"):  # the controller (or a run without -n), before any worker starts
        # matplotlib (bench/report.py's plots) builds its font list once per machine, running `fc-list`: on a
        # fresh machine whichever test imported it first started that process and broke the guard below. Built
        # here (0.3 s; a file in matplotlib's cache directory afterwards), no test pays for it.
        import matplotlib.font_manager  # noqa: F401
    # The OpenAI SDK sends `platform.platform()` in its headers, which runs `uname -p` once per process: the
    # first test in a process to call a model over HTTP broke the guard (alone, or first in its xdist worker).
    # Cached here, in every process, before the guard watches.
    platform.platform()
    GUARD.install()
    # SIGTERM or SIGHUP (a CI timeout, `kill` of a `make test`) ends the session as Ctrl-C does, so the session's
    # fixtures stop the servers they started in sessions of their own (PostgreSQL, the model server, dev servers):
    # with the default action each worker died at once and left them running.
    config.stash[_stop_on_signals] = contextlib.ExitStack()
    config.stash[_stop_on_signals].enter_context(stop_on_signals())
    config.pluginmanager.register(cost_markers.HeaviestFilesFirst(), "heaviest-files-first")
    config.stash[_data_dir] = tempfile.mkdtemp(prefix="agent-test-data-")
    os.environ["AGENT_DATA_DIR"] = config.stash[_data_dir]
    # The processes the tests start find the checkout's own packages (the demo agents in `examples`, `bench`,
    # `tests.support`) wherever they run, as pytest's `pythonpath` gives this process: the installed package
    # holds only `duragent` and `agentic`. tests/packaging/ clears it to play a user's project.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    # The installed commands have no default agents module; the suite's commands, in-process and in the processes
    # it starts, serve and start the repository's demo agents unless a test names others (tests/packaging/ clears
    # it to play a user's project; the repo's starter.py and worker.py default to them without it).
    os.environ.setdefault("AGENT_MODULES", "examples")


def pytest_unconfigure(config: pytest.Config) -> None:
    if signals := config.stash.get(_stop_on_signals, None):
        signals.close()
    if directory := config.stash.get(_data_dir, None):
        shutil.rmtree(directory, ignore_errors=True)


_data_dir = pytest.StashKey[str]()
_stop_on_signals = pytest.StashKey[contextlib.ExitStack]()


def _guarded(item: pytest.Item) -> None:
    if cost_markers.in_inner_loop(item):
        GUARD.watch(item, may_start_time_skipping=item.get_closest_marker("temporal") is not None)


def _guarded_phase(item: pytest.Item) -> Iterator[None]:
    """One phase of a test (its fixtures' setup, then its body) under the process guard."""
    _guarded(item)
    try:
        yield
    finally:
        why = GUARD.verdict()
    if why:
        pytest.fail(why, pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    return (yield from _guarded_phase(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    return (yield from _guarded_phase(item))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    if line := config.stash.get(_postgres_set_aside, ""):
        terminalreporter.write_line(line, yellow=True, bold=True)
    for nodeid in STUCK_AFTER:
        terminalreporter.write_line(f"time skipping stuck after {nodeid}: the tests after it got a fresh server")


@pytest.fixture(scope="session")
def postgres_admin_url() -> Iterator[str]:
    """A real PostgreSQL for the session: `AGENT_TEST_DATABASE_URL`, or one started from Debian's binaries."""
    url = os.environ.get("AGENT_TEST_DATABASE_URL", "").strip()
    if url:
        yield url
        return
    bin_dir = binaries()
    if bin_dir is None:
        pytest.skip(HOW_TO_GET_ONE)
    server = LocalPostgres(bin_dir)
    try:
        yield server.url
    finally:
        server.close()


@pytest.fixture
def postgres_url(postgres_admin_url: str) -> Iterator[str]:
    """A fresh, empty database for one test."""
    with scratch_database(postgres_admin_url) as url:
        yield url


@pytest.fixture(scope="module")
def own_postgres() -> Iterator[LocalPostgres]:
    """A server of this module's own, which its tests may stop and start (never the shared one)."""
    bin_dir = binaries()
    if bin_dir is None:
        pytest.skip(HOW_TO_GET_ONE.split(": set", 1)[0] + " they can stop: `apt-get install postgresql`")
    server = LocalPostgres(bin_dir)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """Runs the test once on the SQLite files and once on a fresh PostgreSQL database."""
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    chosen = Backend(request.param, tmp_path, url)
    try:
        yield chosen
    finally:
        chosen.close()
