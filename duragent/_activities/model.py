"""The model activity: one model call, retried by Temporal (the provider's own retries are off).

The model is the agent's own (any `Model`), or one the run chose by name among those the worker declares.
The input is a transcript head plus the messages added since; this activity reads the stored transcript,
calls the model on it and the messages added since, stores those messages and the reply (claim-checked over
the worker's limits) in one transaction, and returns the new head. Retries and replays hand it the same
input, and every write is idempotent.

Any `AgentWorkflow` may schedule it — including one a stranger with frontend access runs on a queue of their
own under that name: they get the worker's model, with its credentials, on messages of their choosing (the
trust model in docs/operations.md). Transcript rows are written only under the calling run's own id, as the
server reports it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta

from temporalio import activity
from temporalio.exceptions import ApplicationError

from agentic import Agent, Message, Model, ModelError, ModelReply, ModelSettings, ToolSchema
from agentic.agent_set import ServedAgent
from agentic.handoffs import as_seen_by
from agentic.loop import admitted
from agentic.models.base import OnDelta, ask
from agentic.scrub import Scrubber
from duragent._activities.caller import calling_run
from duragent._activities.heartbeat import heartbeating, in_thread
from duragent._activities.inputs import ModelCallInput, ModelStep, PayloadLimits
from duragent._activities.live import LiveDeltas
from duragent._activities.served import ServedAgents
from duragent._activities.transcripts import claim_checked, require_readable, stored_here
from duragent._activities.turn_parents import TurnParents
from duragent._activities.worked import timed
from duragent._stores.transcripts import Transcripts


class ModelActivities:
    def __init__(
        self,
        served: ServedAgents,
        transcripts: Transcripts,
        limits: PayloadLimits | None = None,
        credentials: Scrubber | None = None,
    ) -> None:
        self.served = served
        self.transcripts = transcripts
        self.limits = limits or PayloadLimits()
        # The worker's secrets (duragent/_config/credentials.py), masked in every failure this activity reports.
        self.credentials = credentials or Scrubber(())
        self._schemas: dict[str, list[ToolSchema]] = {}
        # Which conversation a turn run belongs to, by the server's parent link: it may read that one's transcript.
        self.turn_parents = TurnParents()
        # What each agent offers the model, by (agent, recorded MCP tools): the same on every call, built once.
        self._offered: dict[tuple[str, str | None], tuple[ToolSchema, ...]] = {}

    @activity.defn(name="call_model")
    async def call_model(self, input: ModelCallInput) -> ModelStep:
        return await timed(self._call_model(input))

    async def _call_model(self, input: ModelCallInput) -> ModelStep:
        calling_run(input.run_id)
        served = self.served.get(input.agent)
        conversation = await self.turn_parents.conversation_of(input.run_id)
        # The whole call in one thread: each hop between the event loop and a thread costs the worker a wake-up
        # (about 0.1 ms of CPU), and a call by reference made five of them (docs/benchmarks.md).
        if not input.stream:
            return await heartbeating(in_thread(self._call, served, input, conversation))
        async with LiveDeltas(input.step or 0) as deltas:  # the reply's deltas to the run's live stream, batched
            return await heartbeating(in_thread(self._call, served, input, conversation, deltas))

    def _call(
        self, served: ServedAgent, input: ModelCallInput, conversation: str | None, on_delta: OnDelta | None = None
    ) -> ModelStep:
        # The model is resolved here, in the thread, while the activity heartbeats: the first call to a provider
        # imports its SDK and the model layer (seconds on a busy host), which on the event loop would stop every
        # heartbeat of this worker for as long, and a short heartbeat timeout would start the call again.
        model = self.served.model(served, input.model)
        agent = served.agent
        schemas = self._offered_by(agent, input.tools_ref)
        transcripts, limits = self.transcripts, self.limits
        stored, unsaved = input.transcript.head, input.transcript.unsaved
        with stored_here():
            require_readable(transcripts, stored, input.run_id, conversation)
            messages = transcripts.load(stored) + transcripts.expanded(unsaved)
        seen = messages if input.system is None else as_seen_by(messages, input.system)
        # Judged here, where the reply arrives (the agent's answer type and checks, user code): the verdicts are
        # recorded in history with the reply, and the workflow's loop only reads them.
        reply = agent.judge(self._ask(model, seen, schemas, input.call_index, input.settings, on_delta))
        # A reply quoting a secret (a model shown one, a provider's gateway) is stored and returned masked.
        reply = self.credentials.plus(getattr(model, "credentials", ())).deep(reply)
        with stored_here():
            stub = claim_checked(
                transcripts,
                reply.message,
                limits.model_reply_bytes,
                limits.hard_cap_bytes,
                "the model's reply",
                input.run_id,
            )
            # The unsaved messages and the reply in one store transaction, written as the run's own rows (retention
            # deletes them with the run, never while it is kept), before the head naming them is returned.
            head = transcripts.append(stored, [*unsaved, stub], input.run_id)
        return ModelStep(
            reply=reply if stub is reply.message else reply.model_copy(update={"message": stub}), head=head
        )

    def _ask(
        self,
        model: Model,
        messages: list[Message],
        schemas: Sequence[ToolSchema],
        call_index: int,
        settings: ModelSettings | None,
        on_delta: OnDelta | None = None,
    ) -> ModelReply:
        """The model call, in a thread (models are synchronous; the caller heartbeats meanwhile, so Temporal
        knows within seconds, not the model timeout, if this worker dies)."""
        try:
            # Admitted here, before it enters history or the store: a reply over the per-reply limits (10,000
            # tool calls, megabytes of arguments) travels refused and cut short, exactly as the loop records it.
            return admitted(ask(model, messages, schemas, call_index=call_index, settings=settings, on_delta=on_delta))
        except ModelError as exc:
            # `from None`: the message already says what went wrong, and the client library's exception chain
            # (openai -> httpx -> socket, each with its stack trace: 6.5 KB for a refused connection) is over
            # the server's limit for a retried activity's last failure (limit.mutableStateActivityFailureSize
            # .error, 4 KB), which replaces it with "Failure exceeds size limit." where people look while the
            # model call is retried (describe, the Web UI).
            raise ApplicationError(
                self._hidden(model, str(exc)),
                type=type(exc).__name__,
                non_retryable=not exc.retryable,
                next_retry_delay=timedelta(seconds=exc.retry_after) if exc.retry_after is not None else None,
            ) from None
        except Exception as exc:
            # A model of the user's own raising something else: as before (retried, under its type's name),
            # unless its text holds a secret, which then stays out, with the traceback that would repeat it.
            if (text := self._hidden(model, str(exc))) == str(exc):
                raise
            if isinstance(exc, ApplicationError):  # its own classification kept; its details may quote it too
                raise ApplicationError(
                    text, type=exc.type, non_retryable=exc.non_retryable, next_retry_delay=exc.next_retry_delay
                ) from None
            raise ApplicationError(text, type=type(exc).__name__) from None

    def _hidden(self, model: Model, text: str) -> str:
        """A failure's text becomes history, the Web UI's and the CLI's, a viewer's `error`: no credential of
        the worker's or of this model's in it, whatever the provider quoted."""
        return self.credentials.plus(getattr(model, "credentials", ()))(text)

    def _offered_by(self, agent: Agent, tools_ref: str | None) -> tuple[ToolSchema, ...]:
        key = (agent.name, tools_ref)
        offered = self._offered.get(key)
        if offered is None:
            # The MCP tools are those the run recorded when it started, never what the servers list today.
            offered = self._offered[key] = tuple(agent.schemas(self._recorded(tools_ref) if tools_ref else []))
        return offered

    def _recorded(self, ref: str) -> list[ToolSchema]:
        # A ref names one immutable document, so a cached copy is never stale.
        if ref not in self._schemas:
            document = self.transcripts.resolve("", ref)
            self._schemas[ref] = [ToolSchema.model_validate(s) for s in json.loads(document)]
        return self._schemas[ref]
