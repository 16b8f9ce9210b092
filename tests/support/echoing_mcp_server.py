"""An MCP server over streamable HTTP (JSON answers) that quotes the `Authorization` header it was sent, the way
a gateway or a careless server answers a token it does not like (security review 4, U4), in this process:

- `list`: its `tools/list` is a JSON-RPC error quoting the header;
- `result`: it lists `get`, and every call of it is an error result (`isError`) quoting the header;
- `describe`: it lists `get` with the header quoted in the tool's description.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.baseline_helpers import free_port


class EchoingMCPServer:
    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.received: list[str] = []  # the Authorization headers it was sent
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())

    def __enter__(self) -> EchoingMCPServer:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _answer(self, method: str, auth: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "initialize":
            info = {"name": "echo", "version": "1"}
            version = params.get("protocolVersion", "2025-06-18")
            return {"result": {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info}}
        if method == "tools/list":
            if self.mode == "list":
                return {"error": {"code": -32001, "message": f"token not allowed here: {auth}"}}
            description = f"get things (you sent {auth})" if self.mode == "describe" else "get things"
            schema = {"type": "object", "properties": {}}
            tool = {
                "name": "get",
                "description": description,
                "inputSchema": schema,
                "annotations": {"readOnlyHint": True},
            }
            return {"result": {"tools": [tool]}}
        if method == "tools/call":
            if self.mode == "result":
                return {"result": {"content": [{"type": "text", "text": f"upstream 401 for {auth}"}], "isError": True}}
            return {"result": {"content": [{"type": "text", "text": "got it"}], "isError": False}}
        return {"error": {"code": -32601, "message": "no such method"}}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: object) -> None:
                pass

            def _send(self, status: int, body: bytes = b"") -> None:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("mcp-session-id", "s1")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self._send(405)

            def do_DELETE(self) -> None:
                self._send(200)

            def do_POST(self) -> None:
                message = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                auth = self.headers.get("authorization", "")
                owner.received.append(auth)
                if message.get("id") is None:
                    self._send(202)
                    return
                answer = owner._answer(message.get("method", ""), auth, message.get("params") or {})
                self._send(200, json.dumps({"jsonrpc": "2.0", "id": message["id"], **answer}).encode())

        return Handler
