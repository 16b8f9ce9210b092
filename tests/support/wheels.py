"""The wheel built from this checkout and fresh venvs outside the repo to install it in, the way a user would:
`pip wheel --no-deps .`, then `pip install "duragent[extra] @ file:///...whl"` pinned by requirements.lock as
constraints (pip's cache makes them quick), in an environment with no PYTHONPATH into this checkout."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

from duragent._config.settings import ROOT

PIP_TIMEOUT = 600  # a cold pip cache downloads temporalio and pydantic-core
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def run(argv: list[str], *, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300) -> str:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (
        f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    )
    return done.stdout


def build_wheel(out: Path) -> Path:
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    run(
        [*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(ROOT)],
        cwd=out,
        env=isolated_env(),
    )
    [built] = out.glob("duragent-*.whl")
    return built


def constraints(tmp: Path, *, leave_out: tuple[str, ...] = ()) -> Path:
    """requirements.lock as pip constraints, less the packages a case pins otherwise."""
    lines = [
        line
        for line in (ROOT / "requirements.lock").read_text().splitlines()
        if line and not line.startswith("#") and line.split("==")[0].lower() not in leave_out
    ]
    path = tmp / "constraints.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def new_venv(tmp: Path, wheel: Path, requirement: str, *extra: str, leave_out: tuple[str, ...] = ()) -> Path:
    """A fresh venv outside the repo with the wheel installed as `requirement` (e.g. `duragent[testing]`)."""
    where = tmp / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(where)
    python = where / "bin" / "python"
    wanted = f"{requirement} @ {wheel.as_uri()}"  # `duragent[testing] @ file:///...whl`
    pinned = ["-c", str(constraints(tmp, leave_out=leave_out))]
    run(  # outside the checkout's PYTHONPATH: its duragent.egg-info would read as "already installed" to pip
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", wanted, *extra, *pinned],
        env=isolated_env(),
        cwd=tmp,
        timeout=PIP_TIMEOUT,
    )
    return python


def isolated_env(**more: str) -> dict[str, str]:
    """The environment of a user's shell: no PYTHONPATH into this checkout, no settings of the suite's."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_", "TEMPORAL_", "PYTHON"))}
    return keep | more
