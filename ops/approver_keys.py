"""Approver keys for signed decisions (agentic/signing.py), as operators handle them.

    python -m ops.approver_keys new maria      # prints maria's private key entry, then her public entry

The private entry (`maria:<base64>`) goes to maria only — a file she points `approve --key-file` at, or
the approval tooling that signs for her. The public entry (`maria=<base64>`) goes to every worker, in
`AGENT_APPROVER_KEYS` (comma-separated) or the file named by `AGENT_APPROVER_KEYS_FILE` (one per line).
Once any public key is configured, a decision counts only when signed by the approver it names.
"""

from __future__ import annotations

import sys
from pathlib import Path

from agentic.signing import ApproverKey, ApproverKeyError, parse_public_keys
from ops.settings import Settings


def approver_public_keys(settings: Settings) -> dict[str, str]:
    """The workers' approvers, from `AGENT_APPROVER_KEYS` and `AGENT_APPROVER_KEYS_FILE` (ApproverKeyError)."""
    text = settings.approver_keys or ""
    if settings.approver_keys_file is not None:
        try:
            text += "\n" + settings.approver_keys_file.read_text()
        except OSError as exc:
            where = settings.approver_keys_file
            raise ApproverKeyError(f"AGENT_APPROVER_KEYS_FILE: cannot read {where}: {exc.strerror}") from None
    return parse_public_keys(text)


def load_private_key(path: Path) -> ApproverKey:
    """An approver's own key file (`name:<base64>`); errors never echo key material."""
    try:
        return ApproverKey.parse(path.read_text())
    except OSError as exc:
        raise ApproverKeyError(f"cannot read the key file {path}: {exc.strerror}") from None


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] != "new":
        print("usage: python -m ops.approver_keys new NAME", file=sys.stderr)
        return 2
    try:
        key = ApproverKey.generate(argv[1])
    except ApproverKeyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"# private: give to {key.name} only (approve --key-file FILE)\n{key.entry()}")
    print(f"# public: add to every worker's AGENT_APPROVER_KEYS\n{key.public_entry()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
