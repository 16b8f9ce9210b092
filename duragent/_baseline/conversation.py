"""A conversation on the checkpoint runner: each turn a run `{conversation_id}~turn-{n}` in the same SQLite store,
whose history is the previous turn's transcript (`RunOptions.history_from`, rebuilt from that run's steps): the
lessons' `history=` meaning, with the refusals and budgets of `agentic.conversation`, as the durable conversation.

A process killed mid-turn loses nothing: the turn is a run like any other (its steps checkpointed, its effects
keyed by its run id), and the next `send` — or `resume()` — finishes it first, once its lease has expired.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from agentic import Budget, Usage
from agentic.agent_set import AgentSet
from agentic.conversation import ConversationLimits, MessageRefused, over_budget, refusal, turn_budget
from duragent._baseline import jobs
from duragent._baseline.options import RunOptions
from duragent._baseline.store import RunRow, Store

TURN = "~turn-"


@dataclass
class CheckpointConversation:
    store: Store
    agents: AgentSet
    conversation_id: str
    agent: str
    budget: Budget | None = None
    turn_budget: Budget | None = None
    limits: ConversationLimits = field(default_factory=ConversationLimits)
    run_options: dict[str, Any] = field(default_factory=dict)  # more `RunOptions` for every turn (lease_seconds...)

    def turns(self) -> list[RunRow]:
        """The conversation's turns so far, in order."""
        rows = self.store.query("SELECT run_id FROM runs WHERE run_id LIKE ?", (f"{self.conversation_id}{TURN}%",))
        found = [self.store.require(row["run_id"]) for row in rows]
        return sorted(found, key=lambda run: int(run.run_id.rpartition(TURN)[2]))

    @property
    def consumed(self) -> Usage:
        total = Usage()
        for run in self.turns():
            total = total.plus(run.consumed)
        return total

    def send(self, text: str, *, expect_turn: int | None = None) -> RunRow:
        """One turn: the unfinished one first (a crash), then this message's. Raises MessageRefused."""
        self.resume()
        done = self.turns()
        consumed = self.consumed
        why = refusal(
            text,
            limits=self.limits,
            closed=None,
            turns=len(done),
            queued=0,
            expect_turn=expect_turn,
            over_budget=over_budget(self.budget, consumed),
        )
        if why is not None:
            raise MessageRefused(why.kind, why.reason)
        served = self.agents.get(self.agent)
        budget = turn_budget(self.budget, consumed, self.turn_budget or served.agent.budget)
        assert not isinstance(budget, str)  # `refusal` checked the conversation's budget
        options = RunOptions(
            task=text, budget=budget, history_from=done[-1].run_id if done else None, **self.run_options
        )
        return jobs.start(self.store, self.agents, f"{self.conversation_id}{TURN}{len(done) + 1}", self.agent, options)

    def resume(self, timeout: float = 120.0) -> RunRow | None:
        """The last turn, finished if a crash left it unfinished (waiting for its lease to expire)."""
        done = self.turns()
        if not done or done[-1].terminal:
            return done[-1] if done else None
        deadline = time.monotonic() + timeout
        while self.store.require(done[-1].run_id).lease_expires > time.time():
            if time.monotonic() > deadline:
                raise TimeoutError(f"turn {done[-1].run_id} is still leased by a live worker")
            time.sleep(0.1)
        return jobs.resume(self.store, self.agents, done[-1].run_id)
