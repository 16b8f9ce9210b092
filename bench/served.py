"""What the bench serves, and where: `bench-noop` (bench/agents.py), the delegation bench's agents
(bench/delegation_agents.py) and the demo agents (examples/).

The same two agents modules everywhere: in our worker processes (through `AGENT_MODULES`, as
`python worker.py --agents bench.agents --agents examples` would), in the `job` processes the bench starts
(`--agents`), and in the bench's own process (an `AgentSet`, for the in-process baseline runs).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from agentic.agent_set import AgentSet
from duragent._config.agent_modules import load_agents_and_deps
from duragent._config.settings import Settings

MODULES = ("bench.agents", "bench.delegation_agents", "examples")

# `job run|resume` arguments that make a baseline process serve them.
JOB_AGENTS = [arg for module in MODULES for arg in ("--agents", module)]


def worker_env(data_dir: Path) -> dict[str, str]:
    """The environment of a worker process of ours: the agents, and its transcripts in `data_dir` (the
    bench's scratch directory, never the repository's)."""
    return {"AGENT_MODULES": ",".join(MODULES), "AGENT_DATA_DIR": str(data_dir), "LOG_LEVEL": "WARNING"}


def agent_set(ledger_path: Path) -> AgentSet:
    """The agents for runs in this process (`duragent._baseline.jobs`), their effects recorded in `ledger_path`:
    what `job --agents ... --ledger PATH` builds."""
    settings = dataclasses.replace(Settings(), ledger_path=ledger_path)
    agents, deps = load_agents_and_deps(MODULES, settings)
    return AgentSet(agents, deps, where="in the bench process")
