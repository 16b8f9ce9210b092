"""`python -m bench peers`: the same scripted agent on ours and on what users would pick instead — pydantic-ai's
`TemporalAgent` and the OpenAI Agents SDK on Temporal (`temporalio.contrib.openai_agents`) — on one dev server.

One module per stack (`ours.py`, `pydantic_stack.py`, `openai_stack.py`: each an agent, its workflow and its
worker process; `worker_main.py`: the peers' worker process), what they share (`script.py`: the script and the
de-duplicating provider), the command (`command.py`) and its table (`report.py`, which `bench all`'s report
and the README table use too). The peers are the optional `peers` group (requirements-peers.lock, `make
peers`): only this package imports them, and only the modules of the stacks that need them.
"""

from __future__ import annotations

from importlib.util import find_spec

PEER_MODULES = {"pydantic-ai": "pydantic_ai.durable_exec.temporal", "openai-agents": "agents"}


def missing() -> list[str]:
    """The peers' packages that are not installed (`make peers` installs them)."""
    return [name for name, module in PEER_MODULES.items() if find_spec(module.split(".")[0]) is None]
