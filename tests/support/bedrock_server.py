"""A loopback server speaking Amazon Bedrock's Converse API, on `ProviderServer` (tests/support/provider_servers.py):
real HTTP on 127.0.0.1, so boto3 signs each request (SigV4) and the model layer parses what botocore parses.

- `POST /model/{modelId}/converse`: `output.message.content` blocks `text`, `toolUse`, `reasoningContent`
  (`reasoningText` with its `signature`); `stopReason`; `usage` with `cacheReadInputTokens`.
- `POST /model/{modelId}/converse-stream`: the same reply in AWS's binary event-stream encoding (each message a
  prelude, its CRC32, string headers `:event-type`, `:content-type`, `:message-type`, a JSON payload and the
  message's CRC32): `messageStart`, `contentBlockStart/Delta/Stop`, `messageStop`, `metadata`.
- Errors: the status, `x-amzn-ErrorType: <Code>:<namespace>` and `{"message"}` (botocore reads the code from the
  header).

Every request's SigV4 signature is checked against `secret`: a request signed with other credentials, or whose
body changed after signing, is answered 403 `SignatureDoesNotMatch`, as Bedrock answers it.
"""

from __future__ import annotations

import binascii
import json
import struct
from typing import Any

from tests.support.provider_servers import ProviderServer, Received, Scripted

MODEL_ID = "anthropic.claude-sonnet-4-5-20250929-v1:0"
ERROR_NAMESPACE = "http://internal.amazon.com/coral/com.amazon.bedrock/"


class BedrockServer(ProviderServer):
    def __init__(self, *, access_key_id: str = "", secret: str | None = None) -> None:
        super().__init__()
        self.access_key_id = access_key_id
        self.secret = secret  # when set, each signature is verified with it

    def key_of(self, request: Received) -> str:
        # `Authorization: AWS4-HMAC-SHA256 Credential=<access key id>/<date>/<region>/bedrock/aws4_request, ...`
        return credential(request).split("/", 1)[0]

    def queue_message(self, content: list[dict[str, Any]], **kw: Any) -> None:
        self.queue_reply(content, **kw)

    def render(self, request: Received, scripted: Scripted) -> Scripted:
        if request.path.endswith("/converse-stream"):
            events = (b"".join(encode_event(kind, payload) for kind, payload in converse_events(scripted.reply)),)
            return Scripted(200, b"", {"Content-Type": "application/vnd.amazon.eventstream"}, events=events)
        return Scripted(
            200, json.dumps(converse_response(scripted.reply)).encode(), {"Content-Type": "application/json"}
        )

    def queue_error(self, status: int, code: str, message: str, **kw: Any) -> None:
        headers = {"x-amzn-ErrorType": f"{code}:{ERROR_NAMESPACE}", **kw.pop("headers", {})}
        self.queue_json({"message": message}, status=status, headers=headers, **kw)

    def queue_key_echo(self) -> None:
        self.queue_error(403, "UnrecognizedClientException", "The security token {key} is invalid.", echo_key=True)

    def _next(self, request: Received) -> Scripted:
        scripted = super()._next(request)
        if self.secret is not None and not signed_with(request, self.base_url, self.secret):
            return Scripted(
                403,
                json.dumps({"message": "The request signature we calculated does not match."}).encode(),
                {"Content-Type": "application/json", "x-amzn-ErrorType": f"SignatureDoesNotMatch:{ERROR_NAMESPACE}"},
            )
        return scripted


def credential(request: Received) -> str:
    header = request.headers.get("authorization", "")
    return header.split("Credential=", 1)[1].split(",", 1)[0] if "Credential=" in header else ""


def signed_with(request: Received, base_url: str, secret: str) -> bool:
    """Recompute the request's SigV4 signature with botocore's signer, at the time the request says it was made."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    header = request.headers.get("authorization", "")
    if not header.startswith("AWS4-HMAC-SHA256 "):
        return False
    fields = dict(part.strip().split("=", 1) for part in header.removeprefix("AWS4-HMAC-SHA256 ").split(","))
    access_key_id, _date, region, service, _ = fields["Credential"].split("/")
    signed = fields["SignedHeaders"].split(";")
    rebuilt = AWSRequest(
        method="POST",
        url=base_url + request.path,
        data=request.raw_body,
        headers={name: request.headers[name] for name in signed if name in request.headers},
    )
    rebuilt.context["timestamp"] = request.headers.get("x-amz-date", "")
    signer = SigV4Auth(Credentials(access_key_id, secret, request.headers.get("x-amz-security-token")), service, region)
    expected = signer.signature(signer.string_to_sign(rebuilt, signer.canonical_request(rebuilt)), rebuilt)
    return bool(fields.get("Signature")) and expected == fields["Signature"]


def converse_response(content: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": _stop(content),
        "usage": USAGE,
        "metrics": {"latencyMs": 120},
    }


USAGE = {
    "inputTokens": 1000,
    "outputTokens": 100,
    "totalTokens": 3100,
    "cacheReadInputTokens": 2000,
    "cacheWriteInputTokens": 0,
}


def _stop(content: list[dict[str, Any]]) -> str:
    return "tool_use" if any("toolUse" in block for block in content) else "end_turn"


def reasoning(text: str, signature: str) -> dict[str, Any]:
    return {"reasoningContent": {"reasoningText": {"text": text, "signature": signature}}}


def tool_use(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"toolUse": {"toolUseId": call_id, "name": name, "input": arguments}}


def converse_events(content: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """ConverseStream's events for a reply of these blocks, each block's body in two deltas."""
    events: list[tuple[str, dict[str, Any]]] = [("messageStart", {"role": "assistant"})]
    for index, block in enumerate(content):
        if "text" in block:
            half = len(block["text"]) // 2
            for piece in (block["text"][:half], block["text"][half:]):
                events.append(("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": piece}}))
        elif "reasoningContent" in block:
            body = block["reasoningContent"]["reasoningText"]
            for delta in ({"text": body["text"]}, {"signature": body["signature"]}):
                events.append(("contentBlockDelta", {"contentBlockIndex": index, "delta": {"reasoningContent": delta}}))
        elif "toolUse" in block:
            use = block["toolUse"]
            start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
            events.append(("contentBlockStart", {"contentBlockIndex": index, "start": start}))
            arguments = json.dumps(use["input"])
            half = len(arguments) // 2
            for piece in (arguments[:half], arguments[half:]):
                events.append(
                    ("contentBlockDelta", {"contentBlockIndex": index, "delta": {"toolUse": {"input": piece}}})
                )
        events.append(("contentBlockStop", {"contentBlockIndex": index}))
    events.append(("messageStop", {"stopReason": _stop(content)}))
    events.append(("metadata", {"usage": USAGE, "metrics": {"latencyMs": 120}}))
    return events


def encode_event(kind: str, payload: dict[str, Any]) -> bytes:
    """One message of AWS's event-stream encoding: prelude (total length, headers length), its CRC32, the headers,
    the payload, the CRC32 of everything before it."""
    headers = b"".join(
        _header(name, value)
        for name, value in ((":event-type", kind), (":content-type", "application/json"), (":message-type", "event"))
    )
    body = json.dumps(payload).encode()
    prelude = struct.pack(">II", 12 + len(headers) + len(body) + 4, len(headers))
    head = prelude + struct.pack(">I", binascii.crc32(prelude))
    message = head + headers + body
    return message + struct.pack(">I", binascii.crc32(message))


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    return struct.pack(">B", len(raw_name)) + raw_name + struct.pack(">BH", 7, len(raw_value)) + raw_value
