"""Retry policies, stated explicitly, with the errors retrying cannot fix named as non-retryable."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from agentic.saga import SagaPolicy

# Describing the agent is a lookup in the worker's own set: its rejections are final, and anything else
# (the worker stopping mid-task) is worth a few quick tries.
DESCRIBE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_attempts=5,
    non_retryable_error_types=["UnknownAgent", "UnknownModel", "InvalidOptions"],
)

# Listing MCP tools when a run starts: a server that is down gets a few tries, then the run fails with the
# reason; a configuration that cannot work fails it at once.
MCP_LIST_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_attempts=3,
    non_retryable_error_types=["MCPConfigError", "UnknownAgent"],
)

# The first retry comes soon: when a worker dies mid-call, the call is retried on another worker this long
# after its heartbeat timeout noticed (recovery after a crash, docs/benchmarks.md). The backoff then
# doubles, and the attempts are as many as keep trying for as long as before the first interval was 1 s: about
# two minutes for a model call (0.25 + 0.5 + ... + 32 + 60 s), 30 s for a tool call (0.25 + ... + 16 s).
FIRST_RETRY = timedelta(seconds=0.25)

MODEL_RETRY = RetryPolicy(
    initial_interval=FIRST_RETRY,
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=60),
    maximum_attempts=10,
    non_retryable_error_types=[
        "NonRetryableModelError",
        "ModelOutputError",
        "ConfigurationError",
        "UnknownAgent",
        "UnknownModel",
    ],
)

# A tool that keeps failing transiently is eventually reported to the model, like the in-process agent does.
TOOL_RETRY = RetryPolicy(
    initial_interval=FIRST_RETRY,
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=8,
    non_retryable_error_types=["ConfigurationError", "UnknownAgent", "InvalidOptions"],
)


def compensation_retry(policy: SagaPolicy) -> RetryPolicy:
    return RetryPolicy(
        initial_interval=timedelta(seconds=policy.initial_interval_seconds),
        backoff_coefficient=2.0,
        maximum_interval=timedelta(seconds=policy.maximum_interval_seconds),
        maximum_attempts=policy.max_attempts,
        non_retryable_error_types=["CompensationImpossible"],
    )


# Waiting for a delegated run found under the id a call derived (agent.py, `_run_child`): as long as it takes,
# on any worker; an id taken by another run, or the run's own failure, is final.
ATTACH_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    non_retryable_error_types=["DelegateIdTaken", "DelegateFailed"],
)

# Waiting for a conversation's turn that an earlier run of it started (duragent/_activities/turns.py): as long as
# it takes; a run under the turn's id that the conversation did not start, or the turn's own failure, is final.
TURN_ATTACH_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    non_retryable_error_types=["TurnIdTaken", "TurnFailed", "CallerRefused"],
)
