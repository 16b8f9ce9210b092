"""duragent/_ops/http/auth.py, the access rules every HTTP surface shares: token entries, roles, constant-time lookup,
the start-up rule and the Host check. (The same rules over real HTTP: tests/ops/test_baseline_http.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent._config.settings import Settings
from duragent._ops.http.auth import (
    AuthConfigError,
    Principal,
    TokenTable,
    allowed_hosts,
    check_startup,
    host_allowed,
    is_loopback,
    load_tokens,
)

A = "tok-approver-0123456789"
V = "tok-viewer-0123456789ab"


def test_tokens_name_a_principal_and_a_role(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = TokenTable.parse(f"{A}=maria:approver, {V}=ops:viewer")
    assert table.identify(A) == Principal("maria", "approver")
    assert table.identify(V) == Principal("ops", "viewer")
    assert table.identify("tok-approver-012345678") is None and table.identify(None) is None
    assert table.identify(A + "x") is None
    assert Principal("maria", "approver").may("viewer") and not Principal("ops", "viewer").may("approver")
    assert A not in repr(table)

    tokens_file = tmp_path / "tokens"
    tokens_file.write_text(f"# people\n{A}=maria:approver\n\n{V}=ops:viewer  # the dashboard\n")

    def tokens(**environ: str) -> TokenTable | None:  # read as `serve` reads them: into Settings, once
        for name in ("AGENT_API_TOKENS", "AGENT_API_TOKENS_FILE"):
            monkeypatch.delenv(name, raising=False)
        for name, value in environ.items():
            monkeypatch.setenv(name, value)
        return load_tokens(Settings.from_env())

    assert len(tokens(AGENT_API_TOKENS_FILE=str(tokens_file)) or []) == 2
    assert tokens() is None and tokens(AGENT_API_TOKENS="  ") is None
    with pytest.raises(AuthConfigError, match="not both"):
        tokens(AGENT_API_TOKENS=f"{A}=maria:approver", AGENT_API_TOKENS_FILE=str(tokens_file))
    with pytest.raises(AuthConfigError, match="cannot read"):
        tokens(AGENT_API_TOKENS_FILE=str(tmp_path / "missing"))
    assert A not in repr(Settings(api_tokens=f"{A}=maria:approver"))


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (f"{A}", "token=name:role"),
        (f"{A}=maria", "role"),
        (f"{A}=maria:admin", "role must be one of viewer, approver"),
        ("short=maria:approver", "at least 16"),
        (f"{A}=:approver", "token=name:role"),
        (f"{A}=maria:approver,{A}=bob:viewer", "twice"),
        ("", "no tokens"),
        (f"maria:approver={A}", "form token=name:role"),
    ],
)
def test_bad_entries_are_named_by_position_never_echoed(text: str, why: str) -> None:
    with pytest.raises(AuthConfigError, match=why) as raised:
        TokenTable.parse(text)
    assert A not in str(raised.value) and "short" not in str(raised.value)


def test_startup_rule_and_hosts() -> None:
    check_startup("0.0.0.0", True, False, what="x", token_env="T")  # tokens: any address
    check_startup("127.0.0.1", False, True, what="x", token_env="T")
    check_startup("::1", False, True, what="x", token_env="T")
    with pytest.raises(AuthConfigError, match="refusing to start without T"):
        check_startup("127.0.0.1", False, False, what="x", token_env="T")
    with pytest.raises(AuthConfigError, match="loopback"):
        check_startup("0.0.0.0", False, True, what="x", token_env="T")
    assert is_loopback("localhost") and is_loopback("127.0.0.2") and is_loopback("[::1]")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.com") and not is_loopback("::")

    hosts = allowed_hosts(["runs.example.com"])
    for ok in ("localhost:8765", "127.0.0.1", "[::1]:8765", "RUNS.example.com:443", "localhost"):
        assert host_allowed(ok, hosts), ok
    for bad in (
        None,
        "",
        "evil.example",
        "localhost.evil.example:8765",
        "[::2]:80",
        "127.0.0.1.nip.io",
        # whatever follows the host must be a port: not a userinfo trick, not junk
        "localhost:80@evil.example",
        "localhost:@evil",
        "[::1]evil",
        "[::1]:80x",
        "localhost:123456",
    ):
        assert not host_allowed(bad, hosts), bad
