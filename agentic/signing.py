"""Signed approval decisions: who may approve is who holds an approver's private key, not whoever can send a
signal to the workflow.

Temporal has no user identity for signals and updates (anyone who may signal a workflow may send any
`approver` name), so when a deployment configures approver keys, a decision counts only if it carries an
Ed25519 signature by the named approver over exactly what it decides: the run and its execution, the
request, the call, yes or no, the reason and the hash of the arguments. The approval tooling holds the
private keys (a person's key file for the CLI; the HTTP API signs for its logged-in users); workers hold only
the public keys, which may appear in history: a public key grants nothing.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from agentic.messages import canonical_json

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")


class ApproverKeyError(ValueError):
    """A key entry that cannot be used; the message never contains key material."""


def signed_text(
    run_id: str,
    call_id: str,
    approve: bool,
    approver: str,
    reason: str,
    arguments_hash: str,
    *,
    execution: str | None = None,
    deadline: str | None = None,
) -> bytes:
    """The exact bytes an approver signs: everything the decision decides, in one canonical spelling.

    `execution` (the run's first execution id, the same across continue-as-new) and `deadline` (of the
    request the decision answers) bind a signature to one execution and one request: a new execution that
    reuses the workflow id cannot be handed an old signature. Decisions signed
    before they existed leave them out, so their bytes are what they always were."""
    text: dict[str, object] = {
        "approve": approve,
        "approver": approver,
        "arguments_hash": arguments_hash,
        "call_id": call_id,
        "reason": reason,
        "run_id": run_id,
    }
    if execution is not None:
        text["execution"] = execution
    if deadline is not None:
        text["deadline"] = deadline
    return canonical_json(text).encode()


@dataclass(frozen=True)
class ApproverKey:
    """One approver's private key: `name:base64(32-byte seed)`, as `python starter.py approver-key` prints."""

    name: str
    private: Ed25519PrivateKey

    @classmethod
    def generate(cls, name: str) -> ApproverKey:
        _check_name(name)
        return cls(name, Ed25519PrivateKey.generate())

    @classmethod
    def parse(cls, entry: str) -> ApproverKey:
        name, _, encoded = entry.strip().partition(":")
        _check_name(name)
        seed = _decode(encoded, 32, f"the private key of {name!r}")
        return cls(name, Ed25519PrivateKey.from_private_bytes(seed))

    def entry(self) -> str:
        from cryptography.hazmat.primitives.serialization import NoEncryption, PrivateFormat

        seed = self.private.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
        return f"{self.name}:{base64.b64encode(seed).decode()}"

    def public_entry(self) -> str:
        raw = self.private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return f"{self.name}={base64.b64encode(raw).decode()}"

    def sign(self, text: bytes) -> str:
        return base64.b64encode(self.private.sign(text)).decode()


def parse_public_keys(text: str | None) -> dict[str, str]:
    """`maria=BASE64,ops=BASE64` (or one per line): approver name -> public key (base64, checked)."""
    keys: dict[str, str] = {}
    for index, entry in enumerate(e.strip() for e in re.split(r"[,\n]", text or "")):
        if not entry or entry.startswith("#"):
            continue
        name, sep, encoded = entry.partition("=")
        if not sep:
            raise ApproverKeyError(f"approver key entry {index + 1}: expected NAME=PUBLIC_KEY")
        _check_name(name.strip())
        _decode(encoded.strip(), 32, f"the public key of {name.strip()!r}")
        keys[name.strip()] = encoded.strip()
    return keys


def signature_problem(keys: Mapping[str, str], signature: str | None, approver: str, text: bytes) -> str | None:
    """Why the signature does not authorise this decision, or None when it does."""
    if approver not in keys:
        return f"{approver!r} is not an approver here (signed decisions are required)"
    if not signature:
        return f"the decision is not signed; signed decisions are required (by {approver}'s key)"
    try:
        raw_key = base64.b64decode(keys[approver], validate=True)
        raw_signature = base64.b64decode(signature, validate=True)
        Ed25519PublicKey.from_public_bytes(raw_key).verify(raw_signature, text)
    except (InvalidSignature, binascii.Error, ValueError):
        return f"the signature is not {approver}'s over this decision; nothing was decided"
    return None


def _check_name(name: str) -> None:
    if not _NAME.match(name):
        raise ApproverKeyError("an approver name is 1-64 letters, digits, '.', '_', '@' or '-'")


def _decode(encoded: str, size: int, what: str) -> bytes:
    try:
        raw = base64.b64decode(encoded, validate=True)
    except binascii.Error:
        raise ApproverKeyError(f"{what} is not base64") from None
    if len(raw) != size:
        raise ApproverKeyError(f"{what} is {len(raw)} bytes; Ed25519 needs {size}")
    return raw
