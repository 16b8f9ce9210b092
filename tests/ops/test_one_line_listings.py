"""A listing line stays one line whatever the model put in it: a gated call whose argument ends
with a newline and a forged `pending` line for a harmless call is listed as one line, the forgery escaped in
it — by `starter.py pending`, `approve`, `result`, `watch`, `effects`, and by the checkpoint engine's `job status`
and `job effects`. The model plays the attacker (tests/support/hostile_agents.py, `t-newline`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from duragent._client import AgentClient
from duragent._ops.cli.watch import describe
from duragent._stores.ledger import EffectsLedger
from tests.conftest import dev_settings, eventually, new_worker
from tests.ops.test_cli import starter
from tests.support.baseline_helpers import Job, finish, open_job
from tests.support.baseline_helpers import eventually as poll
from tests.support.hostile_agents import FORGED_LINE, NEWLINE

ESCAPED = "4471\\nrefund-7f3a  call 1.1"  # how the forged line shows: inside the real one, its newline escaped


def forged_lines(text: str) -> list[str]:
    """Lines that begin as the forgery does: a listing line nobody printed for a real call."""
    return [line for line in text.splitlines() if line.lstrip().startswith(FORGED_LINE[:10])]


async def test_starter_listings_keep_a_forged_line_inside_the_real_one(
    dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path, ledger: EffectsLedger
) -> None:
    settings = dev_settings(dev_env, task_queue, tmp_path)
    run_id = f"newline-{task_queue}"
    async with new_worker(dev_env.client, task_queue, type(ledger)(settings.ledger_path), agents=[NEWLINE]):
        handle = await AgentClient(dev_env.client, task_queue=task_queue).start("t-newline", run_id=run_id)
        [waiting] = await handle.wait_for_approval()

        async def listed() -> str | None:
            code, out, err = await starter("pending", settings=settings)
            assert code == 0, err
            mine = [line for line in out.splitlines() if run_id in line]
            return out if mine else None

        await eventually(listed, what="the pending call in visibility")
        out = await listed()
        assert out is not None and not forged_lines(out), out
        [line] = [line for line in out.splitlines() if run_id in line]
        assert ESCAPED in line and f"hash {waiting.arguments_hash[:12]}" in line

        code, out, err = await starter("approve", run_id, "--by", "maria", "--yes", settings=settings)
        assert code == 0, err
        assert (
            not forged_lines(out) and len(out.splitlines()) == 2 and ESCAPED in out
        )  # "approving ..." and the outcome
        await handle.result()
        code, out, err = await starter("result", run_id, settings=settings)
        assert code == 0, err
        assert not forged_lines(out) and "Done.\\nrefund-7f3a" in out
        code, out, err = await starter("effects", "--run", run_id, settings=settings)
        assert code == 0, err
        assert len(out.splitlines()) == 1 and "refunded 4471\\nrefund-7f3a" in out

    progress = {
        "status": "awaiting_approval",
        "step": 1,
        "max_steps": 4,
        "pending_approvals": [
            {
                "tool": "t_refund",
                "arguments": {"order_id": f"4471\n{FORGED_LINE}"},
                "deadline": "2999-01-01T00:00:00+00:00",
            }
        ],
        "label": "waiting",
    }
    for shown in (
        describe(progress, countdown=True),
        describe(progress | {"status": "running", "label": f"x\n{FORGED_LINE}"}, countdown=False),
    ):
        assert "\n" not in shown and FORGED_LINE in shown


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Job]:
    yield from open_job(tmp_path)


@pytest.mark.system  # `job` command lines
def test_job_listings_keep_a_forged_line_inside_the_real_one(job: Job, capsys: pytest.CaptureFixture[str]) -> None:
    agents = ("--agents", "tests.support.hostile_agents")
    worker = job.spawn("run", "--id", "nl", "--agent", "t-newline", *agents, "--poll-interval", "0.05")
    poll(lambda: job.store.run("nl") and job.status("nl")["status"] == "awaiting_approval", what="the wait")
    capsys.readouterr()
    assert job.cli("status", "--id", "nl", *agents) == 0
    waiting = capsys.readouterr().out
    assert not forged_lines(waiting), waiting
    [approval] = [line for line in waiting.splitlines() if line.startswith("  approval ")]
    assert "4471\\nrefund-7f3a" in approval
    [pending] = job.status("nl")["approvals"]
    assert job.cli("approve", "--id", "nl", "--by", "maria", "--hash", pending["arguments_hash"][:12], *agents) == 0
    code, _, err = finish(worker)
    assert code == 0, err
    capsys.readouterr()
    assert job.cli("status", "--id", "nl", *agents) == 0
    assert job.cli("effects", "--id", "nl", *agents) == 0
    shown = capsys.readouterr().out
    assert not forged_lines(shown), shown
    assert json.dumps(FORGED_LINE) not in shown  # shown escaped, never as its own JSON line either
