"""A webhook target that resolves to a public address when it is checked and to this machine when the worker
connects (DNS rebinding), played with a name whose lookups answer so, in order, and a service listening on the
worker's loopback: the delivery connects to the address it checked, never to what a second lookup answers, so
no connection ever reaches the service."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from temporalio.client import WorkflowExecutionStatus

from duragent._client import AgentClient
from duragent._config.webhook_signing import ALLOW_LOOPBACK_ENV, pinned
from duragent._stores.ledger import EffectsLedger
from tests.conftest import eventually, new_worker

SECRET = "whsec-test-0123456789abcdef"
NAME = "rebind.example"
PUBLIC = "192.0.2.55"  # TEST-NET-1: public as far as the checks go, reaches nothing


class Listener:
    """A TCP service on loopback that counts the connections it accepts (whatever they then say)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()


@pytest.fixture
def internal_service() -> Iterator[Listener]:
    listener = Listener()
    yield listener
    listener.sock.close()


@pytest.fixture
def rebinding_dns(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """`NAME` resolves to PUBLIC the first time, to 127.0.0.1 every time after; what each lookup answered."""
    answered: list[str] = []
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if (host.decode() if isinstance(host, bytes) else host) != NAME:  # the HTTP client asks in IDNA bytes
            return real(host, port, *args, **kwargs)
        address = PUBLIC if not answered else "127.0.0.1"
        answered.append(address)
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, int(port or 443)))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return answered


async def test_a_name_rebound_to_loopback_after_its_check_is_never_connected_to(
    dev_env, task_queue: str, ledger: EffectsLedger, internal_service: Listener, rebinding_dns: list[str], monkeypatch
) -> None:
    monkeypatch.delenv(ALLOW_LOOPBACK_ENV, raising=False)
    client = dev_env.client
    async with new_worker(client, task_queue, ledger, webhook_secret=SECRET.encode()):
        run = await AgentClient(client, task_queue=task_queue).start(
            "billing", webhook=f"https://{NAME}:{internal_service.port}/hook"
        )
        assert (await run.result()).status == "completed"
        notifier = client.get_workflow_handle(f"{run.run_id}/webhook")

        async def attempted() -> bool:  # its first POST has been made, and has failed
            description = await notifier.describe()
            pending = description.raw_description.pending_activities
            return description.status != WorkflowExecutionStatus.RUNNING or any(
                a.attempt > 1 or a.HasField("last_failure") for a in pending
            )

        await eventually(attempted, what="the notifier's first delivery attempt")
        await notifier.terminate("test over")
    assert rebinding_dns[0] == PUBLIC  # the check saw a public address
    assert internal_service.accepted == 0  # and nothing ever connected to the service on loopback


def test_a_pinned_target_keeps_the_servers_name_for_http_and_tls() -> None:
    target = pinned("https://user:pw@hooks.example:8443/in?x=1", "203.0.113.7")
    assert target.url == "https://user:pw@203.0.113.7:8443/in?x=1"
    assert target.headers == {"host": "hooks.example:8443"}
    assert target.extensions == {"sni_hostname": "hooks.example"}
    six = pinned("https://hooks.example/in", "2001:db8::7")
    assert (six.url, six.headers) == ("https://[2001:db8::7]/in", {"host": "hooks.example"})
    assert pinned("http://relay.local:9/x", "::ffff:127.0.0.1").url == "http://127.0.0.1:9/x"
