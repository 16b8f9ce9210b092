"""The durable fact store on both backends (SQLite files and a real PostgreSQL): the seed's `FactStore` API per
namespace, provenance, one version per tool call, refusals audited, forgetting one source and only it."""

from __future__ import annotations

import json
import threading

import pytest

from agentic.errors import ProtectedFactError
from agentic.memory import Fact, FactStore
from duragent._stores.facts import MAX_VALUE_BYTES
from tests.support.backends import Backend

FULLWIDTH_IS_ADMIN = "\uff49\uff53_\uff41\uff44\uff4d\uff49\uff4e"  # looks like "is_admin"


def test_the_seed_api_per_namespace_and_dump_round_trips_through_the_lessons_store(backend: Backend) -> None:
    c7 = backend.fact_store().namespace("C-7")
    c7.write(Fact("preferred_courier", "BlueDart", "ticket T-1"))
    c7.write(Fact("city", "Pune", "ticket T-1"))
    c7.write(Fact("limits", {"kg": 20, "fragile": [True, None]}, "doc-9"))

    again = backend.fact_store().namespace("C-7")  # another process opening the same storage
    assert again.get("preferred_courier") == Fact("preferred_courier", "BlueDart", "ticket T-1")
    assert again.get("nope") is None
    assert again.keys() == ["city", "limits", "preferred_courier"]
    assert [f.key for f in again] == again.keys() and len(again) == 3
    assert "city" in again and "town" not in again and 3 not in again

    lesson = FactStore(
        [
            Fact("preferred_courier", "BlueDart", "ticket T-1"),
            Fact("city", "Pune", "ticket T-1"),
            Fact("limits", {"kg": 20, "fragile": [True, None]}, "doc-9"),
        ]
    )
    assert again.dump() == lesson.dump()  # the seed's JSON, byte for byte
    assert FactStore.load(again.dump()).get("limits").value == {"kg": 20, "fragile": [True, None]}  # type: ignore[union-attr]

    copy = backend.fact_store().namespace("C-7-copy")
    assert copy.load(again.dump()) == 3
    assert copy.dump() == again.dump()
    assert {r.writer for r in copy.records()} == {"load"}


def test_namespaces_do_not_see_each_other(backend: Backend) -> None:
    store = backend.fact_store()
    store.namespace("C-7").write(Fact("preferred_courier", "BlueDart", "ticket T-1"))
    store.namespace("C-8").write(Fact("preferred_courier", "DTDC", "ticket T-2"))
    assert store.namespace("C-7").get("preferred_courier").value == "BlueDart"  # type: ignore[union-attr]
    assert store.namespace("C-8").get("preferred_courier").value == "DTDC"  # type: ignore[union-attr]
    assert store.namespace("C-9").keys() == []
    assert store.namespaces() == {"C-7": 1, "C-8": 1}


def test_every_version_carries_its_provenance_and_the_newest_is_current(backend: Backend) -> None:
    c7 = backend.fact_store().namespace("C-7")
    first = c7.write(
        Fact("preferred_courier", "BlueDart", "ticket T-1"),
        writer="courier",
        run_id="run-1",
        call_id="1.1",
        write_key="run-1:1.1",
    )
    c7.write(Fact("preferred_courier", "DTDC", "ticket T-2"), writer="courier", run_id="run-2", call_id="1.1")
    assert (first.writer, first.run_id, first.call_id, first.write_key) == ("courier", "run-1", "1.1", "run-1:1.1")
    assert first.at.endswith("+00:00") and first.forgotten_at is None
    assert first.describe().startswith('preferred_courier = "BlueDart" (source: ticket T-1; written by courier')
    current = c7.record("preferred_courier")
    assert current is not None and (current.value, current.run_id) == ("DTDC", "run-2")
    assert [(v.value, v.source) for v in c7.history("preferred_courier")] == [
        ("BlueDart", "ticket T-1"),
        ("DTDC", "ticket T-2"),
    ]
    assert c7.record("preferred_courier").writer == "courier"  # type: ignore[union-attr]
    assert c7.write(Fact("x", 1, "s")).writer == "operator"  # the seed's write: an operator's


def test_one_version_per_tool_call_however_often_it_runs(backend: Backend) -> None:
    fact = Fact("preferred_courier", "BlueDart", "ticket T-1")
    kwargs = {"writer": "courier", "run_id": "run-1", "call_id": "1.1", "write_key": "run-1:1.1"}
    first = backend.fact_store().namespace("C-7").write(fact, **kwargs)  # type: ignore[arg-type]
    retried = backend.fact_store().namespace("C-7").write(fact, **kwargs)  # type: ignore[arg-type]
    assert retried == first
    assert backend.rows("facts") == 1
    backend.fact_store().namespace("C-7").write(fact, writer="courier", run_id="run-2", write_key="run-2:1.1")
    assert backend.rows("facts") == 2  # another call is another version


def test_two_overlapping_writes_of_one_call_leave_one_version(backend: Backend) -> None:
    """A zombie worker and its replacement run the same call at once: the unique key decides."""
    fact = Fact("preferred_courier", "BlueDart", "ticket T-1")
    stores = [backend.fact_store() for _ in range(4)]
    start = threading.Barrier(len(stores))
    records = []

    def write(store) -> None:  # type: ignore[no-untyped-def]
        start.wait()
        records.append(store.namespace("C-7").write(fact, writer="courier", run_id="r", write_key="r:1.1"))

    threads = [threading.Thread(target=write, args=(store,)) for store in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(records) == 4 and len({r.seq for r in records}) == 1
    assert backend.rows("facts") == 1


@pytest.mark.parametrize("key", ["is_admin", " Is_Admin ", "PRICE", FULLWIDTH_IS_ADMIN])
def test_a_protected_key_is_refused_and_the_refusal_audited_once_per_call(backend: Backend, key: str) -> None:
    c7 = backend.fact_store().namespace("C-7")
    c7.write(Fact("preferred_courier", "BlueDart", "ticket T-1"))
    before = c7.dump()
    for _ in range(2):  # the call, then its retry
        with pytest.raises(ProtectedFactError, match="protected") as refused:
            c7.write(Fact(key, "true", "ticket T-9"), writer="courier", run_id="r", call_id="2.1", write_key="r:2.1")
        assert "injection" in str(refused.value)
    assert c7.dump() == before and key not in c7
    [entry] = backend.fact_store().namespace("C-7").audit()
    assert (entry.action, entry.key, entry.value, entry.source) == ("refused", key, "true", "ticket T-9")
    assert (entry.writer, entry.run_id, entry.call_id, entry.write_key) == ("courier", "r", "2.1", "r:2.1")
    assert "protected" in entry.detail
    assert backend.rows("facts") == 1


def test_forget_source_removes_only_that_source_and_reverts_to_what_others_taught(backend: Backend) -> None:
    store = backend.fact_store()
    c7 = store.namespace("C-7")
    c7.write(Fact("preferred_courier", "BlueDart", "ticket T-1"))
    c7.write(Fact("preferred_courier", "EvilCourier", "doc-poisoned"))
    c7.write(Fact("city", "Pune", "doc-poisoned"))
    c7.write(Fact("language", "en", "ticket T-2"))
    store.namespace("C-8").write(Fact("city", "Delhi", "doc-poisoned"))

    forgotten = c7.forget("doc-poisoned", by="maria")
    assert (forgotten.count, forgotten.keys, forgotten.reverted) == (
        2,
        ["city", "preferred_courier"],
        ["preferred_courier"],
    )
    assert c7.get("preferred_courier") == Fact("preferred_courier", "BlueDart", "ticket T-1")
    assert c7.keys() == ["language", "preferred_courier"]
    assert store.namespace("C-8").get("city") == Fact("city", "Delhi", "doc-poisoned")  # another namespace
    assert c7.forget_source("doc-poisoned") == 0 and c7.forget_source("never-seen") == 0

    erased = [v for v in c7.history() if v.source == "doc-poisoned"]
    assert [(v.value, v.forgotten_by) for v in erased] == [(None, "maria"), (None, "maria")]
    assert "EvilCourier" not in json.dumps([v.model_dump() for v in c7.history()])  # erased, not hidden
    forgot = [a for a in c7.audit() if a.action == "forgot"]
    assert [a.writer for a in forgot] == ["maria", "operator", "operator"]  # every forget is audited, even of nothing
    assert "2 version(s)" in forgot[0].detail


def test_a_late_retry_of_a_forgotten_write_does_not_bring_it_back(backend: Backend) -> None:
    c7 = backend.fact_store().namespace("C-7")
    fact = Fact("preferred_courier", "EvilCourier", "doc-poisoned")
    c7.write(fact, writer="courier", run_id="r", write_key="r:1.1")
    assert c7.forget_source("doc-poisoned") == 1
    late = c7.write(fact, writer="courier", run_id="r", write_key="r:1.1")  # the worker that wrote it, retried
    assert late.forgotten_at is not None
    assert c7.get("preferred_courier") is None and backend.rows("facts") == 1


@pytest.mark.parametrize(
    ("namespace", "fact", "message"),
    [
        ("  ", Fact("k", 1, "s"), "namespace must not be blank"),
        ("C-7", Fact("k\x00", 1, "s"), "key must not contain a NUL"),
        ("C-7", Fact("k", 1, "s" * 501), "source is 501 characters"),
        ("C-7", Fact("k", "x" * MAX_VALUE_BYTES, "s"), "facts, not documents"),
        ("\x00", Fact("k", 1, "s"), "namespace must not contain a NUL"),
    ],
)
def test_bad_input_is_refused_clearly_and_writes_nothing(
    backend: Backend, namespace: str, fact: Fact, message: str
) -> None:
    store = backend.fact_store()
    with pytest.raises(ValueError, match=message):
        store.write(namespace, fact, writer="operator")
    assert store.namespaces() == {}


def test_load_refuses_a_tampered_dump_and_writes_nothing(backend: Backend) -> None:
    c7 = backend.fact_store().namespace("C-7")
    facts = [{"key": "a", "value": 1, "source": "s"}, {"key": "is_admin", "value": True, "source": "s"}]
    tampered = json.dumps({"version": 1, "facts": facts})
    with pytest.raises(ProtectedFactError):
        c7.load(tampered)
    with pytest.raises(ValueError, match="not valid JSON"):
        c7.load("{")
    assert len(c7) == 0
