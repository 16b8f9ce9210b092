"""What can go wrong in the baseline, each with the exit code the command line reports it with."""

from __future__ import annotations


class BaselineError(Exception):
    """A failure a user can act on: one line, no traceback."""

    exit_code = 1


class UnknownRun(BaselineError):
    pass


class RunExists(BaselineError):
    pass


class BadInput(BaselineError):
    exit_code = 2


class LeaseHeld(BaselineError):
    """Another worker holds the run's lease: taking it over could run the same step twice at once."""

    exit_code = 3


class LeaseLost(BaselineError):
    """This worker's lease was taken over; it must stop writing at once (it is the zombie now)."""

    exit_code = 3


class RunNotResumable(BaselineError):
    pass


class DeadLettered(BaselineError):
    pass


class CheckpointMismatch(BaselineError):
    """The loop asks for a different step than the one recorded: the code or the store changed. Guessing
    which one is right could repeat or skip an effect, so the run stops here."""

    exit_code = 4


class DecisionRejected(BaselineError):
    pass


class RunFailed(BaselineError):
    """A step failed in a way retrying cannot fix (a model error); the run is marked failed."""
