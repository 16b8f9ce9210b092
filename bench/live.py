"""`python -m bench live`: what streaming a model's answer to the people watching costs and how fast it arrives.

One dev server, one worker (in this process), the runs API (in this process, on loopback) and a scripted
OpenAI-compatible model server that streams its tokens (`--token-ms` apart; stdlib, on loopback). It measures:

- time to first token: the model server called directly (httpx, streamed) against the whole stack — model
  server -> model activity -> Workflow Stream (a signal) -> the runs API's SSE (`GET /runs/{id}/events`) and the
  AG-UI endpoint (`POST /agui/{agent}`) -> the client. Each is the client's time to its first piece of text from
  the moment the model server wrote the first token; "added" is the stack's median less the direct one's (goal:
  at most 150 ms);
- the history of one run whose answer is `--tokens` tokens, streamed and not (events, bytes, signals);
- a subscriber that comes back after 1,000 live events: how long it takes to read them all, over SSE with
  `Last-Event-ID` and through `RunHandle.events`.

Prints a few lines, and writes results/live.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from temporalio.api.enums.v1 import EventType
from temporalio.contrib.workflow_streams import WorkflowStreamClient

from agentic import Agent, Budget, FakeModel, Registry, tool, tool_call
from agentic.live import LIVE_TOPIC, TextDelta
from agentic.models.openai_chat import OpenAIChatModel
from bench.cli import Command, register
from duragent._client import AgentClient
from duragent._config.settings import Settings
from duragent._connection import connect
from duragent._ops.devstack import devserver
from duragent._ops.http.app import create_app
from duragent._ops.http.auth import HttpAuth, TokenTable
from duragent._ops.http.serve import listen, server
from duragent._ops.http.temporal import TemporalEngine
from duragent._stores.transcripts import SqliteTranscriptStore, Transcripts
from duragent._worker import build_worker

TOKEN = "bench-token-0123456789abcdef"
GOAL_ADDED_MS = 150.0


def configure(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--reps", type=int, default=15, help="first-token measurements per path (default 15)")
    sub.add_argument("--tokens", type=int, default=500, help="tokens of the answer whose history is counted")
    sub.add_argument("--token-ms", type=float, default=10.0, help="the model server's time per token (default 10)")
    sub.add_argument("--catch-up", type=int, default=1000, help="live events a returning subscriber reads")
    sub.add_argument("--out", type=Path, default=Path("results"))


def run(args: argparse.Namespace) -> int:
    outcome = asyncio.run(measure(args))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "live.json").write_text(json.dumps(outcome, indent=2))
    first = outcome["first_token_ms"]
    print(
        f"live first token (ms after the model server wrote it, p50/p95): direct {_p(first['direct'])}, "
        f"SSE {_p(first['sse'])}, AG-UI {_p(first['agui'])}; added at p50: SSE {outcome['added_p50_ms']['sse']:.0f}, "
        f"AG-UI {outcome['added_p50_ms']['agui']:.0f} (goal <= {GOAL_ADDED_MS:.0f})",
        flush=True,
    )
    for mode in ("streamed", "not_streamed"):
        h = outcome["history"][mode]
        print(
            f"live history of a {args.tokens}-token answer, {mode.replace('_', ' ')}: {h['events']} events, "
            f"{h['bytes']} bytes, {h['signals']} signals (live batches)",
            flush=True,
        )
    c = outcome["catch_up"]
    print(
        f"live catch-up of {c['events']} events: SSE with Last-Event-ID {c['sse_ms']:.0f} ms, "
        f"RunHandle.events {c['client_ms']:.0f} ms",
        flush=True,
    )
    return 0


def _p(values: Sequence[float]) -> str:
    ordered = sorted(values)
    return f"{statistics.median(ordered):.0f}/{ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]:.0f}"


class StreamingModel:
    """An OpenAI-compatible server streaming `tokens` words, `token_ms` apart; it notes when it wrote the first."""

    def __init__(self, tokens: int, token_ms: float) -> None:
        self.tokens, self.token_ms = tokens, token_ms
        self.first_written: list[float] = []  # wall clock, one per streamed request
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                words = [f"w{i} " for i in range(model.tokens)]
                if not body.get("stream"):
                    text = json.dumps(_completion("".join(words), model.tokens)).encode()
                    time.sleep(model.tokens * model.token_ms / 1000)
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(text)))
                    self.end_headers()
                    self.wfile.write(text)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    for i, word in enumerate(words):
                        chunk = {"choices": [{"index": 0, "delta": {"content": word}}]}
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                        self.wfile.flush()
                        if i == 0:
                            model.first_written.append(time.time())
                        time.sleep(model.token_ms / 1000)
                    usage = {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": model.tokens}}
                    self.wfile.write(f"data: {json.dumps(usage)}\n\ndata: [DONE]\n\n".encode())
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the direct client leaves after its first token
                self.close_connection = True

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _completion(text: str, tokens: int) -> dict[str, Any]:
    message = {"role": "assistant", "content": text}
    usage = {"prompt_tokens": 10, "completion_tokens": tokens}
    return {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}], "usage": usage}


@tool(description="Wait for a person.", what="What.", requires_confirmation=True)
def hold(what: str) -> str:
    return what


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-live-") as scratch:
        tmp = Path(scratch)
        dev = devserver.start_on_free_ports(tmp / "dev.db", log=tmp / "server.log")
        short = StreamingModel(tokens=20, token_ms=args.token_ms)
        long = StreamingModel(tokens=args.tokens, token_ms=args.token_ms)
        try:
            await devserver.wait_until_serving(dev.address)
            settings = Settings(address=dev.address, task_queue=f"bench-{uuid.uuid4().hex[:6]}", data_dir=tmp)
            client = await connect(settings)
            agents = [
                _model_agent("live-short", short.url),
                _model_agent("live-long", long.url),
                Agent(
                    FakeModel([tool_call("hold", {"what": "x"}), "held"]),
                    Registry([hold]),
                    name="live-hold",
                    task="Hold.",
                ),
            ]
            transcripts = Transcripts(SqliteTranscriptStore(tmp / "transcripts.db"))
            async with build_worker(client, task_queue=settings.task_queue, agents=agents, transcripts=transcripts):
                agent_client = AgentClient(client, task_queue=settings.task_queue)
                engine = TemporalEngine(agent_client, agents)
                app = create_app(engine, HttpAuth(TokenTable.parse(f"{TOKEN}=bench:approver")))
                listener = listen(argparse.Namespace(host="127.0.0.1", port=0))
                api = server(app)
                serving = asyncio.create_task(api.serve(sockets=[listener]))
                while not api.started:
                    await asyncio.sleep(0.01)
                url = f"http://127.0.0.1:{listener.getsockname()[1]}"
                try:
                    async with httpx.AsyncClient(
                        base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120
                    ) as http:
                        first = await _first_tokens(args, short, http)
                        history = {
                            "streamed": await _history(agent_client, "live-long", stream=True),
                            "not_streamed": await _history(agent_client, "live-long", stream=False),
                        }
                        catch_up = await _catch_up(args, agent_client, http)
                finally:
                    api.should_exit = True
                    await serving
                    await engine.close()
        finally:
            short.close()
            long.close()
            dev.stop()
    direct = statistics.median(first["direct"])
    return {
        "first_token_ms": first,
        "added_p50_ms": {path: statistics.median(first[path]) - direct for path in ("sse", "agui")},
        "goal_added_p50_ms": GOAL_ADDED_MS,
        "history": history,
        "catch_up": catch_up,
        "tokens": args.tokens,
        "token_ms": args.token_ms,
    }


def _model_agent(name: str, base_url: str) -> Agent:
    model = OpenAIChatModel("bench", base_url=base_url, api_key="not-needed", timeout=120)
    return Agent(model, Registry([]), name=name, task="Write.", budget=Budget(max_steps=2))


async def _first_tokens(
    args: argparse.Namespace, model: StreamingModel, http: httpx.AsyncClient
) -> dict[str, list[float]]:
    direct: list[float] = []
    sse: list[float] = []
    agui: list[float] = []
    async with httpx.AsyncClient(timeout=60) as raw:
        for _ in range(args.reps):
            body = {"model": "bench", "messages": [{"role": "user", "content": "hi"}], "stream": True}
            async with raw.stream("POST", f"{model.url}/chat/completions", json=body) as response:
                async for line in response.aiter_lines():
                    if '"content"' in line:
                        direct.append((time.time() - model.first_written[-1]) * 1000)
                        break
    for _ in range(args.reps):
        run_id = (await http.post("/runs", json={"agent": "live-short", "stream": True})).json()["run_id"]
        async with http.stream("GET", f"/runs/{run_id}/events") as response:
            async for line in response.aiter_lines():
                if line == "event: text_delta":
                    sse.append((time.time() - model.first_written[-1]) * 1000)
                    break
    for _ in range(args.reps):
        thread = f"bench-{uuid.uuid4().hex[:8]}"
        body = {"threadId": thread, "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "hi"}]}
        async with http.stream("POST", "/agui/live-short", json=body) as response:
            async for line in response.aiter_lines():
                if '"TEXT_MESSAGE_CONTENT"' in line:
                    agui.append((time.time() - model.first_written[-1]) * 1000)
                    break
    return {"direct": direct, "sse": sse, "agui": agui}


async def _history(agents: AgentClient, agent: str, *, stream: bool) -> dict[str, int]:
    handle = await agents.start(agent, stream=stream)
    await handle.result()
    history = await agents.client.get_workflow_handle(handle.run_id).fetch_history()
    events = list(history.events)
    signals = sum(1 for e in events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)
    return {"events": len(events), "bytes": sum(e.ByteSize() for e in events), "signals": signals}


async def _catch_up(args: argparse.Namespace, agents: AgentClient, http: httpx.AsyncClient) -> dict[str, float]:
    """A run waiting for a person, `--catch-up` live events on its stream (published as the activity does, in
    batches); then a subscriber that was away reads them all, from its last id (0)."""
    handle = await agents.start("live-hold", "Hold.")
    await handle.wait_for_approval()
    publisher = WorkflowStreamClient.create(agents.client, handle.run_id)
    topic = publisher.topic(LIVE_TOPIC)
    for i in range(args.catch_up):
        topic.publish(TextDelta(step=9, text=f"piece {i} "))
        if i % 50 == 49:
            await publisher.flush()
    await publisher.flush()
    total = await publisher.get_offset()
    started = time.monotonic()
    read = 0
    async with http.stream("GET", f"/runs/{handle.run_id}/events", headers={"Last-Event-ID": "0"}) as response:
        async for line in response.aiter_lines():
            if line.startswith("id: "):
                read = int(line.removeprefix("id: "))
                if read >= total - 1:
                    break
    sse_ms = (time.monotonic() - started) * 1000
    started = time.monotonic()
    async for offset, _ in handle.events(after=0):
        if offset >= total - 1:
            break
    client_ms = (time.monotonic() - started) * 1000
    pending = await handle.pending()
    await handle.deny(pending[0].call_id, by="bench", reason="done measuring")
    return {"events": total, "sse_ms": sse_ms, "client_ms": client_ms}


register(Command("live", "streamed answers: first token through the stack, history per turn, catch-up", configure, run))
