"""Approver keys for signed decisions (agentic/signing.py), as operators handle them.

    python starter.py approver-key maria          # prints maria's private key entry, then her public entry

The private entry (`maria:<base64>`) goes to maria only — a file she points `approve --key-file` at, or
the approval tooling that signs for her. The public entry (`maria=<base64>`) goes to every worker, in
`AGENT_APPROVER_KEYS` (comma-separated) or the file named by `AGENT_APPROVER_KEYS_FILE` (one per line).
Once any public key is configured, a decision counts only when signed by the approver it names.
"""

from __future__ import annotations

import re
from pathlib import Path

from agentic.signing import ApproverKey, ApproverKeyError, parse_public_keys
from duragent._config.secrets import value_or_file
from duragent._config.settings import Settings

# The runs API signs decisions for its logged-in approvers: their PRIVATE keys, for the API process only.
API_KEYS_ENV = "AGENT_API_APPROVER_KEYS"
API_KEYS_FILE_ENV = "AGENT_API_APPROVER_KEYS_FILE"


def approver_public_keys(settings: Settings) -> dict[str, str]:
    """The workers' approvers, from `AGENT_APPROVER_KEYS` and `AGENT_APPROVER_KEYS_FILE` (ApproverKeyError).
    A file named but holding no key is an error, not "no approvals to sign": a deployment that mounts the
    approvers' keys (compose) must not start with signed decisions silently off."""
    text = settings.approver_keys or ""
    if settings.approver_keys_file is not None:
        where = settings.approver_keys_file
        try:
            from_file = where.read_text()
        except OSError as exc:
            raise ApproverKeyError(f"AGENT_APPROVER_KEYS_FILE: cannot read {where}: {exc.strerror}") from None
        if not parse_public_keys(from_file):
            raise ApproverKeyError(
                f"AGENT_APPROVER_KEYS_FILE: {where} holds no approver key (`duragent approver-key NAME`)"
            )
        text += "\n" + from_file
    return parse_public_keys(text)


def api_signing_keys(settings: Settings) -> dict[str, ApproverKey]:
    """Approver name -> private key, from `AGENT_API_APPROVER_KEYS` (`maria:BASE64,ops:BASE64`) or the file
    named by `AGENT_API_APPROVER_KEYS_FILE` (one per line). The HTTP API signs a decision with the key named
    like the caller's token identity; a key name is an approver name (agentic/signing.py)."""
    found = value_or_file(
        settings.api_approver_keys, settings.api_approver_keys_file, API_KEYS_ENV, API_KEYS_FILE_ENV, ApproverKeyError
    )
    keys: dict[str, ApproverKey] = {}
    for entry in re.split(r"[,\n]", found[0] if found else ""):
        if entry.strip() and not entry.strip().startswith("#"):
            key = ApproverKey.parse(entry)
            keys[key.name] = key
    return keys


def load_private_key(path: Path) -> ApproverKey:
    """An approver's own key file (`name:<base64>`); errors never echo key material."""
    try:
        return ApproverKey.parse(path.read_text())
    except OSError as exc:
        raise ApproverKeyError(f"cannot read the key file {path}: {exc.strerror}") from None
