"""What agents remember, over HTTP: the `courier` agent learns a fact in a run started
through the API, the API lists it with its source, an approver forgets that source (recorded as the token's
identity), and the next run no longer knows — the same on both engines, each serving the workers' fact
store. Bad input is refused with nothing forgotten."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.runs_api_stack import VIEWER, ApiStack, checkpoint_stack, finished, temporal_stack

# Processes of its own: an API server and workers.
pytestmark = pytest.mark.system

NAMESPACE = "C-7"


@pytest.fixture(scope="module", params=["temporal", "checkpoints"])
def stack(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiStack]:
    tmp = tmp_path_factory.mktemp(f"facts-{request.param}")
    data = {"AGENT_DATA_DIR": str(tmp)}  # the runs' workers and the API read one fact store
    built = temporal_stack(tmp, extra_env=data) if request.param == "temporal" else checkpoint_stack(tmp, data)
    try:
        yield built
    finally:
        built.close()


def courier(api: httpx.Client, task: str) -> dict[str, Any]:
    started = api.post("/runs", json={"agent": "courier", "task": task, "options": {"namespace": NAMESPACE}})
    assert started.status_code == 201, started.text
    return finished(api, started.json()["run_id"])


def test_learn_list_forget_through_the_api_and_the_next_run_no_longer_knows(stack: ApiStack) -> None:
    with stack.client() as api:
        taught = courier(api, "Ticket T-1: customer C-7 prefers BlueDart")
        assert taught["status"] == "completed", taught
        assert api.get("/facts").json() == {NAMESPACE: 1}
        [fact] = api.get(f"/facts/{NAMESPACE}").json()
        assert (fact["key"], fact["value"], fact["source"]) == ("preferred_courier", "BlueDart", "ticket T-1")
        assert fact["run_id"] == taught["run_id"] and fact["writer"] == "courier"
        assert "BlueDart" in courier(api, "Which courier does C-7 prefer?")["output"]

        # Refused, and nothing forgotten: a viewer, a form post, a blank source, a body naming who forgets.
        url = f"/facts/{NAMESPACE}/forget"
        with stack.client(VIEWER) as viewer:
            assert viewer.post(url, json={"source": "ticket T-1"}).status_code == 403
            assert viewer.get(f"/facts/{NAMESPACE}").json() == [fact]  # but may read
        plain = api.post(url, content=b'{"source": "ticket T-1"}', headers={"content-type": "text/plain"})
        assert plain.status_code == 415
        for body, field in (
            ({"source": "  "}, "source"),
            ({"source": "ticket T-1", "by": "eve"}, "by"),
            ({}, "source"),
        ):
            refused = api.post(url, json=body)
            assert refused.status_code == 422 and field in refused.text, (body, refused.text)
        assert api.get("/facts/%00bad/history").status_code == 422  # a namespace the store refuses
        assert api.get(f"/facts/{NAMESPACE}").json() == [fact]

        forgotten = api.post(url, json={"source": "ticket T-1"})
        assert forgotten.status_code == 200, forgotten.text
        assert forgotten.json() == {
            "namespace": NAMESPACE,
            "source": "ticket T-1",
            "count": 1,
            "keys": ["preferred_courier"],
            "reverted": [],
        }
        assert api.get(f"/facts/{NAMESPACE}").json() == []
        [version] = api.get(f"/facts/{NAMESPACE}/history", params={"key": "preferred_courier"}).json()
        assert version["forgotten_by"] == "maria" and version["value"] is None  # erased, who did it kept
        [audit] = api.get(f"/facts/{NAMESPACE}/audit").json()
        assert (audit["action"], audit["writer"], audit["source"]) == ("forgot", "maria", "ticket T-1")
        assert "don't know" in courier(api, "Which courier does C-7 prefer?")["output"]
