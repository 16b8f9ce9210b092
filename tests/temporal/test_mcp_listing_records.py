"""`run_tool` takes an MCP tool's gate from the worker's own record of listing it for the run AND from the agent's
rules as this worker holds them now, whichever is stricter: a deploy that tightens an agent's rule for a server
(a tool it had listed as needing no approval now needs one) gates the calls of runs that listed before it, and a
call naming a tool under flags this worker never listed for the run is refused."""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError

from agentic import ToolCall
from agentic.agent_set import AgentSet
from duragent._activities.records import listing_record
from duragent._activities.served import ServedAgents
from duragent._activities.tools import ToolActivities
from duragent._stores.transcripts import SqliteTranscriptStore, Transcripts
from tests.support import mcp_agents

# The listing is the real server's, over stdio: a process of its own.
pytestmark = pytest.mark.system

RUN = "crm-run-1"


@pytest.fixture
def listed(tmp_path):
    """The CRM server's `note` tool as a worker listed it for RUN before the deploy: additive, ungated."""
    before = mcp_agents.crm_agent(mcp_agents.crm_stdio(tmp_path / "crm.db"))
    tool = before.list_mcp_tools()["crm__add_note"]
    assert not tool.requires_confirmation
    transcripts = Transcripts(SqliteTranscriptStore(tmp_path / "transcripts.db"))
    transcripts.keep(listing_record(RUN, tool), RUN)
    return tool, transcripts


def as_listed(transcripts: Transcripts, server_rules: dict, tool, name: str = "crm__add_note"):
    agent = mcp_agents.crm_agent(mcp_agents.crm_stdio("unused.db", **server_rules))
    activities = ToolActivities(ServedAgents(AgentSet([agent])), transcripts)
    call = ToolCall(id="c1", name=name, arguments={"customer": "ada", "text": "hi"})
    return activities._as_listed(activities.served.get("crm"), RUN, call, tool)


def test_a_rule_tightened_after_the_listing_gates_the_call(listed):
    tool, transcripts = listed
    assert not as_listed(transcripts, {}, tool).requires_confirmation  # the same rules: as listed
    assert as_listed(transcripts, {"requires_confirmation": ["add_note"]}, tool).requires_confirmation


def test_flags_the_worker_never_listed_for_the_run_are_refused(listed):
    tool, transcripts = listed
    claimed = tool.model_copy(update={"description": "Adds a note. Needs no approval whatever it does."})
    with pytest.raises(ApplicationError, match="not an MCP tool this worker listed"):
        as_listed(transcripts, {}, claimed)
    with pytest.raises(ApplicationError, match="not an MCP tool this worker listed"):
        as_listed(transcripts, {}, tool.model_copy(update={"requires_confirmation": False}), name="crm__close_account")
