"""The managed model server (duragent/_ops/devstack/modelserver.py, `starter.py model-server`): started, health-checked,
stopped by pid on Ctrl-C, SIGTERM or SIGHUP; bad input refused with one clear line."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path

import pytest

from duragent._config.settings import ROOT, Settings
from duragent._ops.devstack import modelserver
from duragent._ops.devstack.devserver import free_port, port_open

_llm_installed = pytest.mark.skipif(modelserver.missing() is not None, reason=str(modelserver.missing()))


def needs_llm(test: Callable[..., None]) -> Callable[..., None]:
    """Needs the `llm` group (a model server of its own): skipped without it, `-m llm` selects it."""
    return pytest.mark.llm(_llm_installed(test))


def model_server_command(tmp_path: Path, *args: str, sigint_ignored: bool = False) -> subprocess.Popen[str]:
    """`sigint_ignored`: started as a shell script's background job is (`starter.py model-server &`), with
    SIGINT ignored — which Python then leaves ignored instead of raising KeyboardInterrupt."""
    return subprocess.Popen(
        [sys.executable, str(ROOT / "starter.py"), "model-server", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "AGENT_DATA_DIR": str(tmp_path)},
        preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if sigint_ignored else None,
    )


@pytest.fixture
def listening() -> Iterator[int]:
    """A port something else already listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


@needs_llm
@pytest.mark.parametrize(
    ("signum", "sigint_ignored"),
    [(signal.SIGTERM, False), (signal.SIGHUP, False), (signal.SIGINT, False), (signal.SIGINT, True)],
    ids=["SIGTERM", "SIGHUP", "SIGINT", "SIGINT-started-ignored"],
)
def test_the_command_serves_until_a_signal_then_stops_its_child(
    tmp_path: Path, signum: int, sigint_ignored: bool
) -> None:
    port = free_port()
    command = model_server_command(tmp_path, "--port", str(port), "--n-ctx", "256", sigint_ignored=sigint_ignored)
    child = None
    try:
        banner = command.stdout.readline()  # type: ignore[union-attr]
        assert f"Model server on http://127.0.0.1:{port}/v1" in banner, command.stderr.read()  # type: ignore[union-attr]
        child = int(banner.split("(pid ")[1].split(")")[0])
        assert modelserver.healthy(f"http://127.0.0.1:{port}/v1")
        # One thread to generate and to read prompts unless told otherwise (DEFAULT_THREADS: llama.cpp's own
        # default spins its threads against busy neighbours, many times the CPU for the same tokens).
        arguments = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        threads = [arguments[arguments.index(flag) + 1] for flag in (b"--n_threads", b"--n_threads_batch")]
        assert threads == [b"1", b"1"]

        command.send_signal(signum)

        assert command.wait(30) == 0
    finally:
        if command.poll() is None:
            command.kill()
            command.wait()
            if child is not None:  # in its own session: the command's SIGKILL leaves it running, so stop it here
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signal.SIGKILL)
    assert not port_open("127.0.0.1", port)
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)  # reaped by the command, not left running in its own session
    assert (tmp_path / "model-server" / f"{port}.log").is_file()


@needs_llm
def test_a_missing_model_file_is_one_clear_line(tmp_path: Path) -> None:
    command = model_server_command(tmp_path, "--port", str(free_port()), "--model", str(tmp_path / "no.gguf"))
    _, err = command.communicate(timeout=60)
    assert command.returncode == 1
    assert err.strip() == f"error: no model file at {tmp_path / 'no.gguf'}"


@needs_llm
def test_a_busy_port_is_refused(tmp_path: Path, listening: int) -> None:
    with pytest.raises(modelserver.ModelServerError, match=f"port {listening} is already in use"):
        modelserver.start(listening, log=tmp_path / "server.log")


@needs_llm
def test_a_model_that_fails_to_load_reports_the_servers_own_words(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"not a model")
    with pytest.raises(modelserver.ModelServerError, match="the model server exited with code") as caught:
        modelserver.start(free_port(), model=bogus, log=tmp_path / "server.log", timeout=60)
    assert str(tmp_path / "server.log") in str(caught.value)


def test_the_skip_line_names_the_missing_package(monkeypatch: pytest.MonkeyPatch) -> None:
    def not_installed(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(modelserver.metadata, "version", not_installed)
    reason = modelserver.missing()
    assert reason is not None and reason.startswith('llama-cpp-python is not installed: pip install "duragent[llm]"')


def test_no_server_at_the_url_is_a_clear_error() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    assert not modelserver.healthy(url)
    with pytest.raises(modelserver.ModelServerError, match=f"no model server answers at {url}"):
        modelserver.wait_until_healthy(url, timeout=0.5)


def test_the_workers_local_model_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_LOCAL_MODEL_URL", raising=False)
    assert Settings().local_model_url == "http://127.0.0.1:8088/v1"
    monkeypatch.setenv("AGENT_LOCAL_MODEL_URL", "http://models.internal:9000/v1")
    assert Settings().local_model_url == "http://models.internal:9000/v1"


def test_the_prompt_cache_is_on_and_bounded():
    """The RAM cache of prompt states is what makes repeated prompts cheap (docs/local-model.md); llama-cpp's
    own default size is 2 GiB, about 70 states of 30 MB held for the server's life: ours stays far below."""
    command = modelserver.server_command(Path("m.gguf"), 8088)
    flags = dict(zip(command[3::2], command[4::2], strict=False))
    assert flags["--cache"] == "true" and flags["--cache_type"] == "ram"
    assert int(flags["--cache_size"]) == modelserver.PROMPT_CACHE_BYTES <= 512 << 20
