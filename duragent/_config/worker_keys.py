"""The workers' own key: what the agents' workflow code signs everything it schedules with, so that an activity
acts only for a schedule the agents' own workers made — never for one made by whoever else polls the agents'
task queue (docs/operations.md, "Trust model").

`AGENT_WORKER_KEYS` (or the file `AGENT_WORKER_KEYS_FILE` names): base64 keys of at least 32 bytes, separated
by commas or newlines. Every worker of a task queue holds the same list. The first signs; every one verifies —
so a rotation is, on every worker before the next step: add the new key after the old one, then put it first,
then, once nothing scheduled under the old one can still run (an activity's retries carry the schedule it was
given), drop the old one.

    python -c "import base64, secrets; print(base64.b64encode(secrets.token_bytes(32)).decode())"

A seal is HMAC-SHA256 over one canonical text: what is scheduled (an activity, a child workflow, a
continuation), by which run and execution, and its whole input. It travels in the schedule's Temporal header
(recorded in history: a MAC grants nothing without the key); the key itself is worker configuration, read once
at start, never part of a run. `duragent._sealing` signs and checks.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentic.messages import canonical_json
from duragent._config.secrets import value_or_file
from duragent._config.settings import Settings

KEYS_ENV = "AGENT_WORKER_KEYS"
KEYS_FILE_ENV = "AGENT_WORKER_KEYS_FILE"
MIN_KEY_BYTES = 32
VERSION = "v1"
_SEAL = re.compile(rf"{VERSION}:[0-9a-f]{{64}}")  # what `seal` makes: the version, then a SHA-256 HMAC in hex


class WorkerKeyError(ValueError):
    """A worker key that cannot be used; the message never contains key material."""


@dataclass(frozen=True)
class WorkerKeys:
    """The keys every worker of a task queue holds: `keys[0]` signs, all of them verify."""

    keys: tuple[bytes, ...]

    def __post_init__(self) -> None:
        if not self.keys:
            raise WorkerKeyError("at least one worker key is needed")
        for index, key in enumerate(self.keys):
            if len(key) < MIN_KEY_BYTES:
                raise WorkerKeyError(f"worker key {index + 1} is {len(key)} bytes; at least {MIN_KEY_BYTES} are needed")

    def __repr__(self) -> str:  # never the keys
        return f"WorkerKeys({len(self.keys)} key{'s' if len(self.keys) != 1 else ''})"

    @classmethod
    def parse(cls, text: str) -> WorkerKeys:
        """`BASE64,BASE64` (or one per line; `#` comments): the signing key first."""
        keys = []
        for index, entry in enumerate(e.strip() for e in re.split(r"[,\n]", text)):
            if not entry or entry.startswith("#"):
                continue
            try:
                keys.append(base64.b64decode(entry, validate=True))
            except binascii.Error:
                raise WorkerKeyError(f"worker key entry {index + 1} is not base64") from None
        return cls(tuple(keys))

    def seal(self, text: bytes) -> str:
        return _mac(self.keys[0], text)

    def verifies(self, seal: object, text: bytes) -> bool:
        """Whether `seal` is a seal of `text` under any of the keys (constant-time per key). Anything that is not
        shaped like a seal (whoever scheduled the task wrote the header: any bytes, any length) is simply not one:
        False, never an exception that would make the refusal a retried failure."""
        if not isinstance(seal, str) or not _SEAL.fullmatch(seal) or not isinstance(text, bytes):
            return False
        given = seal.encode("ascii")
        return any(hmac.compare_digest(given, _mac(key, text).encode("ascii")) for key in self.keys)


def sealed_text(what: str, name: str, workflow_id: str, run_id: str, target: str, args: Sequence[Any]) -> bytes:
    """The exact bytes a seal covers: `what` (activity, child, continuation) is scheduled under `name` by
    execution `run_id` of run `workflow_id`, for `target` (a child's workflow id; empty otherwise), with these
    arguments (as JSON values). Binding the execution keeps a seal copied from one run's history from opening
    a schedule in another run or another execution under a reused id."""
    return canonical_json(
        {"what": what, "name": name, "workflow_id": workflow_id, "run_id": run_id, "target": target, "args": args}
    ).encode()


def _mac(key: bytes, text: bytes) -> str:
    return f"{VERSION}:" + hmac.new(key, text, hashlib.sha256).hexdigest()


def load_worker_keys(settings: Settings) -> WorkerKeys | None:
    """The settings' worker keys (`AGENT_WORKER_KEYS` or its file), or None when neither is set. A file named
    but holding no key is an error: a deployment that mounts one must not start with sealing silently off."""
    found = value_or_file(settings.worker_keys, settings.worker_keys_file, KEYS_ENV, KEYS_FILE_ENV, WorkerKeyError)
    if found is None:
        return None
    text, where = found
    if not any(e.strip() and not e.strip().startswith("#") for e in re.split(r"[,\n]", text)):
        if settings.worker_keys_file is not None:
            raise WorkerKeyError(f"{where} holds no worker key")
        return None
    try:
        return WorkerKeys.parse(text)
    except WorkerKeyError as exc:
        raise WorkerKeyError(f"{where}: {exc}") from None
