"""Whether a host is this machine: what may be served or called without TLS or authentication."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
