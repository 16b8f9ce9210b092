"""Encryption at rest: the AES-GCM payload codec, its keys and rotation, the codec endpoint, and the
acceptance test — a secret planted in a run is ciphertext in Temporal's history (read with the real CLI),
plaintext to our client, and plaintext to whoever the codec endpoint lets decrypt it."""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DefaultFailureConverterWithEncodedAttributes
from temporalio.testing import WorkflowEnvironment

from agentic import Agent, Budget, FakeModel, Registry, tool, tool_call
from duragent._activities.inputs import AgentResult
from duragent._client import AgentClient
from duragent._config.codec import (
    ENCODING,
    KEY_ID,
    AesGcmCodec,
    DecryptionError,
    KeyConfigError,
    KeyRing,
    UnknownKeyError,
)
from duragent._config.codec.aesgcm import FORMAT, FORMAT_VERSION, PlaintextPayloadError
from duragent._config.codec.keys import load_keyring, new_key
from duragent._config.connection import data_converter
from duragent._config.settings import ROOT, Settings
from duragent._config.temporal_binaries import TEMPORAL_CLI
from duragent._connection import connect
from duragent._ops.http.codec import COOKIE, codec_auth, create_codec_app
from duragent._stores.configured import transcripts_for
from duragent._stores.ledger import EffectsLedger
from duragent._workflows.inputs import AgentInput
from tests.conftest import TEST_AGENTS, new_worker
from tests.support.serving import serving

SECRET = "sk-live-PLANTED-SECRET-4471"
ENCRYPTED_B64 = base64.b64encode(ENCODING).decode()


# -- an agent whose tool argument (and answer) is the secret --------------------------------------


@tool(description="Store an API credential in the vault.", credential="The credential to store.")
def store_credential(credential: str) -> str:
    return f"stored {credential}"


SECRET_AGENT = Agent(
    FakeModel([tool_call("store_credential", {"credential": SECRET}), f"Stored {SECRET} in the vault."]),
    Registry([store_credential]),
    budget=Budget(max_steps=3),
    name="t-secret",
    description="a secret in a tool argument",
    task="Store the API key.",
)


# -- helpers --------------------------------------------------------------------------------------


def ring(*kids: tuple[str, str]) -> str:
    return ",".join(f"{kid}:{key}" for kid, key in kids)


def address(env: WorkflowEnvironment) -> str:
    return env.client.service_client.config.target_host


@asynccontextmanager
async def codec_worker(
    env: WorkflowEnvironment, tmp_path: Path, keys: str, task_queue: str
) -> AsyncIterator[tuple[Client, Settings]]:
    """A client with the codec (through `client.connect`, as the worker and the starter get it) and a
    worker built on it."""
    settings = Settings(
        address=address(env),
        namespace=env.client.namespace,
        task_queue=task_queue,
        ledger_path=tmp_path / f"{task_queue}-ledger.db",
        data_dir=tmp_path / task_queue,
        codec_keys=keys,
    )
    client = await connect(settings)
    ledger = EffectsLedger(settings.ledger_path)
    agents = [*TEST_AGENTS, SECRET_AGENT]
    transcripts = transcripts_for(settings)
    async with new_worker(client, task_queue, ledger, agents=agents, transcripts=transcripts):
        yield client, settings


async def run(client: Client, settings: Settings, input: AgentInput) -> AgentResult:
    agents = AgentClient(client, task_queue=settings.task_queue)
    handle = await agents._start_input(
        input,  # whole inputs (engine knobs included): not public
        run_id=f"codec-{input.agent}-{uuid.uuid4().hex[:8]}",
    )
    return await handle.result()


def _unencoded_by_design(path: tuple[str, ...]) -> bool:
    """Search attribute values (the server indexes them) and the SDK's own bookkeeping in a local activity
    marker (`data`: sequence, activity type, times) are never encoded; everything else must be."""
    return "searchAttributes" in path or path == (
        "events",
        "markerRecordedEventAttributes",
        "details",
        "data",
        "payloads",
    )


def show(env: WorkflowEnvironment, workflow_id: str, *extra: str) -> tuple[str, dict[str, Any]]:
    """The raw history, as the real `temporal` CLI prints it."""
    command = [str(TEMPORAL_CLI), "workflow", "show", "--workflow-id", workflow_id, "--address", address(env)]
    command += ["--namespace", env.client.namespace, "--output", "json", *extra]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout, json.loads(done.stdout)


def payloads_in(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    """Every payload in a history's JSON (an object with metadata.encoding), with its path."""
    if isinstance(node, dict):
        metadata = node.get("metadata")
        if isinstance(metadata, dict) and "encoding" in metadata:
            yield path, node
        for key, value in node.items():
            yield from payloads_in(value, (*path, key))
    elif isinstance(node, list):
        for value in node:
            yield from payloads_in(value, path)


def decoded_data(history: dict[str, Any]) -> bytes:
    return b"\n".join(base64.b64decode(p.get("data", "")) for _, p in payloads_in(history))


def base64_forms(secret: str) -> list[str]:
    """The secret as it would appear inside any base64 text, at each of the three alignments."""
    forms = []
    for offset in range(3):
        encoded = base64.b64encode(b"x" * offset + secret.encode()).decode()
        # Drop the characters that mix in the padding bytes or what follows the secret.
        forms.append(encoded[(offset * 4 + 2) // 3 + 1 : -4])
    return forms


def http(url: str, body: bytes | None = None, headers: dict[str, str] | None = None, method: str = "POST"):
    request = urllib.request.Request(url, data=body, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def codec_server_process(keys: str, token: str) -> Iterator[str]:
    """`python -m codec.server` in its own process, stopped by its pid."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_CODEC")}
    env |= {"AGENT_CODEC_KEYS": keys, "AGENT_CODEC_AUTH_TOKEN": token}
    process = subprocess.Popen(
        [sys.executable, "starter.py", "codec-server", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if http(f"{url}/health", method="GET")[0] == 200:
                    break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"codec server did not start: {process.stdout.read() if process.stdout else ''}")
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(10)


def encrypted(codec: AesGcmCodec, value: str) -> Payload:
    return codec.encrypt(Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(value).encode()))


# -- acceptance -----------------------------------------------------------------------------------


async def test_history_never_holds_the_planted_secret(dev_env: WorkflowEnvironment, tmp_path: Path) -> None:
    keys = ring(("k1", new_key()))
    token = secrets.token_hex(16)
    task_queue = f"tq-codec-{uuid.uuid4().hex[:8]}"
    async with codec_worker(dev_env, tmp_path, keys, task_queue) as (client, settings):
        billing = await run(client, settings, AgentInput(agent="billing", task=f"Settle inv-9; card token {SECRET}"))
        planted = await run(client, settings, AgentInput(agent="t-secret"))

    # The transcript store (by reference, the conversation lives there) is ciphertext at rest too...
    store_file = settings.data_dir / "transcripts.db"
    raw_store = b"".join(p.read_bytes() for p in store_file.parent.glob("transcripts.db*"))
    assert store_file.exists() and SECRET.encode() not in raw_store
    # ...and reads back whole through the key ring.
    conversation = planted.transcript_messages(transcripts_for(settings))
    assert any(SECRET in m.content for m in conversation)

    # Our client decodes: the answer carries the secret, and so does the tool call it made.
    assert planted.stop.value == "answered", planted.stop_detail
    assert SECRET in (planted.output or "")
    assert [r.call.arguments for r in planted.records] == [{"credential": SECRET}]
    started = (await client.get_workflow_handle(billing.run_id).fetch_history()).events[0]
    [billing_input] = await client.data_converter.decode(
        started.workflow_execution_started_event_attributes.input.payloads, [AgentInput]
    )
    assert SECRET in billing_input.task
    assert billing.stop.value == "answered"

    for run_id in (billing.run_id, planted.run_id):
        text, history = show(dev_env, run_id)
        assert len(history["events"]) > 10
        # Nowhere in the raw history: not as text, not inside any base64, not inside any payload's bytes.
        assert SECRET not in text
        assert not [form for form in base64_forms(SECRET) if form in text]
        assert SECRET.encode() not in decoded_data(history)
        # Every payload is ciphertext — input, activity arguments and results (the local activity's too),
        # summaries, memo, result — except search attribute values, which the server must be able to index,
        # and the SDK's own bookkeeping in the local activity marker (`data`: sequence, activity type, times).
        found = list(payloads_in(history))
        plain = [path for path, p in found if p["metadata"]["encoding"] != ENCRYPTED_B64]
        assert len(found) - len(plain) >= 8
        assert plain and all(_unencoded_by_design(path) for path in plain), plain
        kinds = {path[-2] if path[-1] == "payloads" else path[-1] for path, _ in found}
        assert {"input", "result", "summary"} <= kinds

    with codec_server_process(keys, token) as url:
        # The real CLI, pointed at the codec endpoint with the token, shows the plaintext again.
        _, decoded = show(dev_env, planted.run_id, "--codec-endpoint", url, "--codec-auth", f"Bearer {token}")
        assert SECRET.encode() in decoded_data(decoded)
        assert not [p for p in payloads_in(decoded) if p[1]["metadata"]["encoding"] == ENCRYPTED_B64]

        # What the workflow stored (its input), posted to /decode over HTTP.
        _, raw = show(dev_env, billing.run_id)
        stored = raw["events"][0]["workflowExecutionStartedEventAttributes"]["input"]
        body = json.dumps(stored).encode()
        status, _, answer = http(f"{url}/decode", body, {"Authorization": f"Bearer {token}", "X-Namespace": "default"})
        assert status == 200
        [payload] = json_format.Parse(answer, Payloads()).payloads
        assert SECRET in json.loads(payload.data)["task"]
        # Refused without the token, or with a wrong one — and nothing decoded leaks into the refusal.
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {token}"}):
            status, _, answer = http(f"{url}/decode", body, headers)
            assert status == 401, headers
            assert SECRET.encode() not in answer and b"task" not in answer


async def test_rotation_old_payloads_decrypt_after_a_new_key_is_active(
    dev_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    k1, k2 = ("k1", new_key()), ("k2", new_key())
    async with codec_worker(dev_env, tmp_path, ring(k1), f"tq-rot1-{uuid.uuid4().hex[:8]}") as (client, settings):
        old = await run(client, settings, AgentInput(agent="t-secret"))
    _, history = show(dev_env, old.run_id)
    key_ids = {p["metadata"].get(KEY_ID) for path, p in payloads_in(history) if not _unencoded_by_design(path)}
    assert key_ids == {base64.b64encode(b"k1").decode()}

    # k2 becomes the active key; k1 stays loaded to read what was written under it.
    async with codec_worker(dev_env, tmp_path, ring(k2, k1), f"tq-rot2-{uuid.uuid4().hex[:8]}") as (client, settings):
        again = await client.get_workflow_handle(old.run_id, result_type=AgentResult).result()
        assert SECRET in (again.output or "")
        new = await run(client, settings, AgentInput(agent="t-secret"))
        assert SECRET in (new.output or "")
    _, history = show(dev_env, new.run_id)
    key_ids = {p["metadata"].get(KEY_ID) for path, p in payloads_in(history) if not _unencoded_by_design(path)}
    assert key_ids == {base64.b64encode(b"k2").decode()}

    # Once k1 is dropped, its payloads fail loudly, naming the missing key — never silently.
    only_k2 = await connect(Settings(address=address(dev_env), namespace=dev_env.client.namespace, codec_keys=ring(k2)))
    with pytest.raises(UnknownKeyError, match="'k1'"):
        await only_k2.get_workflow_handle(old.run_id, result_type=AgentResult).result()


# -- the codec ------------------------------------------------------------------------------------


def test_round_trip_and_wire_format() -> None:
    codec = AesGcmCodec(KeyRing.parse(ring(("k1", new_key()))))
    original = Payload(metadata={"encoding": b"json/plain", "extra": b"x"}, data=json.dumps(SECRET).encode())
    first, second = codec.encrypt(original), codec.encrypt(original)
    assert first.metadata["encoding"] == ENCODING and first.metadata[KEY_ID] == b"k1"
    assert set(first.metadata) == {"encoding", KEY_ID, FORMAT}  # the original metadata is inside the ciphertext
    assert SECRET.encode() not in first.data and b"json/plain" not in first.data
    assert first.data != second.data  # a fresh nonce each time
    assert codec.decrypt(first) == original == codec.decrypt(second)
    plain = Payload(metadata={"encoding": b"json/plain"}, data=b'"hello"')
    assert codec.decrypt(plain) == plain  # history from before the codec was on stays readable


def test_tampering_and_unknown_keys_fail_loudly() -> None:
    codec = AesGcmCodec(KeyRing.parse(ring(("k1", new_key()))))
    sealed = encrypted(codec, SECRET)
    flipped = Payload(metadata=sealed.metadata, data=sealed.data[:-1] + bytes([sealed.data[-1] ^ 1]))
    with pytest.raises(DecryptionError):
        codec.decrypt(flipped)
    with pytest.raises(DecryptionError):
        codec.decrypt(Payload(metadata=sealed.metadata, data=sealed.data[:20]))
    other = AesGcmCodec(KeyRing.parse(ring(("k1", new_key()))))  # same id, different key
    with pytest.raises(DecryptionError):
        other.decrypt(sealed)
    stranger = AesGcmCodec(KeyRing.parse(ring(("k9", new_key()))))
    with pytest.raises(UnknownKeyError) as raised:
        stranger.decrypt(sealed)
    assert "'k1'" in str(raised.value) and "k9" in str(raised.value)


def test_rotation_in_the_codec() -> None:
    k1, k2 = ("k1", new_key()), ("k2", new_key())
    old = AesGcmCodec(KeyRing.parse(ring(k1)))
    rotated = AesGcmCodec(KeyRing.parse(ring(k2, k1)))
    sealed_old = encrypted(old, SECRET)
    assert rotated.active_key_id == "k2"
    assert json.loads(rotated.decrypt(sealed_old).data) == SECRET
    sealed_new = encrypted(rotated, SECRET)
    assert sealed_new.metadata[KEY_ID] == b"k2"
    with pytest.raises(UnknownKeyError):
        old.decrypt(sealed_new)


def test_key_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key1, key2 = new_key(), new_key()
    assert len(base64.b64decode(key1)) == 32
    parsed = KeyRing.parse(f" k2:{key2} ,\nk1:{key1}")
    assert parsed.active == "k2" and parsed.key_ids == ["k2", "k1"]
    urlsafe = base64.urlsafe_b64encode(base64.b64decode(key1)).decode().rstrip("=")
    assert KeyRing.parse(f"k1:{urlsafe}").keys["k1"] == base64.b64decode(key1)
    assert key1 not in repr(parsed) and key1 not in repr(Settings(codec_keys=f"k1:{key1}"))

    short = base64.b64encode(b"x" * 16).decode()
    for bad, why in [
        ("", "no keys"),
        (f"k1{key1}", "kid:base64key"),
        (f"k1:{key1},k1:{key2}", "twice"),
        (f"k1:{short}", "16 bytes"),
        ("k1:not base64!", "not valid base64"),
        (f"bad id:{key1}", "bad key id"),
    ]:
        with pytest.raises(KeyConfigError, match=why) as raised:
            KeyRing.parse(bad)
        assert key1 not in str(raised.value) and key2 not in str(raised.value)

    key_file = tmp_path / "codec.keys"
    key_file.write_text(f"# rotated 2026-11\nk2:{key2}\n\nk1:{key1}  # retire after the retention period\n")
    assert load_keyring(None, key_file) == KeyRing("k2", {"k2": base64.b64decode(key2), "k1": base64.b64decode(key1)})
    assert load_keyring(None, None) is None and load_keyring("  ", None) is None
    with pytest.raises(KeyConfigError, match="not both"):
        load_keyring(f"k1:{key1}", key_file)
    with pytest.raises(KeyConfigError, match="cannot read"):
        load_keyring(None, tmp_path / "missing.keys")

    # From the environment, through Settings, into the data converter every process connects with.
    monkeypatch.setenv("AGENT_CODEC_KEY_FILE", str(key_file))
    converter = data_converter(Settings())
    assert isinstance(converter.payload_codec, AesGcmCodec) and converter.payload_codec.active_key_id == "k2"
    assert isinstance(converter.failure_converter, DefaultFailureConverterWithEncodedAttributes)
    assert converter.payload_converter_class is pydantic_data_converter.payload_converter_class
    monkeypatch.delenv("AGENT_CODEC_KEY_FILE")
    monkeypatch.setenv("AGENT_CODEC_KEYS", "")  # compose passes an unset `${X:-}` as an empty string
    assert data_converter(Settings()) is pydantic_data_converter


@pytest.mark.system
def test_python_m_codec_keys_new_prints_a_usable_entry() -> None:
    done = subprocess.run(
        [sys.executable, "starter.py", "codec-key", "k2026-11"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert KeyRing.parse(done.stdout).active == "k2026-11"


# -- the codec endpoint ---------------------------------------------------------------------------


def test_codec_endpoint_protocol_cors_and_access() -> None:
    codec = AesGcmCodec(KeyRing.parse(ring(("k1", new_key()))))
    token = secrets.token_hex(16)
    app = create_codec_app(codec, codec_auth(token), origins={"http://localhost:8233"})
    bearer = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    with serving(app) as served:
        url = served.url
        # encode then decode, through the protocol's JSON; also under a namespace prefix (the CLI's templating).
        plain = Payloads(payloads=[Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(SECRET).encode())])
        status, _, body = http(f"{url}/encode", json_format.MessageToJson(plain).encode(), bearer)
        assert status == 200 and SECRET.encode() not in body
        sealed = json_format.Parse(body, Payloads())
        assert sealed.payloads[0].metadata["encoding"] == ENCODING
        status, headers, body = http(f"{url}/default/decode", body, bearer | {"X-Namespace": "default"})
        assert status == 200 and json_format.Parse(body, Payloads()) == plain
        assert headers["cache-control"] == "no-store"

        # CORS: the Web UI's origin may call it (preflights need no credentials); another origin gets no grant,
        # nor does one that merely starts or ends like it (the allowlist is compared whole).
        asks = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type,x-namespace"}
        status, headers, _ = http(f"{url}/decode", None, {"Origin": "http://localhost:8233"} | asks, method="OPTIONS")
        assert status == 200 and headers["access-control-allow-origin"] == "http://localhost:8233"
        assert "Authorization" in headers["access-control-allow-headers"]
        assert "X-Namespace" in headers["access-control-allow-headers"]
        assert headers["access-control-allow-credentials"] == "true"
        for origin in ("https://evil.example", "http://localhost:8233.evil.example", "http://localhost:82330"):
            status, headers, _ = http(f"{url}/decode", None, {"Origin": origin} | asks, method="OPTIONS")
            assert status == 400 and "access-control-allow-origin" not in headers, origin
            status, headers, _ = http(
                f"{url}/decode", json_format.MessageToJson(sealed).encode(), bearer | {"Origin": origin}
            )
            # A POST from another origin changes nothing here, whatever it carries: 403, and no grant.
            assert status == 403 and "access-control-allow-origin" not in headers, origin
        status, headers, _ = http(f"{url}/decode", b"{}", {"Origin": "http://localhost:8233"})
        assert status == 401 and headers["access-control-allow-origin"] == "http://localhost:8233"  # UI reads why

        # The Web UI's session: sign in with the token once, then the cookie alone decodes.
        sealed_body = json_format.MessageToJson(sealed).encode()
        status, _, _ = http(f"{url}/decode", sealed_body, {"Cookie": f"{COOKIE}=wrong"})
        assert status == 401
        status, _, _ = http(f"{url}/login", b"token=wrong", {"Content-Type": "application/x-www-form-urlencoded"})
        assert status == 401
        opener = urllib.request.build_opener(_NoRedirect)
        login = urllib.request.Request(f"{url}/login", data=f"token={token}".encode(), method="POST")
        try:
            opener.open(login, timeout=10)
            raise AssertionError("expected a redirect")
        except urllib.error.HTTPError as exc:
            assert exc.code == 303
            cookie = exc.headers["Set-Cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        status, _, body = http(f"{url}/decode", sealed_body, {"Cookie": cookie.split(";")[0]})
        assert status == 200 and json.loads(json_format.Parse(body, Payloads()).payloads[0].data) == SECRET

        # Errors are explicit and carry no payload contents.
        status, _, body = http(f"{url}/decode", b"{not json", bearer)
        assert status == 400 and "not a Payloads JSON body" in json.loads(body)["error"]
        status, headers, _ = http(f"{url}/decode", method="GET")
        assert status == 405 and headers["allow"] == "POST"
        assert http(f"{url}/nothing", b"{}", bearer)[0] == 404
        foreign = AesGcmCodec(KeyRing.parse(ring(("k7", new_key()))))
        stray = json_format.MessageToJson(Payloads(payloads=[encrypted(foreign, SECRET)])).encode()
        status, _, body = http(f"{url}/decode", stray, bearer)
        assert status == 422 and b"k7" in body and SECRET.encode() not in body


def test_codec_endpoint_with_insecure_no_auth_decodes_for_anyone_who_reaches_it() -> None:
    """The explicit opt-out (`--insecure-no-auth`, loopback only): no access check at all."""
    codec = AesGcmCodec(KeyRing.parse(ring(("k1", new_key()))))
    with serving(create_codec_app(codec, codec_auth(None, insecure_no_auth=True))) as served:
        body = json_format.MessageToJson(Payloads(payloads=[encrypted(codec, SECRET)])).encode()
        status, _, answer = http(f"{served.url}/decode", body)
        assert status == 200 and json.loads(json_format.Parse(answer, Payloads()).payloads[0].data) == SECRET
        assert b"needs no token" in http(f"{served.url}/login", method="GET")[2]


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def test_a_key_entry_written_the_wrong_way_round_never_echoes_the_key() -> None:
    """`BASE64KEY:kid` instead of `kid:BASE64KEY`: the 'kid' is then the key; no error names it."""
    raw = os.urandom(32)
    for key in (
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),  # also a syntactically valid key id
    ):
        for text in (f"{key}:k1", f"k0:{new_key()},{key}:k1", f"{key}:{new_key()}"):
            with pytest.raises(KeyConfigError) as raised:
                KeyRing.parse(text)
            message = str(raised.value)
            assert key[:8] not in message and key[-8:] not in message, message
            assert "entry" in message
    with pytest.raises(KeyConfigError) as raised:
        KeyRing("x" * 80, {"x" * 80: raw})
    assert "x" * 8 not in str(raised.value)


def test_the_key_id_is_authenticated_and_old_payloads_still_decrypt() -> None:
    """The key id (and the format version) are AES-GCM associated data, so a payload relabelled
    with another key id, or stripped of its version marker, does not authenticate; payloads written before
    the change (no marker, no associated data) still decrypt."""
    raw = new_key()
    codec = AesGcmCodec(KeyRing.parse(ring(("k1", raw), ("k2", raw))))  # the same bytes under two ids
    sealed = encrypted(codec, SECRET)
    assert sealed.metadata[FORMAT] == FORMAT_VERSION
    relabelled = Payload(metadata={"encoding": ENCODING, KEY_ID: b"k2", FORMAT: FORMAT_VERSION}, data=sealed.data)
    with pytest.raises(DecryptionError):
        codec.decrypt(relabelled)
    downgraded = Payload(metadata={"encoding": ENCODING, KEY_ID: b"k1"}, data=sealed.data)
    with pytest.raises(DecryptionError):
        codec.decrypt(downgraded)

    # A payload in the format before this change: the same AES-GCM, no associated data, no marker.
    inner = Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(SECRET).encode())
    nonce = os.urandom(12)
    legacy_data = nonce + AESGCM(base64.b64decode(raw)).encrypt(nonce, inner.SerializeToString(), None)
    legacy = Payload(metadata={"encoding": ENCODING, KEY_ID: b"k1"}, data=legacy_data)
    assert codec.decrypt(legacy) == inner


def test_strict_mode_refuses_unencrypted_payloads(monkeypatch: pytest.MonkeyPatch) -> None:
    """By default plaintext passes through (history from before the codec); with
    AGENT_CODEC_STRICT=1 a keyless client's plaintext input or signal is refused."""
    keys = ring(("k1", new_key()))
    plain = Payload(metadata={"encoding": b"json/plain"}, data=b'"approve everything"')
    assert AesGcmCodec(KeyRing.parse(keys)).decrypt(plain) == plain
    strict = AesGcmCodec(KeyRing.parse(keys), strict=True)
    with pytest.raises(PlaintextPayloadError, match="AGENT_CODEC_STRICT"):
        strict.decrypt(plain)
    assert strict.decrypt(strict.encrypt(plain)) == plain

    monkeypatch.setenv("AGENT_CODEC_KEYS", keys)
    monkeypatch.setenv("AGENT_CODEC_STRICT", "1")
    codec = data_converter(Settings()).payload_codec
    assert isinstance(codec, AesGcmCodec) and codec.strict
    monkeypatch.setenv("AGENT_CODEC_STRICT", "0")
    assert not data_converter(Settings()).payload_codec.strict  # type: ignore[union-attr]
    monkeypatch.delenv("AGENT_CODEC_KEYS")
    monkeypatch.setenv("AGENT_CODEC_STRICT", "1")
    with pytest.raises(KeyConfigError, match="AGENT_CODEC_STRICT"):
        data_converter(Settings())  # strict without keys would refuse everything: say so at startup
