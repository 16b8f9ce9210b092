"""The files docker-compose.yml mounts as Docker secrets (`make secrets`: `python -m duragent._ops.cli.compose_secrets`,
which calls `make_secrets`), generated once, before the first `docker compose up`, into `secrets/` (git- and
docker-ignored: they never reach a commit or an image). Compose reads no secret from a variable, so none
shows in `docker inspect` or in `docker compose config`; each service gets only the secrets it uses, as files
under /run/secrets/.

    secrets/postgres_password     Temporal's PostgreSQL superuser (the server, its schema jobs)
    secrets/agent_db_password     the workers' own role in the agents' database
    secrets/codec_keys            payload encryption keys: the worker and the codec endpoint
    secrets/codec_auth_token      who may decrypt through the codec endpoint (`--codec-auth "Bearer ..."`)
    secrets/webhook_secret        the HMAC key webhook deliveries are signed with
    secrets/worker_keys           the workers' own HMAC key: what the agents' workflows schedule is sealed with it
    secrets/approver_keys         the approvers' PUBLIC keys: workers count only decisions they signed
    secrets/openai_api_key        OPENAI_API_KEY as set when this ran, else empty (no `openai:` models)
    secrets/approvers/NAME.key    each approver's PRIVATE key, for that person only (never mounted)

Approver keys are required: the worker refuses to start without one (duragent/_config/approver_keys.py), so signed
decisions cannot be silently off in compose. Re-running keeps every existing file and adds what is missing —
a new `--approver` gets a key pair, her public key appended to `approver_keys`.

Modes: the directory is 0700, so no other local user reaches any of it. The private keys are 0600. The
mounted files are 0644: compose (without swarm) bind-mounts them with the host's owner and mode, and the
containers' non-root users (the worker's 10001, postgres, temporal) must read theirs.
"""

from __future__ import annotations

import base64
import os
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from agentic.signing import ApproverKey, parse_public_keys
from duragent._config.codec import new_key
from duragent._stores.sqlite_file import private_dir

MOUNTED = 0o644  # read by the containers' own users, through the 0700 directory only
PRIVATE = 0o600
# The files compose mounts (docker-compose.yml `secrets:`), each made by the function beside it.
RANDOM = ("postgres_password", "agent_db_password", "codec_auth_token", "webhook_secret")
APPROVER_KEYS = "approver_keys"
CODEC_KEYS = "codec_keys"
WORKER_KEYS = "worker_keys"
OPENAI_API_KEY = "openai_api_key"
MOUNTED_FILES = (*RANDOM, CODEC_KEYS, WORKER_KEYS, APPROVER_KEYS, OPENAI_API_KEY)


def make_secrets(directory: Path, approvers: Sequence[str], openai_api_key: str | None = None) -> list[Path]:
    """Create what is missing under `directory`; returns the files this call wrote."""
    for name in approvers:
        ApproverKey.generate(name)  # refuses a name that is not an approver name, before anything is written
    private_dir(directory)
    private_dir(directory / "approvers")
    made: list[Path] = []
    for name in RANDOM:
        made += _create(directory / name, secrets.token_hex(32) + "\n", MOUNTED)
    kid = f"k{datetime.now(UTC):%Y%m%d}"
    made += _create(directory / CODEC_KEYS, f"{kid}:{new_key()}\n", MOUNTED)
    # The signing key first; a rotation adds one under it, then moves it above (docs/operations.md, "Rotation").
    made += _create(directory / WORKER_KEYS, base64.b64encode(secrets.token_bytes(32)).decode() + "\n", MOUNTED)
    made += _create(directory / OPENAI_API_KEY, (openai_api_key or "").strip() + "\n", MOUNTED)
    public = directory / APPROVER_KEYS
    made += _create(public, "# NAME=PUBLIC_KEY per line (`make secrets APPROVERS=NAME` adds one)\n", MOUNTED)
    known = parse_public_keys(public.read_text())
    for name in approvers:
        key_path = directory / "approvers" / f"{name}.key"
        if key_path.exists() or name in known:
            continue  # her pair exists: a new one would lock her out of decisions she can sign today
        key = ApproverKey.generate(name)
        made += _create(key_path, key.entry() + "\n", PRIVATE)
        with public.open("a") as out:
            out.write(key.public_entry() + "\n")
        made.append(public)
    return made


def _create(path: Path, text: str, mode: int) -> list[Path]:
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError:
        return []
    with os.fdopen(descriptor, "w") as out:
        os.fchmod(descriptor, mode)  # whatever the umask
        out.write(text)
    return [path]
