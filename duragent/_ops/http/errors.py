"""What the engines raise, and the HTTP status each one is: the app turns them into `{"error": why}`."""

from __future__ import annotations


class ApiError(Exception):
    status_code = 500
    headers: dict[str, str] | None = None  # sent with the error (`Retry-After`)

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class RunNotFound(ApiError):
    status_code = 404

    def __init__(self, run_id: str) -> None:
        super().__init__(f"unknown run id {run_id!r}")  # never the store's path or the namespace


class InvalidRequest(ApiError):
    """Well-formed but unusable (an unknown agent, options its model refuses, a URL that cannot be used)."""

    status_code = 422

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field


class Conflict(ApiError):
    """The run is not in a state that allows this (ended, not waiting, already decided, wrong hash)."""

    status_code = 409


class AtCapacity(ApiError):
    """Every slot for a run's worker process is taken: nothing was started; try again later. 429, not a 5xx:
    the server works as configured, a limit was reached (a 5xx here means a bug)."""

    status_code = 429

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.headers = {"Retry-After": str(retry_after)}


class EngineUnavailable(ApiError):
    """Temporal (or a worker) did not answer."""

    status_code = 503
