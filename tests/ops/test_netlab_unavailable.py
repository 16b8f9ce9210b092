"""Where network namespaces cannot be made, the lab says why in one line, and `bench chaos-net` prints it and exits
2 (which `make chaos` lets pass) — before it makes anything or starts any process."""

from __future__ import annotations

import argparse

import pytest

from bench.chaos import net_command
from duragent._ops.devstack import netlab


def arguments(faults: str) -> argparse.Namespace:
    return argparse.Namespace(short=True, faults=faults, runs=None, hold=None, seed=1, out=None, keep=False)


def test_not_root_is_one_line_and_exit_2_with_nothing_started(monkeypatch: pytest.MonkeyPatch, capsys):
    monkeypatch.setattr(netlab.os, "geteuid", lambda: 1000)
    assert netlab.why_unavailable() == "network namespaces need root"
    monkeypatch.setattr(net_command, "Lab", None)  # anything made past the check would fail loudly
    assert net_command.cmd_chaos_net(arguments("frontend-cut")) == 2
    assert capsys.readouterr().out == "chaos-net: cannot make network namespaces here: network namespaces need root\n"


def test_no_ip_command_is_said_too(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(netlab.os, "geteuid", lambda: 0)
    monkeypatch.setattr(netlab.shutil, "which", lambda name: None)
    assert netlab.why_unavailable() == "network namespaces need iproute2's `ip`"


def test_an_unknown_fault_is_named_with_the_known_ones(monkeypatch: pytest.MonkeyPatch, capsys):
    monkeypatch.setattr(net_command, "why_unavailable", lambda: None)
    assert net_command.cmd_chaos_net(arguments("frontend-cut,typo")) == 2
    out = capsys.readouterr().out
    assert "unknown fault(s) typo" in out and "postgres-cut" in out
