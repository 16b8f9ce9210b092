"""Every command line, every subcommand, with bad input: exactly one line on stderr, the documented non-zero
exit code, never a traceback (issue 23; the boundary is ops/cli/boundary.py).

The commands run as real subprocesses, all at once before the assertions (they need no server: Temporal is
pointed at a port where nothing listens, so a command that tried to connect before rejecting its input
would say "cannot reach Temporal" instead of the expected message).
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pytest

from config.settings import ROOT
from ops.devstack.devserver import free_port

# Processes of its own: about 95 command lines.
pytestmark = pytest.mark.system

NOWHERE = f"127.0.0.1:{free_port()}"
STARTER = [sys.executable, str(ROOT / "starter.py")]
JOB = [sys.executable, "-m", "ops.cli.job"]
WORKER = [sys.executable, str(ROOT / "worker.py")]
NOT_UTF8 = b"bad\xff\xfeid"
LONG_ID = "x" * 1001


@dataclass(frozen=True)
class Case:
    id: str
    argv: list[str | bytes]
    code: int
    says: str
    env: dict[str, str] = field(default_factory=dict)


def starter(id: str, *argv: str | bytes, code: int = 2, says: str, **env: str) -> Case:
    return Case(f"starter {id}", [*STARTER, *argv], code, says, env)


def job(id: str, *argv: str | bytes, code: int = 2, says: str, **env: str) -> Case:
    return Case(f"job {id}", [*JOB, *argv], code, says, env)


def worker(id: str, *argv: str, code: int = 2, says: str, **env: str) -> Case:
    return Case(f"worker {id}", [*WORKER, *argv], code, says, env)


CASES = [
    # -- starter.py: parsing, and the flags both CLIs share ------------------------------------------------
    starter("no command", says="the following arguments are required: command"),
    starter("unknown command", "bogus", says="invalid choice: 'bogus'"),
    starter("server port out of range", "server", "--port", "99999", says="--port: a port is 1-65535, got 99999"),
    starter(
        "server db where no directory can be",
        *("server", "--port", NOWHERE.rsplit(":", 1)[1], "--ui-port", str(free_port()), "--db", "/proc/nope/dev.db"),
        code=1,
        says="/proc/nope",
    ),
    starter("server ui port not a number", "server", "--ui-port", "abc", says="expected a port number"),
    starter("model-server port 0", "model-server", "--port", "0", says="--port: a port is 1-65535, got 0"),
    starter("model-server n-ctx 0", "model-server", "--n-ctx", "0", says="--n-ctx: must be at least 1, got 0"),
    starter("run max-steps 0", "run", "billing", "--max-steps", "0", says="--max-steps: must be at least 1, got 0"),
    starter("run max-steps -1", "run", "billing", "--max-steps", "-1", says="--max-steps: must be at least 1"),
    starter("run approval-timeout 0", "run", "refund", "--approval-timeout", "0", says="must be more than 0, got 0"),
    starter("run records -5", "run", "migration", "--records", "-5", says="--records: must be at least 1, got -5"),
    starter("run step-delay nan", "run", "migration", "--step-delay", "nan", says="expected a number, got 'nan'"),
    starter("run base-url", "run", "billing", "--base-url", "http://x", says="--base-url is not accepted"),
    starter("run task not utf-8", "run", "billing", "--task", NOT_UTF8, says="--task is not valid UTF-8"),
    starter("run id not utf-8", "run", "billing", "--id", NOT_UTF8, says="--id is not valid UTF-8"),
    starter("run id too long", "run", "billing", "--id", LONG_ID, says="a run id is at most 1000 characters"),
    starter("run id empty", "run", "billing", "--id", "", says="a run id cannot be empty"),
    starter("run unknown agent", "run", "no-such-agent", says="unknown agent 'no-such-agent'"),
    starter("run no agent", "run", says="which agent?"),
    starter("run two agents", "run", "billing", "--agent", "refund", says="two agents"),
    starter("run option without =", "run", "billing", "--option", "novalue", says="expected KEY=VALUE"),
    starter("run timeout 0", "run", "billing", "--wait", "--timeout", "0", says="--timeout: must be more than 0"),
    starter("run bad option value", "run", "migration", "--option", "records=-1", says="records"),
    starter("status no id", "status", says="the run id is required: RUN_ID or --id RUN_ID"),
    starter("status two ids", "status", "a", "--id", "b", says="two run ids: 'a' and --id 'b'"),
    starter("status id not utf-8", "status", NOT_UTF8, says="is not valid UTF-8"),
    starter("result timeout -1", "result", "x", "--timeout", "-1", says="--timeout: must be more than 0"),
    starter("watch interval 0", "watch", "x", "--interval", "0", says="--interval: must be more than 0"),
    starter("effects unknown flag", "effects", "--bogus", says="unrecognized arguments: --bogus"),
    starter("pending extra argument", "pending", "extra", says="unrecognized arguments: extra"),
    starter("approve by empty", "approve", "x", "--by", "", says="--by: needs a name"),
    starter("approve by blank", "approve", "x", "--by", "   ", says="--by: needs a name"),
    starter("deny without by or key", "deny", "x", says="--by needs a name: it is recorded in the audit trail"),
    starter("cancel no id", "cancel", says="the run id is required"),
    starter("facts unknown action", "facts", "bogus", says="argument action: invalid choice: 'bogus'"),
    starter("facts forget without namespace", "facts", "forget", says="facts forget needs --namespace"),
    starter("facts namespace not utf-8", "facts", "--namespace", NOT_UTF8, says="--namespace is not valid UTF-8"),
    starter("migrate extra argument", "migrate", "extra", says="unrecognized arguments: extra"),
    starter("prune negative", "prune", "--completed-days", "-1", says="--completed-days: must be more than 0, got -1"),
    starter("prune zero", "prune", "--failed-days", "0", says="--failed-days: must be more than 0, got 0"),
    starter("prune all without yes", "prune", "--all", says="add --yes"),
    starter("prune dry-run and yes", "prune", "--dry-run", "--yes", says="--dry-run and --yes contradict each other"),
    starter("prune now not a time", "prune", "--now", "soon", says="--now: not an ISO time: 'soon'"),
    starter(
        "prune missing stores",
        *("prune", "--yes"),
        says="no worker stores here",
        AGENT_DATA_DIR="/nonexistent/data",
        AGENT_LEDGER="/nonexistent/ledger.db",
    ),
    starter("archive missing file", "archive", "list", "/nonexistent/a.jsonl.gz", says="no archive at /nonexistent"),
    starter("archive show no run", "archive", "show", "/etc/hostname", says="archive show needs the run id"),
    starter("archive not an archive", "archive", "list", "/etc/hostname", says="is not a complete gzip JSONL archive"),
    starter("search-attributes flag", "search-attributes", "--bogus", says="unrecognized arguments"),
    starter("demo flag", "demo", "--bogus", says="unrecognized arguments"),
    starter("TEMPORAL_TLS=maybe", "pending", says="TEMPORAL_TLS='maybe': expected true or false", TEMPORAL_TLS="maybe"),
    starter("cert without key", "pending", says="go together", TEMPORAL_TLS_CLIENT_CERT_PATH="/etc/hostname"),
    starter("old variable name", "pending", says="TEMPORAL_TLS_CERT is no longer read", TEMPORAL_TLS_CERT="/x"),
    starter("server unreachable", "pending", code=1, says=f"cannot reach Temporal at {NOWHERE}"),
    starter("serve port 0", "serve", "--port", "0", says="--port: a port is 1-65535"),
    starter("serve without tokens", "serve", says="refusing to start without AGENT_API_TOKENS"),
    starter(
        "serve insecure off loopback",
        *("serve", "--host", "0.0.0.0", "--insecure-no-auth"),
        says="allowed on a loopback address only",
    ),
    # -- job ---------------------------------------------------------------------------------------------
    job("no command", says="the following arguments are required: command"),
    job("unknown command", "bogus", says="invalid choice: 'bogus'"),
    job("run max-steps 0", "run", "--agent", "billing", "--max-steps", "0", says="--max-steps: must be at least 1"),
    job("run task not utf-8", "run", "--agent", "billing", "--task", NOT_UTF8, says="--task is not valid UTF-8"),
    job("run id too long", "run", "--agent", "billing", "--id", LONG_ID, says="a run id is at most 1000 characters"),
    job("run unknown agent", "run", "--scenario", "nope", says="unknown agent 'nope'"),
    job("run no agent", "run", says="the following arguments are required: --agent"),
    job("run poll-interval -1", "run", "--agent", "billing", "--poll-interval", "-1", says="--poll-interval: must be"),
    job("run base-url", "run", "--agent", "billing", "--base-url", "http://x", says="--base-url is not accepted"),
    job(
        "run webhook unsigned",
        "run",
        "--agent",
        "billing",
        "--webhook",
        "not-a-url",
        says="--webhook: set AGENT_WEBHOOK",
    ),
    job(
        "run webhook not a url",
        *("run", "--agent", "billing", "--webhook", "not-a-url"),
        says="--webhook: the URL must be http(s)",
        AGENT_WEBHOOK_SECRET="s" * 32,
    ),
    job(
        "run model not declared", "run", "--agent", "billing", "--model", "gpt-x", says="model 'gpt-x' is not declared"
    ),
    job("resume no id", "resume", says="the run id is required"),
    job("resume unknown", "resume", "nope", code=1, says="unknown run id 'nope'"),
    job("status two ids", "status", "a", "--id", "b", says="two run ids"),
    job("status id not utf-8", "status", "--id", NOT_UTF8, says="--id is not valid UTF-8"),
    job("cancel unknown", "cancel", "nope", code=1, says="unknown run id 'nope'"),
    job("approve by empty", "approve", "nope", "--by", "", says="--by: needs a name"),
    job("deny unknown", "deny", "--id", "nope", "--by", "me", code=1, says="unknown run id 'nope'"),
    job("effects no id", "effects", says="the run id is required"),
    job("facts unknown action", "facts", "bogus", says="argument action: invalid choice: 'bogus'"),
    job("prune negative", "prune", "--completed-days", "-1", says="--completed-days: must be more than 0, got -1"),
    job("prune zero", "prune", "--failed-days", "0", says="--failed-days: must be more than 0, got 0"),
    job("prune all without yes", "prune", "--all", says="add --yes"),
    job("prune missing store", "prune", "--yes", "--db", "/nonexistent/b.db", says="no checkpoint store"),
    job("recover lease 0", "recover", "--lease-seconds", "0", says="--lease-seconds: must be more than 0"),
    job("serve port 0", "serve", "--port", "0", says="--port: a port is 1-65535"),
    job("serve without tokens", "serve", says="refusing to start without AGENT_API_TOKENS"),
    job(
        "serve store nowhere",
        *("serve", "--insecure-no-auth", "--db", "/nonexistent/dir/b.db"),
        says="no directory /nonexistent/dir",
    ),
    job("TEMPORAL_TLS=maybe", "run", "--agent", "billing", says="TEMPORAL_TLS='maybe'", TEMPORAL_TLS="maybe"),
    # -- worker.py's startup -----------------------------------------------------------------------------
    worker("unknown flag", "--bogus", says="unrecognized arguments: --bogus"),
    worker("AGENT_LOG_FORMAT=xml", says="AGENT_LOG_FORMAT='xml': expected json or text", AGENT_LOG_FORMAT="xml"),
    worker("LOG_LEVEL=LOUD", says="LOG_LEVEL='LOUD': expected DEBUG", LOG_LEVEL="LOUD"),
    worker("agents module missing", "--agents", "no.such.module", says="cannot import agents module 'no.such.module'"),
    worker("TEMPORAL_TLS=maybe", says="TEMPORAL_TLS='maybe'", TEMPORAL_TLS="maybe"),
    worker("server unreachable", code=1, says=f"cannot reach Temporal at {NOWHERE}"),
    # -- the codec tools and the bench -------------------------------------------------------------------
    starter("codec-key bad id", "codec-key", "bad id!", says="bad key id"),
    starter("approver-key blank name", "approver-key", " ", says="approver"),
    Case("codec server without keys", [sys.executable, "-m", "ops.http.codec"], 2, "no keys"),
    Case(
        "bench report missing",
        [sys.executable, "-m", "bench", "report", "--from", "/nonexistent.json"],
        2,
        "no results",
    ),
]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    """Run every case at once (a few at a time: 2 cores), before any assertion."""
    tmp = tmp_path_factory.mktemp("bad-input")

    def run(case: Case) -> subprocess.CompletedProcess[str]:
        env = {
            "PATH": "/usr/bin:/bin",
            "TEMPORAL_ADDRESS": NOWHERE,
            "AGENT_DATA_DIR": str(tmp / "data"),
            "AGENT_LEDGER": str(tmp / "ledger.db"),
        } | case.env
        argv = [*case.argv]
        if argv[:3] == JOB and argv[3:4] != []:  # every job subcommand gets a store of its own
            argv += ["--db", str(tmp / "baseline.db")] if "--db" not in argv else []
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, timeout=120)
        return subprocess.CompletedProcess(
            argv, done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
        )

    with ThreadPoolExecutor(4) as pool:
        return dict(zip([c.id for c in CASES], pool.map(run, CASES), strict=True))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_line_and_a_documented_exit_code(outcomes, case: Case) -> None:
    done = outcomes[case.id]
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert case.says in lines[0]
    assert done.returncode == case.code, done.stderr


def test_the_same_bad_flag_gets_the_same_message_in_both_command_lines(outcomes) -> None:
    def said(case_id: str) -> str:
        return outcomes[case_id].stderr.strip().split(" (see ")[0]

    for case in (
        "run max-steps 0",
        "run task not utf-8",
        "run id too long",
        "run base-url",
        "TEMPORAL_TLS=maybe",
        "prune negative",
        "prune zero",
        "prune all without yes",
    ):
        assert said(f"starter {case}") == said(f"job {case}"), case
