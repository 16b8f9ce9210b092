"""What `run` takes in both command lines (`starter.py run` and `job run`): one definition of the flags, of
how each is validated (at parse time, with the same message in both CLIs), and of what they become — the
agent and the run id, the agent's opaque options, a step budget, an approval policy, a model name and its
settings — so the runners cannot drift.

An agent's own options (the demo agents' `records`, `step_delay`, `fail_at`, ...) are `--option KEY=VALUE`,
validated by that agent's options model when the run starts: this module knows no agent.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from agentic import ModelSettings
from agentic.approvals import ApprovalPolicy
from duragent._ops.cli.arguments import add_agent, non_negative_float, positive_float, positive_int
from duragent._ops.cli.arguments import run_id as run_id_type
from duragent._ops.cli.facts import memory_namespace


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


# 0.1's flags for the demo agents' knobs, kept for 0.2.x (CHANGELOG.md): each is `--option KEY=VALUE` now.
MOVED_TO_OPTION = (
    "--step-delay",
    "--after-effect-delay",
    "--records",
    "--fail-at",
    "--flaky-attempts",
    "--compensation-failures",
)


class MovedToOption(argparse.Action):
    """`--step-delay 0.5` is `--option step_delay=0.5`, with one warning line naming the new spelling."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, _: Any = None):
        key, value = option_pair(f"{self.dest}={values}")
        flag = "--" + self.dest.replace("_", "-")
        print(f"warning: {flag} is now --option {key}=VALUE; {flag} goes in 0.3 (CHANGELOG.md)", file=sys.stderr)
        namespace.option = [*(getattr(namespace, "option", None) or []), (key, value)]


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The agent, the new run's id, and how it runs."""
    add_agent(parser)
    parser.add_argument(
        "--id", dest="run_id", type=run_id_type, help="the new run's id (generated when omitted); never reused"
    )
    parser.add_argument("--task", help="the task (default: the agent's own)")
    parser.add_argument("--max-steps", type=positive_int, help="the step budget (default: the agent's)")
    parser.add_argument("--model", help="a model the worker declares, by name: `local`, `openai:gpt-4.1-mini`, ...")
    parser.add_argument("--base-url", help=argparse.SUPPRESS)  # refused with an explanation: see run_request
    parser.add_argument(
        "--option",
        type=option_pair,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="one of the agent's own options, validated by its options model when the run starts (repeatable; "
        "the value is read as JSON when it parses: `--option records=3 --option fail_at=none`)",
    )
    for flag in MOVED_TO_OPTION:
        parser.add_argument(flag, action=MovedToOption, help=argparse.SUPPRESS)
    parser.add_argument(
        "--namespace",
        type=memory_namespace,
        help="whose memory the run's memory tools use (a customer, a tenant); sent as the option `namespace` "
        "(not the Temporal namespace, which is TEMPORAL_NAMESPACE)",
    )
    asking = parser.add_argument_group("how the model is asked (overrides the agent's model settings)")
    asking.add_argument("--temperature", type=non_negative_float, help="sampling temperature (0 = repeatable)")
    asking.add_argument("--seed", type=int, help="sampling seed, where the server honours it")
    asking.add_argument("--max-tokens", type=positive_int, help="most tokens a model reply may have")
    asking.add_argument("--tool-choice", help="auto | required | none | a tool's name")
    asking.add_argument("--first-tool-choice", help="the same, for the first model call only")
    approvals = parser.add_argument_group("approval policy (replaces the agent's when any is given)")
    approvals.add_argument("--approval-timeout", type=positive_float, help="seconds an approval may wait (24 h)")
    approvals.add_argument("--on-decline", choices=["continue", "abandon"])
    approvals.add_argument("--on-expire", choices=["continue", "abandon"])


@dataclass(frozen=True)
class RunRequest:
    """What the flags ask for, before it becomes a Temporal input or a checkpoint row."""

    agent: str
    run_id: str | None
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
    options: dict[str, Any] = {} if args.namespace is None else {"namespace": args.namespace}
    options.update(dict(args.option))
    return RunRequest(
        agent=args.agent,
        run_id=args.run_id,
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
    except ValidationError as exc:  # named as the user typed it: `--temperature`, not `temperature`
        first = exc.errors()[0]
        flag = "--" + str(first["loc"][0]).replace("_", "-") if first["loc"] else "a model setting"
        raise RunOptionError(f"{flag}: {first['msg']}") from None


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
