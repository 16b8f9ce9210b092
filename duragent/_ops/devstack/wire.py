"""The wire between a lab's network namespaces (`duragent/_ops/devstack/netlab.py`): netem's job, in user space.

This machine's kernel has no `netem` qdisc (CONFIG_NET_SCH_NETEM is not set, and it loads no modules), so
links cannot be slowed or made lossy with `tc`. Instead every host of the lab gets a TUN device whose far end
is this process: each IPv4 packet a host sends arrives here, and is written into the TUN device of the host
that owns its destination address — late, or never, as the link's rule says. The kernel's TCP on both sides
sees real loss and real delay, and retransmits as it would on a bad network.

Run as `python -m duragent._ops.devstack.wire`, it reads one JSON line on stdin, `{"devices": {"name": "address"}}`,
creates the devices (in its own namespace: the lab moves them), prints `ready`, and then obeys one JSON line
per change, answering `ok` to each:

    {"rule": {"from": "w1", "to": "temporal", "delay_ms": 200, "loss": 0.05, "cut": false}}   ("*": any host)
    {"arm": {"from": "w1", "to": "postgres", "match": ["INSERT", ...]}} (cut both ways at the first packet
                                                                       from w1 to postgres holding any of these
                                                                       bytes, that packet included: mid-request)
    {"clear": true}                                                    (every rule, armed cut and trip off)

The first packet that matches an armed pair trips it and disarms every other. Each answer is `ok` and, as JSON,
the cuts that armed rules made since the last clear and the packets seen per pair of hosts (delivered or not):
`ok {"tripped": ["w1>postgres"], "packets": {"w1>temporal": 812, ...}}`.

The devices live as long as this process: when it exits (or is killed), the kernel deletes them.
"""

from __future__ import annotations

import contextlib
import fcntl
import heapq
import json
import os
import random
import selectors
import struct
import sys
import time
from collections import Counter
from dataclasses import dataclass

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
ANY = "*"


@dataclass(frozen=True)
class Rule:
    delay_ms: float = 0.0
    loss: float = 0.0
    cut: bool = False


def open_tun(name: str) -> int:
    """A TUN device called `name` (IPv4 packets, no extra header), owned by this process's descriptor."""
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


class Wire:
    def __init__(self, devices: dict[str, str], rng: random.Random | None = None) -> None:
        self.fds = {name: open_tun(name) for name in devices}
        self.host_of = {fd: name for name, fd in self.fds.items()}
        self.fd_for = {bytes(map(int, address.split("."))): self.fds[name] for name, address in devices.items()}
        self.rules: dict[tuple[str, str], Rule] = {}
        self.pending: list[tuple[float, int, int, bytes]] = []  # (due, order, fd, packet): FIFO per link
        self.order = 0
        self.armed: dict[tuple[str, str], list[bytes]] = {}
        self.tripped: list[str] = []
        self.packets: Counter[str] = Counter()
        self.rng = rng or random.Random()

    def rule(self, source: str, target: str) -> Rule:
        for key in ((source, target), (source, ANY), (ANY, target), (ANY, ANY)):
            if key in self.rules:
                return self.rules[key]
        return Rule()

    def forward(self, fd: int, packet: bytes) -> None:
        if len(packet) < 20 or packet[0] >> 4 != 4:
            return  # IPv4 only: the lab's hosts speak nothing else to each other
        out = self.fd_for.get(packet[16:20])
        if out is None or out == fd:
            return  # no host of the lab has that address: dropped, as a router with no route would
        source, target = self.host_of[fd], self.host_of[out]
        self.packets[f"{source}>{target}"] += 1
        matches = self.armed.get((source, target), ())
        if any(match in packet for match in matches):
            self.armed.clear()
            self.rules[(source, target)] = self.rules[(target, source)] = Rule(cut=True)
            self.tripped.append(f"{source}>{target}")
        rule = self.rule(source, target)
        if rule.cut or (rule.loss and self.rng.random() < rule.loss):
            return
        if rule.delay_ms <= 0:
            self.write(out, packet)
            return
        self.order += 1
        heapq.heappush(self.pending, (time.monotonic() + rule.delay_ms / 1000, self.order, out, packet))

    def write(self, fd: int, packet: bytes) -> None:
        with contextlib.suppress(OSError):  # a device that is down (its namespace going away): lost, as on a wire
            os.write(fd, packet)

    def flush_due(self) -> float | None:
        """Write what is due; seconds until the next packet is (None: nothing waits)."""
        now = time.monotonic()
        while self.pending and self.pending[0][0] <= now:
            _, _, fd, packet = heapq.heappop(self.pending)
            self.write(fd, packet)
        return max(0.0, self.pending[0][0] - now) if self.pending else None

    def obey(self, line: str) -> None:
        command = json.loads(line)
        if command.get("clear"):
            self.rules.clear()
            self.armed.clear()
            self.tripped.clear()
        if "arm" in command:
            spec = command["arm"]
            self.armed[(spec["from"], spec["to"])] = [m.encode() for m in spec["match"]]
        if "rule" in command:
            spec = command["rule"]
            self.rules[(spec.get("from", ANY), spec.get("to", ANY))] = Rule(
                float(spec.get("delay_ms", 0)), float(spec.get("loss", 0)), bool(spec.get("cut", False))
            )

    def serve(self) -> None:
        selector = selectors.DefaultSelector()
        for fd in self.fds.values():
            selector.register(fd, selectors.EVENT_READ)
        selector.register(sys.stdin.fileno(), selectors.EVENT_READ)
        print("ready", flush=True)
        buffered = b""
        while True:
            for key, _ in selector.select(self.flush_due()):
                fd = int(key.fd)
                if fd != sys.stdin.fileno():
                    self.drain(fd)
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    return  # the lab closed our stdin: it is done with us
                buffered += chunk
                while b"\n" in buffered:
                    line, buffered = buffered.split(b"\n", 1)
                    self.obey(line.decode())
                    print("ok", json.dumps({"tripped": self.tripped, "packets": self.packets}), flush=True)

    def drain(self, fd: int) -> None:
        for _ in range(64):  # a burst, then the other devices get their turn
            try:
                packet = os.read(fd, 65536)
            except BlockingIOError:
                return
            self.forward(fd, packet)


def main() -> int:
    spec = json.loads(sys.stdin.readline())
    Wire(spec["devices"]).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
