"""Listing an agent's MCP tools when a run starts: a regular activity (a server may be slow to start or to
answer), whose result the workflow records — so the run, its replays and its continuations use the tools
listed then, whatever the servers list later.

A server that cannot be reached is retried a few times (the workflow's policy), then the run fails with
the reason; a configuration that cannot work (an unset variable, a missing command, refused credentials)
fails it at once.

Any `AgentWorkflow` may schedule it: listing connects to the agent's configured servers (starting a stdio
server's process) and answers with their tool specs, which hold no secret; schemas are stored only under the
calling run's own id, as the server reports it.
"""

from __future__ import annotations

from temporalio import activity
from temporalio.exceptions import ApplicationError

from agentic.extras import MissingExtra
from agentic.mcp import MCPConfigError, MCPUnavailable
from agentic.mcp.toolset import schemas_document, schemas_of
from agentic.scrub import Scrubber
from duragent._activities.caller import calling_run
from duragent._activities.heartbeat import heartbeating, in_thread
from duragent._activities.inputs import MCPListing, MCPListInput
from duragent._activities.served import ServedAgents
from duragent._stores.transcripts import Transcripts


class MCPActivities:
    def __init__(self, served: ServedAgents, transcripts: Transcripts, credentials: Scrubber | None = None) -> None:
        self.served = served
        self.transcripts = transcripts
        # The worker's secrets: a server (or its gateway) may quote the token it was sent, in its listing too.
        self.credentials = credentials or Scrubber(())

    @activity.defn(name="list_mcp_tools")
    async def list_mcp_tools(self, input: MCPListInput) -> MCPListing:
        calling_run(input.run_id)
        agent = self.served.get(input.agent).agent
        try:
            tools = await heartbeating(agent.list_mcp_tools_async())
        except MCPConfigError as exc:
            raise ApplicationError(str(exc), type="MCPConfigError", non_retryable=True) from None
        except MissingExtra as exc:  # a worker installed without the `mcp` extra: no retry installs it
            raise ApplicationError(str(exc), type="MissingExtra", non_retryable=True) from None
        except MCPUnavailable as exc:
            raise ApplicationError(str(exc), type="MCPUnavailable") from None
        tools = self.credentials.deep(tools)  # before the store: the model is offered the stored copy
        # The model activity reads them by this document's hash, which the workflow computes itself.
        await in_thread(self.transcripts.keep, schemas_document(schemas_of(tools)), input.run_id)
        return MCPListing(tools=tools)
