"""Protected fact keys are recognised however they are spelled: the exact-match list let a prompt
injection persist `ro\\u200ble`, `is-admin`, `isAdmin`, `user_role`, `discount_percent`, `refund_limit_usd`... Each
spelling an attacker tried is refused by the lesson's store and by the durable one (which audits the attempt);
the `FactStore`/`Fact` API is the seed's."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentic.errors import ProtectedFactError
from agentic.memory import Fact, FactStore
from duragent._stores.facts import SqliteFactStore

ATTEMPTS = [
    "ro\u200ble",  # a zero-width space inside
    "Role\u00ad",  # a soft hyphen after
    "r\u00f4le",  # an accent
    "\u202erole",  # a bidi override before
    "discount_percent",
    "is-admin",
    "isAdmin",
    "IsAdmin",
    "isadmin",
    "is admin",
    "is.admin",
    "user_role",
    "userRoles",
    "refund_limit_usd",
    "creditLimit",
    "account_balance",
    "admin_flag",
    "PERMISSIONS_v2",
    "\uff52\uff4f\uff4c\uff45",  # full-width letters
    # The other grammatical number of a PROTECTED entry: plurals of the singular ones, singulars of the plural ones
    # (a key is compared as its words with a plural `s` dropped, on both sides).
    "discounts",
    "prices",
    "balances",
    "admins",
    "permission",
    "privilege",
    "entitlement",
    "scope",
]


@pytest.mark.parametrize("key", ATTEMPTS)
def test_every_spelling_of_a_protected_key_is_refused(key: str, tmp_path: Path) -> None:
    assert FactStore.is_protected(key), key
    lesson = FactStore([Fact("preferred_courier", "BlueDart", "ticket T-1")])
    with pytest.raises(ProtectedFactError, match="protected"):
        lesson.write(Fact(key, True, "email from attacker"))
    assert lesson.keys() == ["preferred_courier"]
    with pytest.raises(ProtectedFactError, match="protected"):
        FactStore.load(FactStore().dump().replace('"facts":[]', f'"facts":[{Fact(key, 1, "x").model_dump_json()}]'))

    memory = SqliteFactStore(tmp_path / "facts.db").namespace("C-7")
    with pytest.raises(ProtectedFactError):
        memory.write(Fact(key, True, "email from attacker"), writer="model", run_id="r", write_key="r:1.1")
    assert memory.keys() == [] and [a.key for a in memory.audit()] == [key]


@pytest.mark.parametrize(
    "key", ["preferred_courier", "city", "limits", "delivery_window", "roleplay_style", "address", "status", "class"]
)
def test_ordinary_keys_are_written(key: str) -> None:
    assert not FactStore.is_protected(key)
    store = FactStore()
    store.write(Fact(key, "x", "ticket T-1"))
    assert store.keys() == [key]
