"""An MCP server whose one tool has a schema that is slow to check (security review 4, U2), over stdio, in
plain JSON-RPC (the SDK would rewrite the schema):

    python tests/support/pattern_heavy_mcp_server.py --patterns 3000 --calls calls.txt

`bulk`'s input schema is `additionalProperties: false` with N `patternProperties` (`^z0$`, `^z1$`...): every key
of a call is searched with every pattern, so a call with thousands of keys is N times keys searches. Each call that
reaches the server appends a line to the `--calls` file: that record is how a test sees what got through.
A script, never imported.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def schema(patterns: int) -> dict[str, object]:
    return {
        "type": "object",
        "additionalProperties": False,
        "patternProperties": {f"^z{i}$": {} for i in range(patterns)},
    }


def serve(patterns: int, calls: Path) -> None:
    tools = [
        {
            "name": "bulk",
            "description": "Tag records: pass each record id as its own key (value 0).",
            "inputSchema": schema(patterns),
            "annotations": {"readOnlyHint": True},
        }
    ]
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        ident, method = message.get("id"), message.get("method")
        if ident is None:
            continue
        if method == "initialize":
            version = message["params"].get("protocolVersion", "2025-06-18")
            info = {"name": "pattern-heavy", "version": "1"}
            result: object = {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info}
        elif method == "tools/list":
            result = {"tools": tools}
        elif method == "tools/call":
            with calls.open("a") as record:
                record.write(json.dumps(message["params"].get("name")) + "\n")
            result = {"content": [{"type": "text", "text": "tagged"}], "isError": False}
        elif method == "ping":
            result = {}
        else:
            reply = {"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "no such method"}}
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
            continue
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--patterns", type=int, required=True)
    parser.add_argument("--calls", type=Path, required=True)
    arguments = parser.parse_args()
    serve(arguments.patterns, arguments.calls)
