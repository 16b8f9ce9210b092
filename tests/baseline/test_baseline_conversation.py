"""The checkpoint runner's conversation: turns over one SQLite store, each continuing the previous turn's
transcript; a process killed mid-turn (kill -9 by the crash hook, after the turn's effect) is resumed by the next
send, and the effect is made once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agentic.conversation import MessageRefused
from duragent._config.settings import ROOT
from duragent._stores.ledger import EffectsLedger
from tests.support.baseline_conversation import conversation

pytestmark = pytest.mark.system


def test_a_conversation_killed_mid_turn_resumes_and_its_effect_is_made_once(tmp_path: Path) -> None:
    db, ledger = tmp_path / "baseline.db", tmp_path / "ledger.db"
    command = [sys.executable, "-m", "tests.support.baseline_conversation", str(db), str(ledger), "c-1"]
    first = subprocess.run([*command, "hello"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert first.stdout.splitlines() == ["You said 'hello' (turn 1, 2 messages)"], first.stderr
    # The second turn's process dies right after its tool wrote the row (its step 2), before checkpointing it.
    crash = os.environ | {"BASELINE_CRASH_AT": "after_effect:2"}
    killed = subprocess.run([*command, "row r-1"], cwd=ROOT, env=crash, capture_output=True, text=True, timeout=60)
    assert killed.returncode == -signal.SIGKILL
    assert len(EffectsLedger(ledger).effects("c-1~turn-2")) == 1

    chat = conversation(db, ledger, "c-1")
    third = chat.send("and now?")  # finishes turn 2 first, from the store alone
    turns = chat.turns()
    assert [t.status for t in turns] == ["completed", "completed", "completed"]
    assert turns[1].output == "Done: wrote r-1 (turn 2)"
    assert third.output == "You said 'and now?' (turn 3, 8 messages)"  # it saw turn 2 once, whole
    assert [e.key for e in EffectsLedger(ledger).effects("c-1~turn-2")] == ["c-1~turn-2:1.1"]
    assert chat.consumed == turns[0].consumed.plus(turns[1].consumed).plus(turns[2].consumed)
    with pytest.raises(MessageRefused) as stale:
        chat.send("late", expect_turn=3)
    assert stale.value.kind == "StaleTurn"
