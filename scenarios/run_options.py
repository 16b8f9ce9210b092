"""The run options both command lines share (`starter.py run` and `job run`): one definition of the flags
and of how they become `ScenarioOptions` and an `ApprovalPolicy`, so the two runners cannot drift apart."""

from __future__ import annotations

import argparse
import typing

from agentic.approvals import ApprovalPolicy
from scenarios.base import ScenarioOptions

FAIL_AT = list(typing.get_args(ScenarioOptions.model_fields["fail_at"].annotation))


def add_run_option_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", help="override the scenario's task")
    parser.add_argument("--max-steps", type=int, help="override the scenario's step budget")
    parser.add_argument("--step-delay", type=float, default=0.0, help="seconds of simulated work per mutating step")
    parser.add_argument("--after-effect-delay", type=float, default=0.0, help="seconds a tool waits after its effect")
    parser.add_argument("--records", type=int, default=5, help="records to migrate (migration)")
    parser.add_argument("--fail-at", choices=FAIL_AT, default="car", help="booking that fails permanently (trip)")
    parser.add_argument("--flaky-attempts", type=int, default=0, help="fail N attempts after the effect")
    parser.add_argument("--compensation-failures", type=int, default=0, help="compensations fail N attempts (trip)")
    parser.add_argument("--approval-timeout", type=float, help="seconds an approval may wait (default 24 h)")
    parser.add_argument("--on-decline", choices=["continue", "abandon"], default="continue")
    parser.add_argument("--on-expire", choices=["continue", "abandon"], default="continue")


def scenario_options(args: argparse.Namespace) -> ScenarioOptions:
    """Raises pydantic.ValidationError (a ValueError) on values out of range."""
    return ScenarioOptions(
        step_delay=args.step_delay,
        after_effect_delay=args.after_effect_delay,
        records=args.records,
        fail_at=args.fail_at,
        flaky_attempts=args.flaky_attempts,
        compensation_failures=args.compensation_failures,
    )


def approval_policy(args: argparse.Namespace) -> ApprovalPolicy:
    timeout = {"timeout_seconds": args.approval_timeout} if args.approval_timeout else {}
    return ApprovalPolicy(on_decline=args.on_decline, on_expire=args.on_expire, **timeout)
