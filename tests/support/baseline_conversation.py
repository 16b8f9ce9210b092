"""A process that sends messages to a checkpoint conversation, one per argument, and prints each answer: what the
kill test kills mid-turn (`BASELINE_CRASH_AT`) and then resumes in its own process.

    python -m tests.support.baseline_conversation DB LEDGER CONVERSATION_ID TEXT...
"""

from __future__ import annotations

import sys
from pathlib import Path

from agentic.agent_set import AgentSet
from duragent._baseline.conversation import CheckpointConversation
from duragent._baseline.store import Store
from duragent._stores.ledger import EffectsLedger
from examples.options import DemoDeps
from tests.support.conversation_agents import CHAT


def conversation(db: Path, ledger: Path, conversation_id: str) -> CheckpointConversation:
    agents = AgentSet([CHAT], DemoDeps(EffectsLedger(ledger)))
    return CheckpointConversation(Store(db), agents, conversation_id, "t-chat", run_options={"lease_seconds": 1.0})


def main(argv: list[str]) -> int:
    db, ledger, conversation_id, *texts = argv
    chat = conversation(Path(db), Path(ledger), conversation_id)
    for text in texts:
        print(chat.send(text).output, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
