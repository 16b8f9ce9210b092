"""A network lab of the test's own: each host in a network namespace made for this run, all joined by the wire
(`duragent/_ops/devstack/wire.py`), whose rules cut, slow down or drop what goes between two hosts.

Addresses: one /24 of the IPv4 link-local range, 169.254.N.0/24 (N picked at random among those no interface
of this machine uses; never 169.254.169.x, where clouds keep their metadata service). Link-local addresses are
by definition never routed beyond their link, and here the link is the wire: no host of the lab has a default
route, the wire drops any packet whose destination is not a host of the lab, and nothing of the lab touches
eth0. The one host outside a namespace is the driver (this process): its TUN device in the machine's own
namespace carries only the lab's /24. Loopback addresses cannot serve: every namespace keeps 127.0.0.0/8 to
itself.

Everything is named `nfl-<pid>-<tag>-...` (namespaces) and `nf<tag><i>` (devices), unique per lab. `close()`
(also on an exception or Ctrl-C: use it as a context manager) stops the processes still in the lab's
namespaces by pid, stops the wire (the kernel then deletes its TUN devices) and deletes the namespaces. A lab
whose owner was SIGKILLed is swept by the next lab made on the machine (its owner pid is in its name).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import secrets
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from duragent._config.settings import ROOT

PREFIX = "nfl-"
DRIVER = "driver"


class LabUnavailable(RuntimeError):
    """Namespaces cannot be made here (not root, no `ip`, or the kernel refuses): the one-line reason."""


def why_unavailable() -> str | None:
    """None when a lab can be made here; else the reason, in one line (the test's skip line)."""
    if sys.platform != "linux":
        return "network namespaces need Linux"
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "network namespaces need iproute2's `ip`"
    if not os.path.exists("/dev/net/tun"):
        return "the lab's links need /dev/net/tun"
    name = f"{PREFIX}{os.getpid()}-probe{secrets.token_hex(2)}"
    made = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if made.returncode != 0:
        return f"`ip netns add` failed: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return None


def ip(*argv: str, namespace: str | None = None) -> str:
    command = ["ip", *(["-n", namespace] if namespace else []), *argv]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise LabUnavailable(f"{' '.join(command)}: {done.stderr.strip()}")
    return done.stdout


@dataclass(frozen=True)
class Host:
    name: str
    address: str
    device: str
    namespace: str | None  # None: the driver, in the machine's own namespace


def pick_subnet(rng: random.Random) -> str:
    """`169.254.N`, an N no address or route of this machine's namespace uses now."""
    used = ip("-4", "-o", "addr", "show") + ip("-4", "route", "show")
    taken = {int(n) for n in re.findall(r"169\.254\.(\d+)\.", used)}
    free = [n for n in range(64, 250) if n not in taken and n != 169]
    if not free:
        raise LabUnavailable("no free 169.254.N.0/24 for the lab")
    return f"169.254.{rng.choice(free)}"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_in(namespace: str) -> None:
    """SIGKILL what still runs in one of our namespaces (each pid was started there by a lab)."""
    pids = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True).stdout.split()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)


def sweep_orphans() -> list[str]:
    """Delete the namespaces of labs whose owner process is gone (SIGKILLed before its `close`)."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    swept = []
    for name in listed:
        match = re.fullmatch(rf"{PREFIX}(\d+)-.*", name)
        if match and not alive(int(match.group(1))):
            kill_in(name)
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
            swept.append(name)
    return swept


class Lab:
    """Hosts by name, each in a namespace of its own (the driver excepted), on one wire."""

    def __init__(self, names: Sequence[str], *, log: Path | None = None) -> None:
        self.tag = secrets.token_hex(2)
        self.names = list(names)
        self.log = log
        self.hosts: dict[str, Host] = {}
        self.namespaces: list[str] = []
        self.wire: subprocess.Popen[str] | None = None

    def open(self) -> Lab:
        sweep_orphans()
        subnet = pick_subnet(random.SystemRandom())  # never a seed's: two labs at once must not draw alike
        for i, name in enumerate([DRIVER, *self.names]):
            namespace = None if name == DRIVER else f"{PREFIX}{os.getpid()}-{self.tag}-{name}"
            self.hosts[name] = Host(name, f"{subnet}.{i + 1}", f"nf{self.tag}{i}", namespace)
        try:
            for host in self.hosts.values():
                if host.namespace:
                    ip("netns", "add", host.namespace)
                    self.namespaces.append(host.namespace)
                    ip("link", "set", "lo", "up", namespace=host.namespace)
            self._start_wire()
            for host in self.hosts.values():
                if host.namespace:
                    ip("link", "set", host.device, "netns", host.namespace)
                ip("addr", "add", f"{host.address}/24", "dev", host.device, namespace=host.namespace)
                ip("link", "set", host.device, "up", namespace=host.namespace)
        except BaseException:
            self.close()
            raise
        return self

    def _start_wire(self) -> None:
        err = open(self.log, "ab") if self.log else subprocess.DEVNULL  # noqa: SIM115 - handed to the child
        self.wire = subprocess.Popen(
            [sys.executable, "-m", "duragent._ops.devstack.wire"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,  # a Ctrl-C is ours to handle: the wire goes in close(), after the hosts
        )
        devices = {h.device: h.address for h in self.hosts.values()}
        self._say({"devices": devices}, expect="ready")

    def _say(self, command: dict[str, object], expect: str = "ok") -> dict[str, Any]:
        assert self.wire is not None and self.wire.stdin is not None and self.wire.stdout is not None
        self.wire.stdin.write(json.dumps(command) + "\n")
        self.wire.stdin.flush()
        word, _, state = self.wire.stdout.readline().strip().partition(" ")
        if word != expect:
            raise LabUnavailable(f"the wire answered {word!r} (exit code {self.wire.poll()})")
        return json.loads(state) if state else {}

    def __enter__(self) -> Lab:
        return self.open()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    # -- using it ------------------------------------------------------------------------------------

    def address(self, name: str) -> str:
        return self.hosts[name].address

    def command(self, name: str, argv: Sequence[str]) -> list[str]:
        """`argv` run on host `name`: `ip netns exec` replaces itself with it, so its pid is the program's."""
        namespace = self.hosts[name].namespace
        return ["ip", "netns", "exec", namespace, *argv] if namespace else list(argv)

    def link(self, source: str, target: str, *, delay_ms: float = 0, loss: float = 0, cut: bool = False) -> None:
        """What happens to packets from `source` to `target` ("*": any host) from now on."""
        ends = [self.hosts[name].device if name != "*" else name for name in (source, target)]
        self._say({"rule": {"from": ends[0], "to": ends[1], "delay_ms": delay_ms, "loss": loss, "cut": cut}})

    def cut(self, a: str, b: str) -> None:
        """Nothing passes between `a` and `b`, either way (every other pair of hosts keeps talking)."""
        self.link(a, b, cut=True)
        self.link(b, a, cut=True)

    def cut_on(self, a: str, b: str, *matches: bytes) -> None:
        """Cut `a` from `b` (both ways) at the first packet from `a` to `b` that holds any of `matches`, that
        packet dropped: a request sent and never answered (the lab's traffic is plaintext). The first armed cut
        to trip disarms the others."""
        ends = {"from": self.hosts[a].device, "to": self.hosts[b].device}
        self._say({"arm": ends | {"match": [m.decode() for m in matches]}})

    def tripped(self) -> list[str]:
        """The cuts `cut_on` made since the last `heal`, as `a>b` (host names)."""
        names = {h.device: h.name for h in self.hosts.values()}
        found = self._say({"ask": "tripped"})["tripped"]
        return [">".join(names[d] for d in pair.split(">")) for pair in found]

    def packets(self) -> dict[str, int]:
        """Packets the wire saw so far (delivered or not), by `a>b` (host names)."""
        names = {h.device: h.name for h in self.hosts.values()}
        seen = self._say({"ask": "packets"})["packets"]
        return {">".join(names[d] for d in pair.split(">")): n for pair, n in seen.items()}

    def degrade(self, *, delay_ms: float, loss: float) -> None:
        """Every packet between any two hosts waits `delay_ms` and is dropped with probability `loss`."""
        self.link("*", "*", delay_ms=delay_ms, loss=loss)

    def heal(self) -> None:
        """Every link as it was made: rules off, armed cuts disarmed, their trips forgotten."""
        self._say({"clear": True})

    def close(self) -> None:
        """Stop what still runs in the namespaces, then the wire, then delete the namespaces; never raises."""
        for namespace in self.namespaces:
            kill_in(namespace)
        if self.wire is not None:
            with contextlib.suppress(OSError):
                assert self.wire.stdin is not None
                self.wire.stdin.close()
            try:
                self.wire.wait(5)
            except subprocess.TimeoutExpired:
                self.wire.kill()
                self.wire.wait()
            self.wire = None
        for namespace in self.namespaces:
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True)
        self.namespaces = []
