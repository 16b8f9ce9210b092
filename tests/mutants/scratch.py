"""Where mutants run: a scratch copy of the repository (the work tree is never touched), one mutant at a time,
its tests run by pytest in a forked child of a process that imported the heavy libraries once."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# The project's own packages: a forked test run imports these afresh from the scratch copy (mutant included);
# everything else (temporalio, pydantic, openai, pytest: seconds of imports) is imported once, before forking.
OURS = {
    "activities",
    "agentic",
    "baseline",
    "bench",
    "config",
    "duragent",
    "examples",
    "ops",
    "starter",
    "stores",
    "tests",
    "worker",
    "workflows",
}
PRELOAD = [
    "pytest",
    "pytest_asyncio",
    "hypothesis",
    "pydantic",
    "temporalio.client",
    "temporalio.worker",
    "temporalio.testing",
    "temporalio.contrib.pydantic",
    "openai",
    "httpx",
    "fastapi",
    "cryptography.hazmat.primitives.ciphers.aead",
    "psycopg",
    "jsonschema",
    "mcp",
]


@dataclass(frozen=True)
class TestRun:
    passed: bool
    last_line: str  # pytest's summary line
    first_failure: str | None  # the first test that failed (`-x`: the one that caught a mutant)


def preload() -> None:
    for name in PRELOAD:
        with contextlib.suppress(Exception):  # an optional library: the test run imports it (or skips) itself
            __import__(name)


def copy_repository(destination: Path) -> None:
    """The tracked and untracked-but-not-ignored files of the work tree: the code as it is being edited."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    for name in listed:
        source = ROOT / name
        target = destination / name
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def run_tests(copy: Path, tests: list[str], timeout: float, extra: list[str] | None = None) -> TestRun:
    """Run `tests` in `copy`, stopping at the first failure, in a forked child of this (preloaded) process, in its
    own process group, with the copy's modules first on the path; a run past `timeout` x 3 is killed (group and
    all) and counts as failed."""
    log = copy / ".mutate.log"
    # The files in the order given, the catching one first: the suite's own order (heaviest files first, for
    # `make test`'s workers) ran a mutant's slow file first, which a mutant can make wait out its timeout.
    order = ["-p", "no:heaviest-files-first"]
    args = ["-x", "-q", "-rfE", "-p", "no:cacheprovider", *order, "--timeout", str(timeout), *(extra or []), *tests]
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 3
        try:
            os.setpgid(0, 0)
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.chdir(copy)
            for name in [m for m in sys.modules if m.split(".")[0] in OURS]:
                del sys.modules[name]
            sys.path[:] = [str(copy), *(p for p in sys.path if p not in ("", str(ROOT)))]
            os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
            import pytest

            code = int(pytest.main(args))
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    deadline = time.monotonic() + timeout * 3
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                _stop_group(pid)
                return TestRun(False, "timed out", None)
            time.sleep(0.05)
    except BaseException:  # a Ctrl-C or SIGTERM (stop_on_signals) while the tests run: they stop too
        _stop_group(pid)
        raise
    with contextlib.suppress(ProcessLookupError):  # whatever the tests left running in the group
        os.killpg(pid, signal.SIGKILL)
    text = log.read_text(errors="replace") if log.exists() else ""
    lines = text.strip().splitlines() or [""]
    failed = re.search(r"^(?:FAILED|ERROR) (\S+)", text, re.MULTILINE)
    return TestRun(os.waitstatus_to_exitcode(status) == 0, lines[-1], failed.group(1) if failed else None)


def _stop_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


@contextlib.contextmanager
def replaced(copy: Path, path: str, old: str, new: str) -> Iterator[None]:
    """`path` in the copy with the one occurrence of `old` replaced by `new`, restored afterwards."""
    target = copy / path
    original = target.read_text()
    found = original.count(old)
    if found != 1:
        raise ValueError(f"{path}: expected the mutated text exactly once, found it {found} times: {old!r}")
    target.write_text(original.replace(old, new))
    try:
        yield
    finally:
        target.write_text(original)
