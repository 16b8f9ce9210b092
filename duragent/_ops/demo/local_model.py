"""`demo --model local`: the demo on a real language model, with no API key — Gemma 3 270M (or SmolLM2-135M when
only it is installed) on the embedded model server (duragent/_ops/devstack/modelserver.py, the `llm` dependency
group), started unless one answers at `AGENT_LOCAL_MODEL_URL`, and stopped (by pid) when the demo ends, on Ctrl-C,
SIGTERM or SIGHUP.

The model is asked as `local-schema` (agentic/models/constrained.py): one JSON step at a time under a JSON-schema
grammar — a call to one of the agent's tools with arguments of its schema, copied from what the user said, or the
answer — the first step a call (`first_tool_choice="required"`), at temperature 0. So asked, Gemma 3 270M completes
both demo tasks (`python -m bench eval`, docs/local-model.md). Three runs:

- billing: `charge` runs on the model's arguments (invoice inv-9, as asked), then the model answers;
- refund: the model's `refund` call waits for a human; the demo approves it; the model answers;
- billing again, the worker SIGKILLed while the model writes its answer: a new worker calls the model
  again (the server first finishes the abandoned generation) and the charge still happens once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from urllib.parse import urlsplit

from temporalio.api.enums.v1 import PendingActivityState
from temporalio.client import WorkflowHistory

from agentic import ModelSettings
from duragent._activities.inputs import AgentResult
from duragent._client import AgentClient, RunHandle
from duragent._ops.cli.output import CliError, printable
from duragent._ops.cli.runs import result_summary
from duragent._ops.demo.scripted import Demo, say, until
from duragent._ops.devstack import modelserver
from duragent._workflows.inputs import Timeouts

MODEL = "local-schema"
# A step (`{"tool": "charge", "arguments": {...}}`) takes about 25 tokens; an answer is bounded to fit.
MAX_TOKENS = 96
LONG_ANSWER_TOKENS = 160
# Asked for a long answer, the model writes until max_tokens at temperature 0: seconds of generation.
LONG_TASK = "Settle invoice inv-9. Then write a very long story about a dragon who pays invoices, at least 500 words."


def asked_in_steps(max_tokens: int = MAX_TOKENS) -> ModelSettings:
    """How each demo run asks the small model (`local-schema`): a call first, then it decides (the grammar keeps
    every step valid)."""
    return ModelSettings(first_tool_choice="required", temperature=0.0, max_tokens=max_tokens)


def asked(first_tool: str, max_tokens: int = 32) -> ModelSettings:
    """How `local` (llama-cpp-python's tool calls) is asked to do the same: the agent's tool first, then words."""
    return ModelSettings(first_tool_choice=first_tool, tool_choice="none", temperature=0.0, max_tokens=max_tokens)


def preview(text: str | None, limit: int = 100) -> str:
    """One printable line: a model's text may hold newlines and control characters."""
    line = printable(" ".join((text or "").split()))
    return line if len(line) <= limit else line[: limit - 1] + "…"


def is_local(url: str) -> bool:
    return urlsplit(url).hostname in ("127.0.0.1", "localhost", "::1")


async def model_call_running(handle: RunHandle) -> bool:
    """A worker has taken one of the run's model calls and not finished it: the server is working on it."""
    description = await handle.describe()
    return any(
        p.activity_type.name == "call_model" and p.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
        for p in description.raw_description.pending_activities
    )


def model_attempts(history: WorkflowHistory) -> list[tuple[int, str]]:
    """(attempt, worker identity) of each model call that completed, in order."""
    model_calls = {
        e.event_id
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
        and e.activity_task_scheduled_event_attributes.activity_type.name == "call_model"
    }
    return [
        (e.activity_task_started_event_attributes.attempt, e.activity_task_started_event_attributes.identity)
        for e in history.events
        if e.HasField("activity_task_started_event_attributes")
        and e.activity_task_started_event_attributes.scheduled_event_id in model_calls
    ]


class LocalModelDemo(Demo):
    @contextlib.contextmanager
    def model_server(self) -> Iterator[None]:
        """The one at AGENT_LOCAL_MODEL_URL (where the worker looks), or one started there and stopped after."""
        url = self.settings.local_model_url
        if modelserver.healthy(url):
            say(self.as_json, f"Model server: {url} (already running)")
            yield
            return
        if not is_local(url):
            raise CliError(f"no model server answers at AGENT_LOCAL_MODEL_URL={url}")
        if (reason := modelserver.missing()) is not None:
            raise CliError(reason)
        port = urlsplit(url).port or 80
        name = modelserver.preferred_local_model()
        say(self.as_json, f"no model server at {url}; starting the embedded one ({name})…")
        try:
            known = modelserver.LOCAL_MODELS[name]
            server = modelserver.start(
                port,
                model=modelserver.local_model_file(name),
                chat_format=known.chat_format,
                log=self.settings.data_dir / "demo-model-server.log",
            )
        except modelserver.ModelServerError as exc:
            raise CliError(str(exc)) from None
        say(self.as_json, f"Model server pid {server.pid} on {server.base_url}, log {server.log}")
        try:
            yield
        finally:
            server.stop()

    async def report(self, handle: RunHandle, note: str = "") -> AgentResult:
        """As the scripted demo reports a run, plus what the model asked for and what it cost; its answer
        on one line (a small model's can be long and repetitive)."""
        result = await handle.result()
        effects = self.ledger.effects(handle.run_id)
        summary = result_summary(result) | {"url": handle.url, "effects": len(effects), "note": note}
        self.results.append(summary)
        say(self.as_json, f"  {result.status} ({result.stop.value}): {preview(result.output or result.stop_detail)}")
        for record in result.records:
            call = f"{record.call.name}({record.call.arguments})"
            say(self.as_json, f"  the model called {preview(call)} → {preview(record.content)}")
        say(
            self.as_json,
            f"  {result.step_count} model calls, {result.input_tokens} tokens in, {result.output_tokens} out "
            f"(the server's counts), cost {result.cost}; {len(effects)} effect(s) in the ledger",
        )
        if note:
            say(self.as_json, f"  {note}")
        say(self.as_json, f"  {handle.url}")
        return result

    async def billing_on_the_model(self, client: AgentClient) -> None:
        say(self.as_json, "\n[billing] the model calls charge with arguments of its own, then answers")
        handle = await client.start(
            "billing", run_id=f"demo-llm-billing-{self.stamp}", model=MODEL, model_settings=asked_in_steps()
        )
        await self.report(handle)

    async def refund_approved(self, client: AgentClient) -> None:
        say(self.as_json, "\n[refund] the model's refund call waits for a human (durable timer, 24 h deadline)")
        handle = await client.start(
            "refund", run_id=f"demo-llm-refund-{self.stamp}", model=MODEL, model_settings=asked_in_steps()
        )
        [pending] = await handle.wait_for_approval(timeout=300)
        say(self.as_json, f"  waiting: {preview(f'{pending.tool}({pending.arguments})')}, as the model wrote it")
        say(self.as_json, f"  approving it as 'demo-approver' with hash {pending.arguments_hash[:12]}…")
        await handle.approve(pending.call_id, by="demo-approver", reason="demo", arguments_hash=pending.arguments_hash)
        await self.report(handle, note="approved by demo-approver")

    async def crash_during_generation(self, client: AgentClient) -> None:
        say(self.as_json, "\n[billing, crash] the worker is killed with SIGKILL while the model writes its answer")
        handle = await client.start(
            "billing",
            LONG_TASK,
            run_id=f"demo-llm-crash-{self.stamp}",
            model=MODEL,
            model_settings=asked_in_steps(LONG_ANSWER_TOKENS),
            # A dead worker is noticed within seconds; meanwhile the server finishes the abandoned generation.
            timeouts=Timeouts(heartbeat_seconds=3.0),
        )

        async def answering() -> bool:
            if not await handle.is_running():
                raise CliError(f"run {handle.run_id} ended before the model's answer could be interrupted")
            return bool(self.ledger.effects(handle.run_id)) and await model_call_running(handle)

        await until(answering, 300, "the model's answer")
        await asyncio.sleep(0.3)  # the request is at the model server
        assert self.worker is not None
        killed = self.worker.pid
        self.worker.kill()
        say(self.as_json, f"  killed worker pid {killed} (SIGKILL) during the generation, after the charge")
        started = self.start_worker()
        say(self.as_json, f"  started a new worker, pid {started.pid}; it calls the model again")
        result = await self.report(handle, note=f"worker {killed} was killed mid-generation")
        attempts = model_attempts(await handle.workflow.fetch_history())
        say(self.as_json, f"  model calls (attempt, worker): {attempts}")
        charges = [e.tool for e in self.ledger.effects(handle.run_id)]
        say(self.as_json, f"  effects in the ledger: {charges} (once)")
        self.results[-1]["model_attempts"] = attempts
        assert charges == ["charge"] and result.trajectory() == ["charge"]

    async def run(self) -> None:
        with self.model_server():
            client = await AgentClient.connect(self.settings)
            self.start_worker()
            await self.billing_on_the_model(client)
            await self.refund_approved(client)
            await self.crash_during_generation(client)
