"""A dev server on a port found free a moment ago: the port can be taken before the server binds it (another
program's server, an outgoing connection's local port — seen in a full parallel run: the port answered, our server
had exited with "address already in use", and the test talked to nobody). `start` waits for its own process to
listen, says PortInUse when it lost the port, and `start_on_free_ports` takes other ports then."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from duragent._ops.devstack import devserver

pytestmark = pytest.mark.system


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port another program listens on (a child process: not us)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import socket,sys,time\ns=socket.socket();s.bind(('127.0.0.1',0));s.listen()\n"
         "print(s.getsockname()[1],flush=True);time.sleep(60)"],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        yield int(holder.stdout.readline())  # type: ignore[union-attr]
    finally:
        holder.kill()
        holder.wait()


def test_listens_tells_whose_socket_listens_on_a_port(taken_port: int) -> None:
    with socket.socket() as ours:
        ours.bind(("127.0.0.1", 0))
        ours.listen()
        port = ours.getsockname()[1]
        assert devserver.listens(os.getpid(), port) is True
    assert devserver.listens(os.getpid(), taken_port) is False  # it answers, but not to us


def test_a_server_that_lost_its_port_is_port_in_use_not_ready(
    taken_port: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The race itself: the port was free when `start` looked (made so here), and is taken when the server binds.
    monkeypatch.setattr(devserver, "port_free", lambda *args, **kwargs: True)
    with pytest.raises(devserver.PortInUse, match=f"port {taken_port} was taken"):
        devserver.start(taken_port, None, tmp_path / "dev.db", log=tmp_path / "server.log")


def test_start_on_free_ports_serves_on_a_port_of_its_own(tmp_path: Path) -> None:
    server = devserver.start_on_free_ports(tmp_path / "dev.db", log=tmp_path / "server.log")
    try:
        assert devserver.listens(server.process.pid, server.port) is True
    finally:
        server.stop()
