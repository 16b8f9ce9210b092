"""Every command line, every subcommand, with bad input: exactly one line on stderr, the documented non-zero
exit code, never a traceback (the boundary is duragent/_ops/cli/boundary.py). And the same bad flag gets the
same message in `starter.py` and `job`, which are built of the same arguments.

The cases run in-process through each command line's `main(argv)`, in an environment of their own (Temporal
pointed at a port where nothing listens, so a command that tried to connect before rejecting its input would
say "cannot reach Temporal" instead of the expected message). A handful run as real subprocesses: the exit
path of each entry point, argument bytes that are not UTF-8 as the OS hands them over, and the commands that
configure the process's logging or start a server.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import starter
import worker
from duragent._config.settings import ROOT
from duragent._ops.cli import job as job_cli
from duragent._ops.devstack.devserver import free_port
from tests.support.in_process import runtimes_kept

# Processes of its own: about 95 command lines.
pytestmark = pytest.mark.system

NOWHERE = f"127.0.0.1:{free_port()}"
NOT_UTF8 = b"bad\xff\xfeid"
LONG_ID = "x" * 1001
MAINS = {"starter": starter.main, "job": job_cli.main, "worker": worker.main}
COMMANDS = {
    "starter": [sys.executable, str(ROOT / "starter.py")],
    "job": [sys.executable, "-m", "duragent._ops.cli.job"],
    "worker": [sys.executable, str(ROOT / "worker.py")],
}


@dataclass(frozen=True)
class Case:
    id: str
    cli: str  # starter, job, worker; or a module run with `python -m`
    argv: list[str | bytes]
    code: int
    says: str
    env: dict[str, str] = field(default_factory=dict)
    subprocess: bool = False


def starter_case(id: str, *argv: str | bytes, code: int = 2, says: str, spawn: bool = False, **env: str) -> Case:
    return Case(f"starter {id}", "starter", list(argv), code, says, env, spawn)


def job_case(id: str, *argv: str | bytes, code: int = 2, says: str, spawn: bool = False, **env: str) -> Case:
    return Case(f"job {id}", "job", list(argv), code, says, env, spawn)


def worker_case(id: str, *argv: str, code: int = 2, says: str, spawn: bool = False, **env: str) -> Case:
    return Case(f"worker {id}", "worker", list(argv), code, says, env, spawn)


# The same input to both command lines: one case each, and the same message expected from both.
BOTH = [
    ("run max-steps 0", ["run", "billing", "--max-steps", "0"], "--max-steps: must be at least 1, got 0"),
    ("run max-steps -1", ["run", "billing", "--max-steps", "-1"], "--max-steps: must be at least 1"),
    ("run approval-timeout 0", ["run", "refund", "--approval-timeout", "0"], "must be more than 0, got 0"),
    ("run temperature 5", ["run", "billing", "--temperature", "5"], "--temperature: Input should be less than"),
    ("run base-url", ["run", "billing", "--base-url", "http://x"], "--base-url is not accepted"),
    ("run task not utf-8", ["run", "billing", "--task", NOT_UTF8], "--task is not valid UTF-8"),
    ("run id too long", ["run", "billing", "--id", LONG_ID], "a run id is at most 1000 characters"),
    ("run id empty", ["run", "billing", "--id", ""], "a run id cannot be empty"),
    ("run unknown agent", ["run", "no-such-agent"], "unknown agent 'no-such-agent'"),
    ("run unknown agent by flag", ["run", "--scenario", "nope"], "unknown agent 'nope'"),
    ("run no agent", ["run"], "which agent? give its name: `run AGENT` or `run --agent AGENT`"),
    ("run two agents", ["run", "billing", "--agent", "refund"], "two agents: 'billing' and --agent 'refund'"),
    ("run option without =", ["run", "billing", "--option", "novalue"], "expected KEY=VALUE"),
    (
        "run option out of range",
        ["run", "migration", "--option", "records=-5"],
        "invalid options for agent migration: records: Input should be greater than 0",
    ),
    (
        "run option nan",
        ["run", "migration", "--option", "step_delay=nan"],
        "step_delay: Input should be greater than or equal to 0",
    ),
    ("run option not a choice", ["run", "trip", "--option", "fail_at=boat"], "fail_at: Input should be 'none'"),
    ("run option unknown", ["run", "migration", "--option", "speed=3"], "speed: Extra inputs are not permitted"),
    (  # an agent's own option given as a flag (0.1's demo flags still parse: tests/packaging/test_moved_names.py)
        "run agent option as a flag",
        ["run", "migration", "--batch-size", "3"],
        "unrecognized arguments: --batch-size 3 (an option of the agent? --option batch_size=VALUE)",
    ),
    ("run memory namespace blank", ["run", "courier", "--namespace", " "], "--namespace"),
    ("status no id", ["status"], "the run id is required: RUN_ID or --id RUN_ID"),
    ("status two ids", ["status", "a", "--id", "b"], "two run ids: 'a' and --id 'b'; give one"),
    ("status id not utf-8", ["status", NOT_UTF8], "is not valid UTF-8"),
    ("cancel no id", ["cancel"], "the run id is required"),
    ("effects unknown flag", ["effects", "--bogus"], "unrecognized arguments: --bogus"),
    ("approve by empty", ["approve", "x", "--by", ""], "--by: needs a name"),
    ("approve by blank", ["approve", "x", "--by", "   "], "--by: needs a name"),
    ("approve hash too short", ["approve", "x", "--by", "me", "--hash", "abc"], "--hash: give at least 8 characters"),
    ("deny without by", ["deny", "x"], "--by needs a name: it is recorded in the audit trail"),
    ("facts unknown action", ["facts", "bogus"], "argument action: invalid choice: 'bogus'"),
    ("facts forget without namespace", ["facts", "forget"], "facts forget needs --namespace"),
    ("facts namespace not utf-8", ["facts", "--namespace", NOT_UTF8], "--namespace is not valid UTF-8"),
    ("prune negative", ["prune", "--completed-days", "-1"], "--completed-days: must be more than 0, got -1"),
    ("prune zero", ["prune", "--failed-days", "0"], "--failed-days: must be more than 0, got 0"),
    ("prune all without yes", ["prune", "--all"], "add --yes"),
    ("prune dry-run and yes", ["prune", "--dry-run", "--yes"], "--dry-run and --yes contradict each other"),
    ("prune now not a time", ["prune", "--now", "soon"], "--now: not an ISO time: 'soon'"),
    ("serve port 0", ["serve", "--port", "0"], "--port: a port is 1-65535"),
    ("serve without tokens", ["serve"], "refusing to start without AGENT_API_TOKENS"),
    (
        "serve insecure off loopback",
        ["serve", "--host", "0.0.0.0", "--insecure-no-auth"],
        "allowed on a loopback address only",
    ),
]

CASES = [
    *(starter_case(id, *argv, says=says) for id, argv, says in BOTH),
    *(job_case(id, *argv, says=says) for id, argv, says in BOTH),
    # -- starter.py ----------------------------------------------------------------------------------------
    starter_case("no command", says="the following arguments are required: command", spawn=True),
    starter_case("unknown command", "bogus", says="invalid choice: 'bogus'"),
    starter_case("server port out of range", "server", "--port", "99999", says="--port: a port is 1-65535, got 99999"),
    starter_case(
        "server db where no directory can be",
        *("server", "--port", NOWHERE.rsplit(":", 1)[1], "--ui-port", str(free_port()), "--db", "/proc/nope/dev.db"),
        code=1,
        says="/proc/nope",
        spawn=True,
    ),
    starter_case("server ui port not a number", "server", "--ui-port", "abc", says="expected a port number"),
    starter_case("model-server port 0", "model-server", "--port", "0", says="--port: a port is 1-65535, got 0"),
    starter_case("model-server n-ctx 0", "model-server", "--n-ctx", "0", says="--n-ctx: must be at least 1, got 0"),
    starter_case("run task not utf-8, from the OS", "run", "billing", "--task", NOT_UTF8, says="--task", spawn=True),
    starter_case("run id not utf-8", "run", "billing", "--id", NOT_UTF8, says="--id is not valid UTF-8"),
    starter_case("run timeout 0", "run", "billing", "--wait", "--timeout", "0", says="--timeout: must be more than 0"),
    starter_case("result timeout -1", "result", "x", "--timeout", "-1", says="--timeout: must be more than 0"),
    starter_case("watch interval 0", "watch", "x", "--interval", "0", says="--interval: must be more than 0"),
    starter_case("pending extra argument", "pending", "extra", says="unrecognized arguments: extra"),
    starter_case("migrate extra argument", "migrate", "extra", says="unrecognized arguments: extra"),
    starter_case(
        "prune missing stores",
        *("prune", "--yes"),
        says="no worker stores here",
        AGENT_DATA_DIR="/nonexistent/data",
        AGENT_LEDGER="/nonexistent/ledger.db",
    ),
    starter_case(
        "archive missing file", "archive", "list", "/nonexistent/a.jsonl.gz", says="no archive at /nonexistent"
    ),
    starter_case("archive show no run", "archive", "show", "/etc/hostname", says="archive show needs the run id"),
    starter_case(
        "archive not an archive", "archive", "list", "/etc/hostname", says="is not a complete gzip JSONL archive"
    ),
    starter_case("search-attributes flag", "search-attributes", "--bogus", says="unrecognized arguments"),
    starter_case("demo flag", "demo", "--bogus", says="unrecognized arguments"),
    starter_case(
        "TEMPORAL_TLS=maybe", "pending", says="TEMPORAL_TLS='maybe': expected true or false", TEMPORAL_TLS="maybe"
    ),
    starter_case("cert without key", "pending", says="go together", TEMPORAL_TLS_CLIENT_CERT_PATH="/etc/hostname"),
    starter_case("old variable name", "pending", says="TEMPORAL_TLS_CERT is no longer read", TEMPORAL_TLS_CERT="/x"),
    starter_case("server unreachable", "pending", code=1, says=f"cannot reach Temporal at {NOWHERE}"),
    starter_case("codec-key bad id", "codec-key", "bad id!", says="bad key id"),
    starter_case("approver-key blank name", "approver-key", " ", says="approver"),
    # -- job -----------------------------------------------------------------------------------------------
    job_case("no command", says="the following arguments are required: command", spawn=True),
    job_case("unknown command", "bogus", says="invalid choice: 'bogus'"),
    job_case("run id not utf-8, from the OS", "run", "billing", "--id", NOT_UTF8, says="--id", spawn=True),
    job_case("run poll-interval -1", "run", "billing", "--poll-interval", "-1", says="--poll-interval: must be"),
    job_case(
        "run webhook unsigned", *("run", "billing", "--webhook", "not-a-url"), says="--webhook: set AGENT_WEBHOOK"
    ),
    job_case(
        "run webhook not a url",
        *("run", "billing", "--webhook", "not-a-url"),
        says="--webhook: the URL must be http(s)",
        AGENT_WEBHOOK_SECRET="s" * 32,
    ),
    job_case("run model not declared", "run", "billing", "--model", "gpt-x", says="model 'gpt-x' is not declared"),
    job_case("resume no id", "resume", says="the run id is required"),
    job_case("resume unknown", "resume", "nope", code=1, says="unknown run id 'nope'"),
    job_case("cancel unknown", "cancel", "nope", code=1, says="unknown run id 'nope'"),
    job_case("deny unknown", "deny", "--id", "nope", "--by", "me", code=1, says="unknown run id 'nope'"),
    job_case("approve without hash or yes", "approve", "nope", "--by", "me", code=1, says="unknown run id 'nope'"),
    job_case("effects unknown run", "effects", "nope", code=1, says="unknown run id 'nope'"),
    job_case("prune missing store", "prune", "--yes", "--db", "/nonexistent/b.db", says="no checkpoint store"),
    job_case("recover lease 0", "recover", "--lease-seconds", "0", says="--lease-seconds: must be more than 0"),
    job_case(
        "serve store nowhere",
        *("serve", "--insecure-no-auth", "--db", "/nonexistent/dir/b.db"),
        says="no directory /nonexistent/dir",
    ),
    job_case("TEMPORAL_TLS=maybe", "run", "billing", says="TEMPORAL_TLS='maybe'", TEMPORAL_TLS="maybe"),
    # -- worker.py's startup -------------------------------------------------------------------------------
    worker_case("unknown flag", "--bogus", says="unrecognized arguments: --bogus"),
    worker_case("AGENT_LOG_FORMAT=xml", says="AGENT_LOG_FORMAT='xml': expected json or text", AGENT_LOG_FORMAT="xml"),
    worker_case("LOG_LEVEL=LOUD", says="LOG_LEVEL='LOUD': expected DEBUG", LOG_LEVEL="LOUD"),
    worker_case("TEMPORAL_TLS=maybe", says="TEMPORAL_TLS='maybe'", TEMPORAL_TLS="maybe"),
    worker_case(
        "AGENT_MAX_CACHED_WORKFLOWS=-5",
        says="AGENT_MAX_CACHED_WORKFLOWS='-5': expected a whole number",
        AGENT_MAX_CACHED_WORKFLOWS="-5",
    ),
    # Worker Versioning: half a version, or one the server would refuse every poll of — before connecting.
    worker_case(
        "deployment without build id", "--deployment", "agents", says="no build id (--build-id, TEMPORAL_WORKER"
    ),
    worker_case(
        "build id without deployment",
        says="no deployment name (--deployment, TEMPORAL_DEPLOYMENT_NAME)",
        TEMPORAL_WORKER_BUILD_ID="v2",
    ),
    worker_case("deployment name with a dot", "--deployment", "a.b", "--build-id", "v1", says="may not contain '.'"),
    worker_case(
        "build id reserved",
        says="build id '__unversioned__': may not start with '__'",
        TEMPORAL_DEPLOYMENT_NAME="agents",
        TEMPORAL_WORKER_BUILD_ID="__unversioned__",
    ),
    # these two configure the process's logging before they fail: not in the test process
    worker_case(
        "agents module missing",
        *("--agents", "no.such.module"),
        says="cannot import agents module 'no.such.module'",
        spawn=True,
    ),
    worker_case("server unreachable", code=1, says=f"cannot reach Temporal at {NOWHERE}", spawn=True),
    # -- the codec endpoint and the bench --------------------------------------------------------------------
    starter_case("codec-server without keys", "codec-server", says="no keys", spawn=True),
    Case("bench report missing", "bench", ["report", "--from", "/nonexistent.json"], 2, "no results", subprocess=True),
]

CLEARED = ("AGENT_", "TEMPORAL_", "LOG_LEVEL", "OPENAI_")  # the test process's own settings must not leak in


def environment(tmp: Path, case: Case) -> dict[str, str]:
    return {
        "TEMPORAL_ADDRESS": NOWHERE,
        "AGENT_DATA_DIR": str(tmp / "data"),
        "AGENT_LEDGER": str(tmp / "ledger.db"),
        "AGENT_MODULES": "examples",  # the demo agents, named as a user names theirs (`job` has no default)
    } | case.env


def argv_of(case: Case, tmp: Path) -> list[str | bytes]:
    argv = list(case.argv)
    if case.cli == "job" and argv and "--db" not in argv:  # every job subcommand gets a store of its own
        argv += ["--db", str(tmp / "baseline.db")]
    return argv


def in_process(case: Case, tmp: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> tuple[int, str]:
    for name in list(os.environ):
        if name.startswith(CLEARED):
            monkeypatch.delenv(name)
    for name, value in environment(tmp, case).items():
        monkeypatch.setenv(name, value)
    argv = [os.fsdecode(arg) if isinstance(arg, bytes) else arg for arg in argv_of(case, tmp)]  # as Python gets them
    capsys.readouterr()
    with runtimes_kept():
        code = MAINS[case.cli](argv)
    return code, capsys.readouterr().err


def as_subprocess(case: Case, tmp: Path) -> tuple[int, str]:
    command = COMMANDS.get(case.cli) or [sys.executable, "-m", case.cli]
    env = {"PATH": "/usr/bin:/bin"} | environment(tmp, case)
    done = subprocess.run([*command, *argv_of(case, tmp)], cwd=ROOT, env=env, capture_output=True, timeout=120)
    return done.returncode, done.stderr.decode(errors="replace")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_line_and_a_documented_exit_code(case: Case, tmp_path, monkeypatch, capsys) -> None:
    code, err = as_subprocess(case, tmp_path) if case.subprocess else in_process(case, tmp_path, monkeypatch, capsys)
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert case.says in lines[0]
    assert code == case.code, err


@pytest.mark.parametrize("id", [id for id, _, _ in BOTH])
def test_the_same_bad_input_gets_the_same_message_in_both_command_lines(id, tmp_path, monkeypatch, capsys) -> None:
    """Word for word, but where a message names its own command line (`see job run --help`, `job serve: ...`)."""
    said = {}
    for case in (c for c in CASES if c.id in (f"starter {id}", f"job {id}")):
        code, err = in_process(case, tmp_path, monkeypatch, capsys)
        own_name = "starter.py " if case.cli == "starter" else "job "
        said[case.cli] = (code, err.strip().split(" (see ")[0].replace(f"error: {own_name}", "error: "))
    assert said["starter"] == said["job"]
