"""`make secrets` (duragent/_ops/devstack/compose_secrets.py) run again after an approver took her private key away: her
public key, which the workers count her signatures by, is kept. (The whole command, as an operator runs it, with
what compose mounts: tests/ops/test_compose.py.)"""

from __future__ import annotations

from pathlib import Path

from agentic.signing import ApproverKey, parse_public_keys, signature_problem
from duragent._ops.devstack.compose_secrets import make_secrets


def test_make_secrets_keeps_the_public_key_of_an_approver_who_took_her_private_key(tmp_path: Path) -> None:
    """Maria's private key was handed to her and removed from the host, as the operator is told to: re-running
    `make secrets APPROVERS=maria` writes nothing, so the workers still count what she signs with her own key
    (a new pair would lock her out: `parse_public_keys` keeps the last entry)."""
    directory = tmp_path / "secrets"
    make_secrets(directory, ["maria"])
    private = directory / "approvers" / "maria.key"
    maria = ApproverKey.parse(private.read_text())
    private.unlink()
    before = (directory / "approver_keys").read_bytes()

    assert make_secrets(directory, ["maria"]) == []
    assert (directory / "approver_keys").read_bytes() == before and not private.exists()
    keys = parse_public_keys((directory / "approver_keys").read_text())
    assert signature_problem(keys, maria.sign(b"a decision"), "maria", b"a decision") is None
