"""`TurnParents` (duragent/_activities/turn_parents.py): a run named as a conversation's turn belongs to that
conversation only when the server's parent link says so; the answer is asked once per run and remembered, for at
most `remembered` runs. The server's answer stands in as a parent link by workflow id (the attacker tests with a
real server: tests/temporal/test_rogue_worker.py); what is tested here is the name rule and the memory's bound."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from duragent._activities import turn_parents
from duragent._activities.turn_parents import TurnParents

pytestmark = pytest.mark.unit


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The runs the server was asked about; each run `X~turn-N`'s parent is `X`, except under `rogue`."""
    runs: list[str] = []

    async def describe(run_id: str, execution: str | None = None) -> object:
        runs.append(run_id)
        parent = "" if run_id.startswith("rogue") else run_id.rsplit("~turn-", 1)[0]
        execution_info = SimpleNamespace(parent_execution=SimpleNamespace(workflow_id=parent))
        return SimpleNamespace(raw_description=SimpleNamespace(workflow_execution_info=execution_info))

    monkeypatch.setattr(turn_parents, "describe", describe)
    return runs


async def test_a_turn_is_its_conversations_only_by_the_parent_link_and_is_asked_once(asked: list[str]) -> None:
    parents = TurnParents()
    assert await parents.conversation_of("c1~turn-1") == "c1"
    assert await parents.conversation_of("c1~turn-1") == "c1"
    assert await parents.conversation_of("rogue~turn-9") is None  # named as a turn, started by no conversation
    assert await parents.conversation_of("plain-run") is None  # not named as a turn: the server is not asked
    assert asked == ["c1~turn-1", "rogue~turn-9"]


async def test_the_memory_keeps_the_most_recently_used_runs_up_to_its_bound(asked: list[str]) -> None:
    parents = TurnParents(remembered=2)
    for run in ("a~turn-1", "b~turn-1", "a~turn-1", "c~turn-1"):  # b is the least recently used when c comes
        await parents.conversation_of(run)
    await parents.conversation_of("a~turn-1")
    await parents.conversation_of("b~turn-1")
    assert asked == ["a~turn-1", "b~turn-1", "c~turn-1", "b~turn-1"]
