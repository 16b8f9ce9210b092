"""The network lab (duragent/_ops/devstack/netlab.py and its wire) on real TCP between real namespaces: a cut stops
traffic both ways between two hosts only, a degraded link is slow by what it says, an armed cut trips at the first
packet holding its bytes — and nothing of a lab outlives it, not even when the block inside it fails. Skipped, with
one line, where network namespaces cannot be made (not root, no `ip`)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from duragent._ops.devstack.netlab import Lab, why_unavailable

# Processes of its own: the wire, and a TCP echo server in a namespace.
pytestmark = pytest.mark.system

# One thread per connection: a connection whose end was cut off stays open here, and must not block the next.
ECHO = """
import socketserver, sys
class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        while data := self.request.recv(65536):
            self.request.sendall(data)
server = socketserver.ThreadingTCPServer((sys.argv[1], 9000), Echo)
server.daemon_threads = True
print("listening", flush=True)
server.serve_forever()
"""


@pytest.fixture
def lab() -> Iterator[Lab]:
    reason = why_unavailable()
    if reason:
        pytest.skip(f"network lab: {reason}")
    with Lab(["a", "b"]) as made:
        echo = subprocess.Popen(
            made.command("b", [sys.executable, "-c", ECHO, made.address("b")]), stdout=subprocess.PIPE, text=True
        )
        try:
            assert echo.stdout is not None and echo.stdout.readline().strip() == "listening"
            yield made
        finally:
            echo.kill()
            echo.wait()


def round_trip(lab: Lab, source: str, timeout: float = 3.0) -> float | None:
    """Seconds for a connect and one echoed message from host `source` (the driver: this process) to b's echo
    server; None when it does not get through within `timeout`."""
    probe = (
        "import socket, sys, time\n"
        "t = time.monotonic()\n"
        "try:\n"
        f"    c = socket.create_connection((sys.argv[1], 9000), timeout={timeout})\n"
        "    c.sendall(b'ping'); assert c.recv(4) == b'ping'\n"
        "    print(time.monotonic() - t)\n"
        "except OSError:\n"
        "    print('none')\n"
    )
    if source == "driver":
        out = subprocess.run([sys.executable, "-c", probe, lab.address("b")], capture_output=True, text=True).stdout
    else:
        command = lab.command(source, [sys.executable, "-c", probe, lab.address("b")])
        out = subprocess.run(command, capture_output=True, text=True).stdout
    return None if out.strip() == "none" else float(out)


def test_a_cut_stops_two_hosts_only_and_heals(lab: Lab):
    assert round_trip(lab, "a") is not None
    lab.cut("a", "b")
    assert round_trip(lab, "a", timeout=1.5) is None
    assert round_trip(lab, "driver") is not None  # everyone else still reaches b
    lab.heal()
    assert round_trip(lab, "a") is not None


def test_a_degraded_link_delays_each_packet_by_what_it_says(lab: Lab):
    fast = round_trip(lab, "a")
    assert fast is not None and fast < 0.3
    lab.degrade(delay_ms=200, loss=0.0)
    slow = round_trip(lab, "a")
    # A connect (SYN, SYN-ACK) and an echo (data, data back): two round trips of 2 x 200 ms each.
    assert slow is not None and 0.8 <= slow < 3.0, slow


def test_an_armed_cut_trips_at_the_first_packet_with_its_bytes(lab: Lab):
    lab.cut_on("a", "b", b"secret-append")
    assert round_trip(lab, "a") is not None  # 'ping' does not hold the bytes: nothing happens
    assert lab.tripped() == []
    sender = "import socket, sys\nc = socket.create_connection((sys.argv[1], 9000), timeout=2)\n"
    sender += "c.sendall(b'...secret-append...')\n"
    sender += "try:\n    print(c.recv(64))\nexcept OSError:\n    print('no answer')\n"
    out = subprocess.run(lab.command("a", [sys.executable, "-c", sender, lab.address("b")]), capture_output=True)
    assert out.stdout.decode().strip() == "no answer"  # the request itself was dropped: sent, never answered
    assert lab.tripped() == ["a>b"]
    assert round_trip(lab, "a", timeout=1.5) is None  # and a stays cut off until the heal
    lab.heal()
    assert round_trip(lab, "a") is not None
    assert lab.tripped() == []  # a heal forgets the trip: the next armed cut's is its own


def test_nothing_of_a_lab_outlives_it_even_when_its_block_fails():
    reason = why_unavailable()
    if reason:
        pytest.skip(f"network lab: {reason}")
    with pytest.raises(RuntimeError, match="the block failed"), Lab(["x"]) as lab:
        namespace, device = lab.hosts["x"].namespace, lab.hosts["x"].device
        sleeper = subprocess.Popen(lab.command("x", ["sleep", "600"]))
        assert namespace in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        raise RuntimeError("the block failed")
    assert sleeper.wait(5) == -9  # stopped by its pid, found in the lab's namespace
    assert namespace not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    assert f" {device}:" not in links and f" {lab.hosts['driver'].device}:" not in links
    # (and with the driver's device its route to the lab's /24 is gone: nothing is sent there any more.)
    assert (
        f"{lab.address('x').rsplit('.', 1)[0]}.0/24"
        not in subprocess.run(["ip", "-4", "route", "show"], capture_output=True, text=True).stdout
    )
