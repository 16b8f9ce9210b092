"""What the worker itself records for a run, so that later activities decide from it rather than from their input:
the MCP tools it listed for the run (what `run_tool` takes an MCP tool's gate and remote name from) and, for a
compensable tool, the result it produced for a call (the only result `compensate` hands the tool's undo).

Both are documents kept in the worker's transcript store (content-addressed, owned by the run, deleted with it):
a stranger that answers a task of the agents' queue writes nothing there, so an answer it forged — a listing with
the gates off, a tool result naming someone else's booking — matches no record and opens nothing.
"""

from __future__ import annotations

from agentic import ToolSpec
from agentic.messages import canonical_json


def listing_record(run_id: str, tool: ToolSpec) -> str:
    """One MCP tool, as this worker listed it for `run_id`: its name, flags, schema and the remote tool it calls."""
    return canonical_json({"listed_for": run_id, "tool": tool.model_dump(mode="json")})


def receipt(original_key: str, result: str, result_ref: str | None) -> str:
    """The result this worker produced for the call keyed `original_key` (as the run records it: a preview and a
    ref when claim-checked)."""
    return canonical_json({"receipt": original_key, "result": result, "result_ref": result_ref})
