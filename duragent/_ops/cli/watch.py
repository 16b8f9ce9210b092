"""`watch`: a run's progress, live, until it closes — for a person at a terminal, or as JSON lines.

The `progress` query is asked about twice a second. On a terminal one line is redrawn in place (a bar of
actions against the agent's estimate, or of steps against `max_steps` for an agent without one; the label,
tokens, cost, and for an approval wait the tool and the time left to its deadline); otherwise a line is
printed per change. `--json` prints one JSON object per change (`"type": "progress"`) and a final
`"type": "result"` object. The run's end comes from its result, so the
final state is printed even if it closed between two polls.

When the run does not move, the line says what it waits for (duragent/_ops/cli/waits.py: a worker on the task queue,
or the model / a tool whose calls keep failing). When the Temporal server goes away, that is said on one
line and the exit code is 1 (the SDK core's own retry warnings are kept off the terminal). `--timeout S`
stops watching after S seconds (exit 1; the run goes on).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any, TextIO

from duragent._client import RunHandle
from duragent._config.settings import Settings
from duragent._errors import AgentClientError, TemporalUnavailable
from duragent._ops.cli import waits
from duragent._ops.cli.approvals import HASH_SHOWN
from duragent._ops.cli.arguments import add_run_id, positive_float
from duragent._ops.cli.connection import agent_client
from duragent._ops.cli.live_text import LiveText
from duragent._ops.cli.output import CliError, command, printable
from duragent._ops.cli.runs import FINISHED, result_line, result_summary
from duragent._workflows.inputs import Progress

BAR_WIDTH = 20
TERMINAL = FINISHED


def add_watch_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_id(parser)
    parser.add_argument("--interval", type=positive_float, default=0.5, help="seconds between progress queries")
    parser.add_argument(
        "--text",
        action="store_true",
        help="print the model's text as it is written (runs started with stream) and each tool call, then the end",
    )
    waits.add_timeout(parser)


async def cmd_watch(args: argparse.Namespace, settings: Settings) -> int:
    handle = await (await agent_client(settings)).get(args.run_id)
    out = sys.stdout
    view: Display
    if args.json:
        view = JsonLines(out)
    elif out.isatty():
        view = Bar(out)
    else:
        view = Lines(out)
    try:
        async with asyncio.timeout(args.timeout):
            if args.text and not args.json:  # the run's live events, as they come (duragent/_ops/cli/live_text.py)
                await LiveText(out).follow(handle.events())
                view = Lines(out)
            else:
                async for progress, why in with_reasons(handle, args.interval):
                    view.show(
                        progress.model_dump(mode="json", exclude={"worker_answered", "error"}) | _waiting(progress, why)
                    )
            view.finish(result_summary(await handle.result()))  # a run that failed raises RunFailed: one line
    except TimeoutError:
        view.close()
        raise CliError(waits.timed_out(handle.run_id, args.timeout, None)) from None
    except TemporalUnavailable as exc:
        view.close()
        raise CliError(
            f"lost the Temporal server at {settings.address} ({exc}); the run is kept by the server: "
            f"watch it again once the server is back"
        ) from None
    finally:
        view.close()
    return 0


async def with_reasons(handle: RunHandle, interval: float) -> AsyncIterator[tuple[Progress, str | None]]:
    """The latest progress every `interval` and on every change, with what the run waits for when it does
    not move (looked up every `waits.CHECK_EVERY` seconds: a wait is explained even when the progress itself
    does not change). The displays print only changes, but for a terminal's bar."""
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    async def follow() -> None:
        try:
            async for progress in handle.watch(interval=interval):
                await queue.put(("progress", progress))
            await queue.put(("end", None))
        except BaseException as exc:  # handed to the reader, which raises it
            await queue.put(("error", exc))

    async def explain() -> None:
        while True:
            await asyncio.sleep(waits.CHECK_EVERY)
            with contextlib.suppress(AgentClientError):  # the progress side reports a server that went away
                await queue.put(("why", await waits.stalled(handle)))

    async def tick() -> None:  # a terminal's line is redrawn every interval: its countdown moves
        while True:
            await asyncio.sleep(interval)
            await queue.put(("tick", None))

    tasks = [asyncio.ensure_future(job) for job in (follow(), explain(), tick())]
    last: Progress | None = None
    why: str | None = None
    try:
        while True:
            kind, value = await queue.get()
            if kind == "error":
                raise value
            if kind == "end":
                return
            if kind == "why":
                why = value
            elif kind == "progress":
                last = value
            if last is None:
                continue
            yield last, why
    finally:
        for task in tasks:
            task.cancel()


def _waiting(progress: Progress, why: str | None) -> dict[str, Any]:
    """While the run does not move, the line says what it waits for instead of repeating stale progress."""
    if not progress.worker_answered:
        return {"status": "no_worker", "label": why or progress.label}
    if why and progress.status not in TERMINAL:
        return {"label": why}
    return {}


# -- rendering ------------------------------------------------------------------------------------


def seconds_left(deadline: str, now: datetime | None = None) -> float:
    now = now or datetime.now(UTC)
    return max((datetime.fromisoformat(deadline) - now).total_seconds(), 0.0)


def duration(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def call_text(pending: dict[str, Any]) -> str:
    arguments = pending["arguments"]
    if isinstance(arguments, dict):
        arguments = ", ".join(f"{k}={v}" for k, v in arguments.items())
    return f"{pending['tool']}({arguments})"


def decide_hint(progress: dict[str, Any], pending: dict[str, Any]) -> str:
    """The command that decides `pending` (the run's label names none: the engine knows no command line)."""
    if not (progress.get("run_id") and pending.get("call_id") and pending.get("arguments_hash")):
        return ""
    call, hash = pending["call_id"], pending["arguments_hash"][:HASH_SHOWN]
    run_id = progress["run_id"]
    return f" — {command(f'approve {run_id} --call {call} --by NAME --hash {hash}')} (or deny)"


def bar(done: int | None, total: int | None, finished: bool = False) -> str:
    if done is None:
        return "[" + " " * BAR_WIDTH + "]"
    if finished:  # a run that ended is done, whatever its estimate or budget said
        return f"[{'#' * BAR_WIDTH}] {done}/{done}"
    if not total:
        return f"[step {done}]"
    total = max(total, done)  # an estimate is only an estimate
    filled = min(BAR_WIDTH, round(BAR_WIDTH * done / total))
    return f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{total}"


def counted(progress: dict[str, Any], finished: bool) -> tuple[int | None, int | None]:
    """What the bar counts. Actions — model calls, tools that ran, undos, the unit of the runs API's
    progress and of the agent's `estimate` — when the agent estimates its run, and always once it ended;
    otherwise model steps against the budget's `max_steps` (all an agent without an estimate offers)."""
    step = progress.get("step")
    if step is None or not (finished or progress.get("total")):
        return step, progress.get("max_steps")
    actions = step + len(progress.get("trajectory") or []) + (progress.get("compensations_done") or 0)
    return actions, progress.get("total")


def describe(progress: dict[str, Any], *, countdown: bool) -> str:
    """One line a person reads: bar, status, what it is doing, tokens, cost; an approval wait names the
    tool and, on a terminal, the time left to its deadline."""
    status = progress.get("status", "?")
    if status == "no_worker":
        return printable(str(progress.get("label", "")), one_line=True)
    finished = status in TERMINAL
    parts = [bar(*counted(progress, finished), finished), status]
    pending = progress.get("pending_approvals") or []
    if status == "awaiting_approval" and pending:
        first = pending[0]
        due = f"{duration(seconds_left(first['deadline']))} left"
        if not countdown:  # printed once: say until when, and how to decide
            due += f" (deadline {first['deadline'][:19].replace('T', ' ')} UTC){decide_hint(progress, first)}"
        more = f" (+{len(pending) - 1} more)" if len(pending) > 1 else ""
        parts.append(f"approve {call_text(first)}{more}, {due}")
    else:
        parts.append(str(progress.get("label", "")))
    parts.append(f"tokens {progress.get('input_tokens', 0)}+{progress.get('output_tokens', 0)}")
    parts.append(f"${progress.get('cost', 0.0):.6f}")
    return printable("  ".join(parts), one_line=True)  # one line: the model's label cannot start another


class Display:
    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.last: dict[str, Any] | None = None

    def show(self, progress: dict[str, Any]) -> None:
        changed = progress != self.last
        self.last = progress
        self.render(progress, changed)

    def render(self, progress: dict[str, Any], changed: bool) -> None:
        raise NotImplementedError

    def finish(self, summary: dict[str, Any]) -> None:
        print(result_line(summary), file=self.out, flush=True)

    def close(self) -> None:
        pass


class Lines(Display):
    """Not a terminal: a line per change, never a carriage return."""

    def render(self, progress: dict[str, Any], changed: bool) -> None:
        if changed:
            print(describe(progress, countdown=False), file=self.out, flush=True)


class Bar(Display):
    """A terminal: one line, redrawn in place on every poll (the countdown moves even when nothing else does)."""

    def __init__(self, out: TextIO) -> None:
        super().__init__(out)
        self.drawn = False

    def render(self, progress: dict[str, Any], changed: bool) -> None:
        width = shutil.get_terminal_size((100, 24)).columns - 1
        text = describe(progress, countdown=True)
        if len(text) > width:
            text = text[: max(width - 1, 0)] + "…"
        self.out.write("\r" + text + "\x1b[K")
        self.out.flush()
        self.drawn = True

    def finish(self, summary: dict[str, Any]) -> None:
        self.close()
        super().finish(summary)

    def close(self) -> None:
        if self.drawn:
            self.out.write("\n")
            self.out.flush()
            self.drawn = False


class JsonLines(Display):
    """`--json`: one object per change, then the result; `seconds_left` is added to each pending approval."""

    def render(self, progress: dict[str, Any], changed: bool) -> None:
        if not changed:
            return
        line = {"type": "progress", **progress}
        if progress.get("pending_approvals"):
            line["pending_approvals"] = [
                p | {"seconds_left": round(seconds_left(p["deadline"]), 1)} for p in progress["pending_approvals"]
            ]
        print(json.dumps(line, sort_keys=True), file=self.out, flush=True)

    def finish(self, summary: dict[str, Any]) -> None:
        print(json.dumps({"type": "result", **summary}, sort_keys=True, default=str), file=self.out, flush=True)
