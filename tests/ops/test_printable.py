"""Untrusted text (tool arguments, labels, outputs a model chose) reaches a terminal only as printable text:
C0/C1 control characters and bidi overrides are shown escaped, never interpreted."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from duragent._ops.cli.output import printable
from duragent._ops.cli.watch import Lines, describe
from tests.support.baseline_helpers import Job, eventually, finish, open_job
from tests.support.hostile_agents import ATTACK


def test_printable_escapes_controls_and_bidi_overrides() -> None:
    shown = printable(ATTACK)
    assert shown.isprintable(), repr(shown)
    assert "\x1b" not in shown and "\r" not in shown and "\u202e" not in shown and "\x9b" not in shown
    # Escaped, not dropped: the approver sees that something was there.
    assert "\\x1b[2K" in shown and "\\r" in shown and "\\u202e" in shown and "\\x9b" in shown
    assert printable("Refund order 4471 — done, café") == "Refund order 4471 — done, café"
    assert printable("a\nb\tc", one_line=True) == "a\\nb\\tc"
    assert printable("a\nb\tc") == "a\nb\tc"
    for mark in ("\u200e", "\u200f", "\u061c", "\u202a", "\u2066", "\u2069"):
        assert mark not in printable(f"x{mark}y")


def test_watch_shows_an_approval_with_escaped_arguments() -> None:
    progress = {
        "status": "awaiting_approval",
        "step": 1,
        "max_steps": 5,
        "pending_approvals": [
            {"tool": "refund", "arguments": {"order_id": ATTACK}, "deadline": "2999-01-01T00:00:00+00:00"}
        ],
        "label": ATTACK,
    }
    out = io.StringIO()
    Lines(out).show(progress)
    assert "\x1b" not in out.getvalue() and "\u202e" not in out.getvalue()
    assert "approve refund(order_id=4471\\x1b[2K\\r" in describe(progress, countdown=True)
    running = progress | {"status": "running", "pending_approvals": []}
    assert "\x1b" not in describe(running, countdown=False)


# -- the baseline CLI: a run whose model put escape sequences in a tool argument and in its answer ----------


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Job]:
    yield from open_job(tmp_path)


@pytest.mark.system
def test_baseline_cli_prints_model_text_escaped(job: Job, capsys: pytest.CaptureFixture[str]) -> None:
    agents = ("--agents", "tests.support.hostile_agents")
    worker = job.spawn("run", "--id", "esc", "--agent", "t-escape", *agents, "--poll-interval", "0.05")
    eventually(lambda: job.store.run("esc") and job.status("esc")["status"] == "awaiting_approval", what="the wait")
    capsys.readouterr()
    assert job.cli("status", "--id", "esc", *agents) == 0
    [pending] = job.status("esc")["approvals"]
    assert job.cli("approve", "--id", "esc", "--by", "maria", "--hash", pending["arguments_hash"][:12], *agents) == 0
    code, _, err = finish(worker)
    assert code == 0, err
    assert job.cli("status", "--id", "esc", *agents) == 0
    assert job.cli("effects", "--id", "esc", *agents) == 0
    shown = capsys.readouterr()
    assert "4471\\x1b[2K" in shown.out  # the argument is shown, escaped
    for raw in ("\x1b", "\u202e", "\x9b", "\x07", "\r"):
        assert raw not in shown.out and raw not in shown.err, repr(raw)
