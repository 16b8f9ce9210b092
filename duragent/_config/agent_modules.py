"""Agents modules: how a worker, `job` and the command line learn which agents exist.

An agents module exports `agents` (a non-empty list of `Agent`) and, optionally, `make_deps(settings)`
returning the services its tools get as `ToolContext.deps`. Which modules: `--agents MODULE` flags
(repeatable), else `AGENT_MODULES` (comma-separated: `Settings.agent_modules`), else the caller's default: the
repository's starter.py and worker.py serve its demo agents (`examples`); the installed commands have none.
"""

from __future__ import annotations

import importlib
import os
import stat
import sys
from collections.abc import Iterable, Sequence
from types import ModuleType
from typing import Any

from agentic import Agent
from duragent._config.settings import Settings


class AgentModuleError(ValueError):
    """A module that cannot be imported or exports no agents."""


class UnknownAgentName(LookupError):
    """A name that none of the agents modules exports."""


def module_names(
    flags: Sequence[str] | None = None, configured: Sequence[str] = (), *, default: Sequence[str] = ()
) -> list[str]:
    """The modules named by the flags, else `configured` (the settings' AGENT_MODULES), else `default`; none at
    all is an error."""
    names = list(flags or configured or default)
    if not names:
        raise AgentModuleError(
            "no agents module named: give --agents MODULE (a module of yours exporting `agents`) or set AGENT_MODULES"
        )
    return names


def load_agents(names: Iterable[str]) -> list[Agent]:
    """The agents the named modules export, in order; nothing is started or opened."""
    agents: list[Agent] = []
    for name in names:
        agents += _agents_of(name, _import(name))
    return agents


def load_agents_and_deps(names: Iterable[str], settings: Settings) -> tuple[list[Agent], dict[str, Any]]:
    """The agents, and each agent's deps from its module's `make_deps(settings)` (called once a module)."""
    agents: list[Agent] = []
    deps: dict[str, Any] = {}
    for name in names:
        module = _import(name)
        exported = _agents_of(name, module)
        make_deps = getattr(module, "make_deps", None)
        module_deps = make_deps(settings) if callable(make_deps) else None
        agents += exported
        if module_deps is not None:
            deps |= {agent.name: module_deps for agent in exported if agent.name}
    return agents, deps


def find(agents: Sequence[Agent], name: str) -> Agent:
    for agent in agents:
        if agent.name == name:
            return agent
    known = ", ".join(sorted(a.name for a in agents if a.name)) or "none"
    raise UnknownAgentName(
        f"unknown agent {name!r}; known: {known} (agents of your own: --agents MODULE or AGENT_MODULES)"
    )


def _import(name: str) -> ModuleType:
    """The module, found as `python -m` would find it: a module in the current directory too (`duragent-worker
    --agents my_agents`, run where my_agents.py is). The current directory is searched last, so that a file there
    never shadows a module of ours, and only for this import: it is not left on `sys.path`, where every later
    import (an optional package that is not installed, say) would look for a file an attacker may have put
    there. A directory anyone may write to, or that is not the user's, is not searched at all."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        here = os.getcwd()
        if not _is_top_of(exc, name) or here in sys.path:
            raise AgentModuleError(f"cannot import agents module {name!r}: {exc}") from None
        if (unsafe := _unsafe(here)) is not None:
            raise AgentModuleError(
                f"cannot import agents module {name!r}: {exc} (the current directory {here} is not searched: "
                f"{unsafe}; add the directory that holds it to PYTHONPATH)"
            ) from None
        return _from_directory(name, here)
    except ImportError as exc:
        raise AgentModuleError(f"cannot import agents module {name!r}: {exc}") from None


def _from_directory(name: str, here: str) -> ModuleType:
    sys.path.append(here)
    try:
        return importlib.import_module(name)
    except ImportError as again:
        raise AgentModuleError(
            f"cannot import agents module {name!r}: {again} (searched the current directory {here} and "
            "sys.path; run from the directory that holds it, or add that directory to PYTHONPATH)"
        ) from None
    finally:
        while here in sys.path:
            sys.path.remove(here)
        importlib.invalidate_caches()


def _unsafe(directory: str) -> str | None:
    """Why code in `directory` must not be imported: another user may have put it there."""
    info = os.stat(directory)
    if info.st_mode & stat.S_IWOTH:
        return "anyone may write to it"
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return "it belongs to another user"
    return None


def _is_top_of(exc: ModuleNotFoundError, name: str) -> bool:
    """Whether what was not found is the named module (or its package), not something it imports."""
    return exc.name is not None and (name == exc.name or name.startswith(exc.name + "."))


def _agents_of(name: str, module: ModuleType) -> list[Agent]:
    exported = getattr(module, "agents", None)
    if not isinstance(exported, list | tuple) or not exported or not all(isinstance(a, Agent) for a in exported):
        raise AgentModuleError(f"module {name!r} must export `agents`, a non-empty list of Agent")
    unnamed = [a for a in exported if not a.name]
    if unnamed:
        raise AgentModuleError(f"module {name!r} exports an agent without a name (Agent(..., name=...))")
    return list(exported)
