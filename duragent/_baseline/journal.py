"""The run's step journal: a replay cursor over the recorded steps, and the only way steps are written.

Replay and live execution are one path: at each step the runner builds the step it is about to take,
`match` returns the recorded row for that position (after checking it is the same step), and only when
there is none, or it was left `in_progress`, does the step execute.
"""

from __future__ import annotations

from typing import Any

from agentic import Usage
from duragent._baseline.crash import CrashHook
from duragent._baseline.errors import CheckpointMismatch
from duragent._baseline.lease import LeaseKeeper
from duragent._baseline.store import Progress, StepRow, StepSpec, Store, iso


class Journal:
    def __init__(
        self, store: Store, run_id: str, owner: str, lease: LeaseKeeper | None, crash: CrashHook, total: int | None
    ) -> None:
        self.store, self.run_id, self.owner, self.lease, self.crash = store, run_id, owner, lease, crash
        self.recorded: list[StepRow] = store.steps(run_id)
        self.cursor = 0
        self.estimate = total

    @property
    def next_step(self) -> int:
        return self.cursor + 1

    @property
    def live(self) -> bool:
        return self.cursor >= len(self.recorded)

    def peek(self) -> StepRow | None:
        return None if self.live else self.recorded[self.cursor]

    def match(self, spec: StepSpec) -> StepRow | None:
        """The recorded row at this position, if any — provided it is the step the loop asks for now."""
        row = self.peek()
        if row is not None and (row.step_name, row.input_hash) != (spec.name, spec.input_hash):
            raise CheckpointMismatch(
                f"checkpoint mismatch in run {self.run_id} at step {spec.step}: recorded {row.step_name} "
                f"(input {row.input_hash[:12]}), but the loop now asks {spec.name} (input {spec.input_hash[:12]}); "
                "refusing to guess"
            )
        return row

    def output(self, row: StepRow) -> Any:
        if row.output_ref is None:
            raise CheckpointMismatch(f"run {self.run_id}: completed step {row.step} has no output")
        return self.store.output(row.output_ref)

    def advance(self) -> None:
        self.cursor += 1

    def leftover(self) -> None:
        """Rows past where the run ended: the store describes a different run than the loop produces."""
        row = self.peek()
        if row is not None:
            raise CheckpointMismatch(
                f"checkpoint mismatch in run {self.run_id}: step {row.step} ({row.step_name}) is recorded, "
                "but the run ends before it; refusing to guess"
            )

    # -- writes -------------------------------------------------------------------------------------

    def progress(self, step: int, label: str) -> Progress:
        return Progress(step, self.total(), label)

    def total(self) -> int | None:
        known = max(len(self.recorded), self.cursor + 1)
        return max(self.estimate or 0, known) if self.estimate else None

    def before(self, spec: StepSpec) -> str:
        """Called right before a step executes (live or re-executed); returns its start time."""
        if self.lease is not None:
            self.lease.check()
        self.crash.at("before_intent", spec.step)
        row = self.peek()
        return row.started_at if row is not None else iso()

    def intend(self, spec: StepSpec) -> int:
        return self.store.intend(self.run_id, self.owner, spec, self.progress(spec.step, spec.label))

    def complete(
        self,
        spec: StepSpec,
        body: Any,
        *,
        started_at: str,
        status: str = "completed",
        consumed: Usage | None = None,
        attempts: int = 1,
        handles_cancel: bool = False,
    ) -> None:
        self.crash.at("after_effect", spec.step)
        self.store.complete(
            self.run_id,
            self.owner,
            spec,
            body,
            started_at=started_at,
            progress=self.progress(spec.step, spec.label),
            status=status,
            consumed=consumed,
            attempts=attempts,
            handles_cancel=handles_cancel,
        )
        self.crash.at("after_complete", spec.step)
        self.advance()
