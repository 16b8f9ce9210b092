"""A command line's `main` run in the test's own process, with a command's environment and its output captured:
for commands whose process boundary the test does not check. A `starter.py` or `job` subprocess costs about a
second of CPU, mostly imports, and `make test` ran some 300 of them; the process path stays covered by the tests
that spawn on purpose (crashes, signals, servers, clean exits, the spawned bad-input cases)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from unittest import mock

from duragent import _clean_exit as clean_exit


@contextlib.contextmanager
def environment(env: dict[str, str]) -> Iterator[None]:
    """This process's environment is `env` until the block ends, then what it was."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def runtimes_kept() -> Iterator[None]:
    """A command's handler ends by releasing the Temporal runtimes, for its process's exit
    (duragent/_clean_exit.py): the default one dropped, then a full garbage collection — 0.2 s of CPU in
    a test process holding the collected suite, for every command a test runs in it. Here the command's end is
    not the process's: the runtimes stay. The release is tested where it matters, in processes
    (tests/temporal/test_runtimes_released.py, test_clean_exit.py)."""
    with mock.patch.object(clean_exit, "release_runtimes", lambda: None):
        yield


def run_main(main: Callable[[list[str]], int], argv: Sequence[str], env: dict[str, str]) -> tuple[int, str, str]:
    """`main(argv)` with `env` as the environment: (exit code, stdout, stderr). Files, not StringIO: what the
    command starts (an MCP server on stdio) inherits `sys.stderr` by its file descriptor. Not bounded by a
    timeout here: pytest-timeout bounds the command with its test."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        with environment(env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), runtimes_kept():
            code = main(list(argv))
        out.seek(0)
        err.seek(0)
        return code, out.read(), err.read()
