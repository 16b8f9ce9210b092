"""Replaying your runs' recorded histories against today's code: the check to make before a deploy.

    python starter.py replay --agents my_agents histories/*.json      # files you recorded
    python starter.py replay --agents my_agents --query 'ExecutionStatus = "Running"'   # the runs in flight

    paths = await save_histories(run, "histories")                      # record one (its children too)
    report = await replay(load_histories(paths), agents=my_agents.agents)
    assert report.ok, report

What can break a run in flight, and what this catches:

- **The engine** (`AgentWorkflow`, the loop rules it applies, the wire types of its inputs and results): a
  new version that would issue other commands for the same history — an activity more or less, a timer
  where there was an activity — fails the replay with Temporal's nondeterminism error. Such a change goes
  behind `workflow.patched(...)`.
- **Your agent's definition** does not break a replay: a run records its agent's spec (instructions,
  budget, policies, tool flags) when it starts, and every model reply and tool result is an activity result
  in its history, so a replay decides with what was recorded. What an agent change *can* do is strand a run
  still open: an agent no longer served fails that run at its next model or tool call, and a tool removed
  is answered "unknown tool" if the run's model calls it. Given the agents you are about to deploy,
  `replay` reports both, for every history of a run not yet closed.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowHistory
from temporalio.converter import DataConverter
from temporalio.worker import Replayer, WorkflowReplayResult

from agentic import Agent
from agentic.spec import AgentSpec
from duragent._client import AgentClient, RunHandle
from duragent._config.connection import data_converter
from duragent._config.settings import Settings
from duragent._plugin import DurableAgentsPlugin
from duragent._workflows.inputs import AgentInput
from duragent._workflows.names import WORKFLOW_TYPE

__all__ = ["ReplayReport", "Replayed", "fetch_histories", "load_histories", "replay", "save_histories"]

LOCAL_ACTIVITY_MARKER = "core_local_activity"
CLOSED = (
    "workflow_execution_completed_event_attributes",
    "workflow_execution_failed_event_attributes",
    "workflow_execution_canceled_event_attributes",
    "workflow_execution_terminated_event_attributes",
    "workflow_execution_timed_out_event_attributes",
    "workflow_execution_continued_as_new_event_attributes",
)


@dataclass(frozen=True)
class Replayed:
    """One history's replay: `problem` is None when today's code replays it and, for a run still open, the
    agents given still serve it."""

    source: str  # the file, or the run id it was fetched for
    run_id: str
    events: int
    open: bool
    agent: str | None
    problem: str | None

    def __str__(self) -> str:
        what = f"{self.source} (run {self.run_id}, agent {self.agent or '?'}, {self.events} events"
        what += ", open)" if self.open else ")"
        return f"ok    {what}" if self.problem is None else f"FAIL  {what}: {self.problem}"


@dataclass(frozen=True)
class ReplayReport:
    replayed: list[Replayed] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.problem is None for r in self.replayed)

    @property
    def failed(self) -> list[Replayed]:
        return [r for r in self.replayed if r.problem is not None]

    def __str__(self) -> str:
        lines = [str(r) for r in self.replayed]
        lines.append(f"{len(self.replayed) - len(self.failed)} of {len(self.replayed)} histories replayed")
        return "\n".join(lines)


async def replay(
    histories: Iterable[tuple[str, WorkflowHistory]] | Iterable[WorkflowHistory],
    *,
    agents: Iterable[Agent] | None = None,
    settings: Settings | None = None,
) -> ReplayReport:
    """Replay each history with today's workflow code (the data converter and codec keys of `settings`, else
    the environment's). With `agents` (what you are about to deploy), a run still open must also find its
    agent, and the tools its recorded spec lists, among them. Items are histories, or (source, history)."""
    settings = settings if settings is not None else Settings.from_env()
    replayer = Replayer(workflows=[], plugins=[DurableAgentsPlugin(settings)])
    converter = data_converter(settings)  # what the plugin gives the replayer (and every client and worker)
    named = [item if isinstance(item, tuple) else (item.workflow_id, item) for item in histories]
    served = {a.name: a for a in agents} if agents is not None else None
    found: list[Replayed] = []
    async with replayer.workflow_replay_iterator(_iterate([h for _, h in named])) as results:
        async for (source, history), result in _paired(named, results):
            agent, spec = await _recorded(history, converter)
            problem = _failure_text(result.replay_failure) if result.replay_failure is not None else None
            still_open = _is_open(history)
            if problem is None and served is not None and still_open and agent is not None:
                problem = _stranded(agent, spec, served)
            found.append(Replayed(source, history.workflow_id, len(history.events), still_open, agent, problem))
    return ReplayReport(found)


def load_histories(paths: Iterable[str | Path]) -> list[tuple[str, WorkflowHistory]]:
    """(path, history) for each JSON file: one `save_histories` wrote, or a Web UI or `temporal workflow show
    --output json` download. The run id comes from the file's `workflowId`, else from the ids of the runs it
    delegated to (`RUN_ID~step.position`), else the file name: name such downloads `RUN_ID.json`."""
    loaded: list[tuple[str, WorkflowHistory]] = []
    for path in map(Path, paths):
        try:
            data = json.loads(path.read_text())
            history = WorkflowHistory.from_json(path.stem, data)
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: not a workflow history ({exc})") from None
        run_id = data.get("workflowId") or _delegating_run_id(history.events) or path.stem
        loaded.append((str(path), WorkflowHistory(run_id, history.events)))
    return loaded


async def fetch_histories(
    client: Client, *, run_ids: Sequence[str] = (), query: str | None = None
) -> list[tuple[str, WorkflowHistory]]:
    """Histories from the server: each run id's (every run of its continue-as-new chain), and every run the
    visibility query lists (e.g. `WorkflowType = "AgentWorkflow" AND ExecutionStatus = "Running"`)."""
    agents = AgentClient(client)
    found: list[tuple[str, WorkflowHistory]] = []
    for run_id in run_ids:
        found += [(run_id, history) for history in await agents.handle(run_id).histories()]
    if query is not None:
        async for execution in client.list_workflows(query):
            handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
            found.append((execution.id, await handle.fetch_history()))
    return found


async def save_histories(run: RunHandle, directory: str | Path, *, name: str | None = None) -> list[Path]:
    """Write a run's histories as JSON to `directory`, for `replay` to check future code against: `NAME.json`
    (`NAME-run2.json`, ... for each run of a continue-as-new chain), and those of the runs it delegated to,
    named after it (`NAME~2.1.json`). NAME defaults to the run id. Returns the files written."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    name = name or run.run_id
    written: list[Path] = []
    histories = await run.histories()
    for i, history in enumerate(histories, 1):
        label = name if len(histories) == 1 else f"{name}-run{i}"
        path = directory / f"{quote(label, safe='~@-_.')}.json"
        path.write_text(json.dumps({"workflowId": run.run_id, **history.to_json_dict()}, indent=2))
        written.append(path)
        for child in _children(history.events):
            child_name = name + child.removeprefix(run.run_id) if child.startswith(run.run_id) else child
            written += await save_histories(run.agents.handle(child), directory, name=child_name)
    return written


# -- what a history says ------------------------------------------------------------------------------


def _is_open(history: WorkflowHistory) -> bool:
    return not any(history.events[-1].HasField(kind) for kind in CLOSED) if history.events else True


def _children(events: Iterable[HistoryEvent]) -> list[str]:
    return [
        e.start_child_workflow_execution_initiated_event_attributes.workflow_id
        for e in events
        if e.HasField("start_child_workflow_execution_initiated_event_attributes")
    ]


def _delegating_run_id(events: Sequence[HistoryEvent]) -> str | None:
    """A run's children are named `{its run id}~{step}.{position}` (agentic.delegation.child_run_id): a
    history that started one says whose it is. Replaying it needs that id: the child ids must match."""
    children = _children(events)
    return children[0].rsplit("~", 1)[0] if children and "~" in children[0] else None


async def _recorded(history: WorkflowHistory, converter: DataConverter) -> tuple[str | None, AgentSpec | None]:
    """The agent a run named, and the spec it recorded (the describe local activity's result, or the one
    carried into a continuation). None for other workflows, or what cannot be read."""
    if not history.events or not history.events[0].HasField("workflow_execution_started_event_attributes"):
        return None, None
    started = history.events[0].workflow_execution_started_event_attributes
    if started.workflow_type.name != WORKFLOW_TYPE:
        return None, None
    try:
        [input] = await converter.decode(started.input.payloads, [AgentInput])
    except Exception:  # a payload this process cannot decode (another codec key): the replay says so
        return None, None
    if input.carry is not None:
        return input.agent, input.carry.spec
    for event in history.events:
        if _is_describe_marker(event):
            try:
                [spec] = await converter.decode(
                    event.marker_recorded_event_attributes.details["result"].payloads, [AgentSpec]
                )
            except Exception:
                return input.agent, None
            return input.agent, spec
    return input.agent, None


def _is_describe_marker(event: HistoryEvent) -> bool:
    """The marker of the run's first local activity, `describe_agent`: its result is the recorded spec."""
    if not event.HasField("marker_recorded_event_attributes"):
        return False
    marker = event.marker_recorded_event_attributes
    if marker.marker_name != LOCAL_ACTIVITY_MARKER or "result" not in marker.details or "data" not in marker.details:
        return False
    return any(b'"describe_agent"' in payload.data for payload in marker.details["data"].payloads)


def _stranded(agent: str, spec: AgentSpec | None, served: dict[str | None, Agent]) -> str | None:
    """What the agents given would do to this open run at its next step, if anything breaks it."""
    current = served.get(agent)
    if current is None:
        known = ", ".join(sorted(str(name) for name in served)) or "none"
        return f"agent {agent!r} is not among the agents given ({known}): this open run would fail at its next step"
    if spec is None:
        return None
    kept = current.registry.specs()
    gone = sorted(name for name, tool in spec.tools.items() if tool.mcp is None and name not in kept)
    if gone:
        return (
            f"agent {agent!r} no longer has tool(s) {', '.join(gone)}, which this open run recorded: "
            "its model would be answered 'unknown tool' if it calls them"
        )
    return None


def _failure_text(exc: Exception) -> str:
    """Temporal's own words (`[TMPRL1100] Nondeterminism error: ...`) rather than the Rust debug dump."""
    text = str(exc)
    start = text.find('message: "')
    if start >= 0:
        end = text.find('", ', start + 10)
        return text[start + 10 : end if end > 0 else None]
    return text or type(exc).__name__


async def _iterate(histories: list[WorkflowHistory]) -> AsyncIterator[WorkflowHistory]:
    for history in histories:
        yield history


async def _paired(
    named: list[tuple[str, WorkflowHistory]], results: AsyncIterator[WorkflowReplayResult]
) -> AsyncIterator[tuple[tuple[str, WorkflowHistory], WorkflowReplayResult]]:
    """Each result with the (source, history) it is for: the replayer answers in the order it was given."""
    index = 0
    async for result in results:
        yield named[index], result
        index += 1
