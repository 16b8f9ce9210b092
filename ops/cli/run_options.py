"""The run options both command lines share (`starter.py run` and `job run`): one definition of the flags,
of how each is validated (at parse time, with the same message in both CLIs), and of what they become —
the agent's opaque options, a step budget, an approval policy, a model name — so the runners cannot drift.

The demo agents' knobs (`--records`, `--fail-at`, ...) are sent only when given, as options the agent's
own options model validates; `--option KEY=VALUE` passes any option to an agent of your own.
"""

from __future__ import annotations

import argparse
import json
import typing
from dataclasses import dataclass, field
from typing import Any

from agentic import ModelSettings
from agentic.approvals import ApprovalPolicy
from examples.options import DemoOptions
from ops.cli.facts import memory_namespace

FAIL_AT = list(typing.get_args(DemoOptions.model_fields["fail_at"].annotation))

# flag -> option name, for the demo agents' knobs
DEMO_FLAGS = {
    "step_delay": "step_delay",
    "after_effect_delay": "after_effect_delay",
    "records": "records",
    "fail_at": "fail_at",
    "flaky_attempts": "flaky_attempts",
    "compensation_failures": "compensation_failures",
}


def positive_int(text: str) -> int:
    value = _number(text, int, "a whole number")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def non_negative_int(text: str) -> int:
    value = _number(text, int, "a whole number")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text}")
    return value


def positive_float(text: str) -> float:
    value = _number(text, float, "a number")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def non_negative_float(text: str) -> float:
    value = _number(text, float, "a number")
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text}")
    return value


def _number(text: str, kind: type, what: str) -> Any:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if kind is float and value != value:  # NaN
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return value


def option_pair(text: str) -> tuple[str, Any]:
    """`KEY=VALUE`; the value is read as JSON when it parses (numbers, true/false, lists), else as text."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
    return key.strip(), value


def add_run_option_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", help="the task (default: the agent's own)")
    parser.add_argument("--max-steps", type=positive_int, help="the step budget (default: the agent's)")
    parser.add_argument("--model", help="a model the worker declares, by name: `local`, `openai:gpt-4.1-mini`, ...")
    parser.add_argument("--base-url", help=argparse.SUPPRESS)  # refused with an explanation: see run_request
    asking = parser.add_argument_group("how the model is asked (overrides the agent's model settings)")
    asking.add_argument("--temperature", type=non_negative_float, help="sampling temperature (0 = repeatable)")
    asking.add_argument("--seed", type=int, help="sampling seed, where the server honours it")
    asking.add_argument("--max-tokens", type=positive_int, help="most tokens a model reply may have")
    asking.add_argument("--tool-choice", help="auto | required | none | a tool's name")
    asking.add_argument("--first-tool-choice", help="the same, for the first model call only")
    demo = parser.add_argument_group("demo agents' options (sent only when given)")
    demo.add_argument("--step-delay", type=non_negative_float, help="seconds of simulated work per mutating step")
    demo.add_argument("--after-effect-delay", type=non_negative_float, help="seconds a tool waits after its effect")
    demo.add_argument("--records", type=positive_int, help="records to migrate (migration)")
    demo.add_argument("--fail-at", choices=FAIL_AT, help="booking that fails permanently (trip; default car)")
    demo.add_argument("--flaky-attempts", type=non_negative_int, help="fail N attempts after the effect")
    demo.add_argument("--compensation-failures", type=non_negative_int, help="compensations fail N attempts (trip)")
    parser.add_argument(
        "--namespace",
        type=memory_namespace,
        help="whose memory the run's memory tools use (a customer, a tenant); sent as the option `namespace` "
        "(not the Temporal namespace, which is TEMPORAL_NAMESPACE)",
    )
    parser.add_argument(
        "--option", type=option_pair, action="append", default=[], metavar="KEY=VALUE", help="any agent option"
    )
    approvals = parser.add_argument_group("approval policy (replaces the agent's when any is given)")
    approvals.add_argument("--approval-timeout", type=positive_float, help="seconds an approval may wait (24 h)")
    approvals.add_argument("--on-decline", choices=["continue", "abandon"])
    approvals.add_argument("--on-expire", choices=["continue", "abandon"])


@dataclass(frozen=True)
class RunRequest:
    """What the flags ask for, before it becomes a Temporal input or a checkpoint row."""

    task: str | None
    max_steps: int | None
    model: str | None
    options: dict[str, Any] = field(default_factory=dict)
    approvals: ApprovalPolicy | None = None
    model_settings: ModelSettings | None = None


class RunOptionError(ValueError):
    """A flag that parsed but cannot be used (e.g. `--base-url`): one line for the user."""


def run_request(args: argparse.Namespace) -> RunRequest:
    if getattr(args, "base_url", None):
        raise RunOptionError(
            "--base-url is not accepted: a run never names an endpoint that receives the worker's API key. "
            "Configure endpoints on the worker (AGENT_LOCAL_MODEL_URL, AGENT_OPENAI_BASE_URL) and pick one "
            "with --model NAME"
        )
    options = {name: getattr(args, flag) for flag, name in DEMO_FLAGS.items() if getattr(args, flag) is not None}
    if args.namespace is not None:
        options["namespace"] = args.namespace
    options.update(dict(args.option))
    return RunRequest(
        task=args.task,
        max_steps=args.max_steps,
        model=args.model,
        options=options,
        approvals=approval_policy(args),
        model_settings=model_settings(args),
    )


def model_settings(args: argparse.Namespace) -> ModelSettings | None:
    given = {
        name: value
        for name in ("temperature", "seed", "max_tokens", "tool_choice", "first_tool_choice")
        if (value := getattr(args, name, None)) is not None
    }
    if not given:
        return None
    try:
        return ModelSettings(**given)
    except ValueError as exc:  # pydantic's message names the field
        raise RunOptionError(f"invalid model settings: {exc.errors()[0]['msg']}") from None  # type: ignore[attr-defined]


def approval_policy(args: argparse.Namespace) -> ApprovalPolicy | None:
    given = {
        key: value
        for key, value in {
            "timeout_seconds": args.approval_timeout,
            "on_decline": args.on_decline,
            "on_expire": args.on_expire,
        }.items()
        if value is not None
    }
    return ApprovalPolicy(**given) if given else None
