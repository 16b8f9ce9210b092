"""Making keys: `starter.py codec-key [KEY_ID]` (payload encryption at rest) and `starter.py approver-key NAME`
(signed decisions). Each prints entries to paste where docs/operations.md says; nothing is stored."""

from __future__ import annotations

import argparse

from agentic.signing import ApproverKey
from duragent._config.codec.keys import new_entry
from duragent._config.settings import Settings


def add_codec_key_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("key_id", nargs="?", default="k1", help="the key's id (default: k1)")


def add_approver_key_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="the approver's name, as decisions and AGENT_APPROVER_KEYS name them")


def cmd_codec_key(args: argparse.Namespace, settings: Settings) -> int:
    """One `KEY_ID:<base64 of 32 random bytes>` line for AGENT_CODEC_KEYS (or the key file)."""
    print(new_entry(args.key_id))
    return 0


def cmd_approver_key(args: argparse.Namespace, settings: Settings) -> int:
    """The approver's private entry (for them only), then the public entry every worker gets."""
    key = ApproverKey.generate(args.name)
    print(f"# private: give to {key.name} only (approve --key-file FILE)\n{key.entry()}")
    print(f"# public: add to every worker's AGENT_APPROVER_KEYS\n{key.public_entry()}")
    return 0
