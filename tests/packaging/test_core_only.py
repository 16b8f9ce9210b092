"""The wheel installed with no extra at all (`pip install duragent`): every public module imports, and every
optional part, reached the way a user reaches it, says in one line which extra it needs — never a
ModuleNotFoundError of a package nobody declared. Real venv, real pip, the installed commands.

tests/packaging/test_extras.py checks the same parts by hiding one package at a time in the checkout's venv;
this one catches what hiding cannot: an import of something the core does not declare at all."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agentic.extras import EXTRAS
from duragent._config.settings import ROOT
from tests.support.wheels import isolated_env, new_venv

# Processes of its own (pip, a venv, the installed commands).
pytestmark = pytest.mark.system

# duragent.pytest_plugin is a part: pytest's, with the `testing` extra (below).
PUBLIC_MODULES = ["duragent", "duragent.testing", "duragent.replay", "agentic"]
if (ROOT / "duragent" / "workflow.py").exists() or (ROOT / "duragent" / "workflow").is_dir():
    PUBLIC_MODULES.append("duragent.workflow")


def needs(extra: str) -> str:
    """The line a part without `extra` says: agentic/extras.py's MissingExtra, or the binaries' own."""
    return f'the `{extra}` extra: pip install "duragent[{extra}]"'


# part -> (its extra, the command in the venv's bin/ or a Python snippet, the environment it needs)
PARTS: dict[str, tuple[str, list[str], dict[str, str]]] = {
    "openai": ("openai", ["python", "-c", "import agentic.models.openai_chat"], {}),
    "mcp": (
        "mcp",
        [
            "python",
            "-c",
            "from duragent import Agent, FakeModel, MCPServer, Registry\n"
            "Agent(FakeModel(['Done.']), Registry([]), mcp=[MCPServer.stdio('files', command='true')]).run('Go')",
        ],
        {},
    ),
    "llm": ("llm", ["duragent", "model-server"], {}),
    "http": ("http", ["duragent", "codec-server", "--port", "1"], {}),
    "postgres": ("postgres", ["duragent", "migrate"], {"AGENT_DATABASE_URL": "postgresql://nobody@127.0.0.1:9/none"}),
    "otel": (
        "otel",
        ["python", "-c", "from duragent import DurableAgentsPlugin; DurableAgentsPlugin()"],
        {"AGENT_OTEL": "1"},
    ),
    "server": ("server", ["duragent", "server", "--port", "1"], {}),
    "testing": (
        "testing",
        [
            "python",
            "-c",
            "import asyncio, duragent.testing as t\nasyncio.run(t.start_time_skipping())",
        ],
        {},
    ),
    "pytest_plugin": ("testing", ["python", "-c", "import duragent.pytest_plugin"], {}),
}


@pytest.fixture(scope="module")
def core(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The venv's bin/: the wheel with its core dependencies only."""
    return new_venv(tmp_path_factory.mktemp("core"), wheel, "duragent").parent


def in_core(bin_dir: Path, argv: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(bin_dir / argv[0]), *argv[1:]],
        cwd=cwd,
        env=isolated_env(AGENT_DATA_DIR=str(cwd / "data"), **env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_no_extra_is_installed_and_every_public_module_imports(core: Path, tmp_path: Path) -> None:
    probe = (
        "import importlib, importlib.util\n"
        f"extras = {sorted({m for modules, _ in EXTRAS.values() for m in modules})!r}\n"
        "print(sorted(m for m in extras if importlib.util.find_spec(m.split('.')[0]) is not None))\n"
        f"for name in {PUBLIC_MODULES!r}:\n"
        "    importlib.import_module(name)\n"
        "import duragent\n"
        "print(len([getattr(duragent, name) for name in duragent.__all__]))\n"
    )
    done = in_core(core, ["python", "-c", probe], tmp_path)
    assert done.returncode == 0, done.stderr
    installed, names = done.stdout.split("\n")[:2]
    # The core's own dependencies bring a few of them (starlette through nothing, anyio through httpx): none of
    # the packages that make a part (openai, mcp, psycopg, fastapi, llama_cpp, opentelemetry.sdk) is here.
    assert not {"openai", "mcp", "httpx2", "psycopg", "fastapi", "uvicorn", "llama_cpp"} & set(eval(installed))
    assert int(names) > 40


@pytest.mark.parametrize("part", PARTS)
def test_each_optional_part_without_its_extra_says_which_in_one_line(part: str, core: Path, tmp_path: Path) -> None:
    extra, argv, env = PARTS[part]
    done = in_core(core, argv, tmp_path, **env)
    assert done.returncode != 0, done.stdout
    said = [line for line in done.stderr.strip().splitlines() if line.strip()]
    assert not [line for line in said if line.startswith("ModuleNotFoundError")], done.stderr
    last = said[-1]  # a Python snippet's traceback ends with the error; a command prints only that line
    if argv[0] == "duragent":
        assert len(said) == 1, done.stderr
    assert needs(extra) in last, done.stderr


PLANTED = "from pathlib import Path\nPath(__file__).with_name('PWNED').write_text('imported')\nagents = []\n"


@pytest.mark.parametrize(
    "argv",
    [["duragent", "run", "refund"], ["duragent-worker"], ["duragent", "serve"], ["duragent-job", "run", "refund"]],
)
def test_an_installed_command_imports_no_examples_module_planted_where_it_runs(
    argv: list[str], core: Path, tmp_path: Path
) -> None:
    """The attacker puts `examples.py` (and an `examples/` package) where an operator runs the command: with no
    agents module named, the command says so in one line and imports nothing."""
    (tmp_path / "examples.py").write_text(PLANTED)
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "__init__.py").write_text(PLANTED)
    done = in_core(core, argv, tmp_path, TEMPORAL_ADDRESS="127.0.0.1:1")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: no agents module named: give --agents MODULE (a module of yours exporting `agents`) or set "
        "AGENT_MODULES"
    ]
    assert not (tmp_path / "PWNED").exists() and not (tmp_path / "examples" / "PWNED").exists()


def test_the_installed_help_leads_with_what_works_from_a_pip_install(core: Path, tmp_path: Path) -> None:
    done = in_core(core, ["duragent", "--help"], tmp_path)
    assert done.returncode == 0, done.stderr
    examples = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("    duragent ")]
    assert examples[:4] == ["run", "watch", "status", "pending"] and "serve" in examples[:6]
    listed = done.stdout.split("{", 1)[1].split("}", 1)[0].split(",")
    assert listed[0] == "run" and listed[-1] == "demo"  # the repository's demo last: the wheel has no demo agents
    assert "starter.py" not in done.stdout and "the exit codes are in docs/cli.md" in done.stdout


def test_the_repositorys_demo_says_where_it_runs(core: Path, tmp_path: Path) -> None:
    done = in_core(core, ["duragent", "demo"], tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: `demo` runs the repository's demo agents (examples/), which an install does not have: run `make "
        "demo` in a clone of the repository"
    ]
