"""Secrets read from files (`NAME_FILE`, how compose's secrets arrive) — the OpenAI key, the database password,
the approvers' public keys, the codec endpoint's token — and the bad-input paths of each: both forms set, a
file that cannot be read, an approver keys file with no key. Each is one clear error that never contains the
secret."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentic.signing import ApproverKey, ApproverKeyError
from duragent._config.approver_keys import approver_public_keys
from duragent._config.codec import new_key
from duragent._config.settings import ROOT, Settings
from duragent._stores.postgres.pool import file_password
from tests.config.test_codec import free_port, http

KEY = "sk-FROM-A-FILE-0123456789"


def test_the_openai_key_comes_from_its_file_or_its_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = tmp_path / "openai_api_key"
    secret.write_text(f"{KEY}\n")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY_FILE", str(secret))
    assert Settings().openai_api_key == KEY
    secret.write_text("\n")  # what `make secrets` writes without a key: no `openai:` models
    assert Settings().openai_api_key is None
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with pytest.raises(ValueError, match="set OPENAI_API_KEY or OPENAI_API_KEY_FILE, not both") as both:
        Settings()
    assert KEY not in str(both.value)
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("OPENAI_API_KEY_FILE", str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="OPENAI_API_KEY_FILE: cannot read"):
        Settings()


def test_the_database_password_comes_from_its_file(tmp_path: Path) -> None:
    secret = tmp_path / "agent_db_password"
    secret.write_text("s3cret-from-file\n")
    assert file_password({"PGPASSWORD_FILE": str(secret)}) == {"password": "s3cret-from-file"}
    assert file_password({"PGPASSWORD": "x"}) == {}, "libpq reads PGPASSWORD itself"
    assert file_password({}) == {}
    with pytest.raises(ValueError, match="not both"):
        file_password({"PGPASSWORD": "x", "PGPASSWORD_FILE": str(secret)})
    with pytest.raises(ValueError, match="PGPASSWORD_FILE: cannot read") as unreadable:
        file_password({"PGPASSWORD_FILE": str(tmp_path)})  # a directory: what Docker mounts for a missing file
    assert "s3cret" not in str(unreadable.value)


def test_an_approver_keys_file_must_hold_a_key(tmp_path: Path) -> None:
    keys = tmp_path / "approver_keys"
    keys.write_text("# NAME=PUBLIC_KEY per line\n")
    with pytest.raises(ApproverKeyError, match="holds no approver key"):
        approver_public_keys(Settings(approver_keys_file=keys))
    maria = ApproverKey.generate("maria")
    keys.write_text(f"# NAME=PUBLIC_KEY per line\n{maria.public_entry()}\n")
    assert set(approver_public_keys(Settings(approver_keys_file=keys))) == {"maria"}
    assert approver_public_keys(Settings(approver_keys=None, approver_keys_file=None)) == {}  # not asked for: none


def codec_endpoint(env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "starter.py", "codec-server", "--port", str(free_port())],
        cwd=ROOT,
        env={"PATH": os.environ["PATH"], "AGENT_CODEC_KEYS": f"k1:{new_key()}"} | env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.system  # a codec-server process of its own
def test_the_codec_endpoints_token_comes_from_its_file(tmp_path: Path) -> None:
    token = tmp_path / "codec_auth_token"
    token.write_text("codec-token-from-a-file-0123456789\n")
    for env, why in (
        ({"AGENT_CODEC_AUTH_TOKEN_FILE": str(tmp_path / "missing")}, "AGENT_CODEC_AUTH_TOKEN_FILE: cannot read"),
        ({"AGENT_CODEC_AUTH_TOKEN_FILE": str(token), "AGENT_CODEC_AUTH_TOKEN": "x" * 20}, "not both"),
    ):
        refused = codec_endpoint(env)
        _, err = refused.communicate(timeout=60)
        assert refused.returncode == 2 and why in err and "from-a-file" not in err, err
    served = codec_endpoint({"AGENT_CODEC_AUTH_TOKEN_FILE": str(token)})
    try:
        assert served.stdout is not None
        line = served.stdout.readline()
        assert "auth: bearer token or session" in line, line  # started, with the file's token
        url = line.split(" on ", 1)[1].split(" ", 1)[0]
        body = b'{"payloads": []}'
        assert http(f"{url}/decode", body, {"Content-Type": "application/json"})[0] == 401
        authorised = {"Content-Type": "application/json", "Authorization": "Bearer codec-token-from-a-file-0123456789"}
        assert http(f"{url}/decode", body, authorised)[0] == 200
    finally:
        served.terminate()
        served.wait(timeout=30)
