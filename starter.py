"""The command line, from the repo: `python starter.py demo`, `python starter.py run billing --wait`, ... and the
application's own command:

    python starter.py order-refund A-1                     # start OrderRefund; its agent step waits for approval
    python starter.py order-refund A-1 --approve-as maria  # ...approve the refund and wait for the outcome

The same code as the installed `duragent` command (duragent/_ops/cli/starter.py, where every subcommand is
listed); here its name in messages is `starter.py`. Without `--agents` or AGENT_MODULES it serves and starts the
repo's demo agents (`examples/`), and `demo` ends with the application (`workflows/order_refund.py`) served by
`worker.py`, against the orders service (`examples/orders_service.py`) it starts.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle

from duragent import AgentClient, PendingApproval, Settings, connect
from duragent._ops.cli import starter as cli
from duragent._ops.cli.boundary import exit_now
from duragent._ops.cli.output import CliError, emit
from duragent._ops.devstack.devserver import free_port, port_open
from workflows import OrderRefund, RefundOutcome, RefundRequest

PROG = "starter.py"
HERE = Path(__file__).resolve().parent
# The agents served and started when neither --agents nor AGENT_MODULES names a module: the repository's demo agents.
DEMO_AGENTS = ("examples",)
APPROVAL_WAIT = 60.0  # seconds a command waits for the agent step to ask for its approval


async def start_order_refund(client: Client, settings: Settings, order_id: str) -> WorkflowHandle[Any, RefundOutcome]:
    return await client.start_workflow(
        OrderRefund.run,
        RefundRequest(order_id=order_id),
        id=f"order-refund-{order_id}-{uuid.uuid4().hex[:6]}",
        task_queue=settings.task_queue,
        result_type=RefundOutcome,
    )


async def refund_approval(agents: AgentClient, workflow_id: str) -> PendingApproval:
    """The approval the workflow's agent step waits for (found among its children)."""
    [waiting] = await agents.handle(workflow_id).wait_for_approval(timeout=APPROVAL_WAIT)
    return waiting


async def cmd_order_refund(args: argparse.Namespace, settings: Settings) -> int:
    client = await connect(settings)
    agents = AgentClient(client)
    handle = await start_order_refund(client, settings, args.order_id)
    waiting = await refund_approval(agents, handle.id)
    said = {"workflow_id": handle.id, "url": agents.run_url(handle.id), "agent_run": waiting.run_id}
    if not args.approve_as:
        how = (
            f"python {PROG} approve {waiting.run_id} --call {waiting.call_id} --by NAME --hash {waiting.arguments_hash}"
        )
        emit(
            args.json,
            said | {"waiting": waiting.model_dump(mode="json"), "approve": how},
            f"started {handle.id}: {agents.run_url(handle.id)}\n"
            f"its agent step {waiting.run_id} waits for approval of {waiting.tool}({waiting.arguments})\n"
            f"approve it: {how}",
        )
        return 0
    await agents.handle(waiting.run_id).approve(
        waiting.call_id, by=args.approve_as, reason="order-refund", arguments_hash=waiting.arguments_hash
    )
    outcome = await handle.result()
    emit(args.json, said | outcome.model_dump(mode="json"), outcome_text(handle.id, outcome, agents))
    return 0


def outcome_text(workflow_id: str, outcome: RefundOutcome, agents: AgentClient) -> str:
    refunded = "refunded" if outcome.refunded else "not refunded"
    notified = "customer notified" if outcome.customer_notified else "customer not notified"
    return (
        f"{workflow_id}: order {outcome.order_id} {refunded} ({outcome.answer}); {notified}\n"
        f"  the workflow: {agents.run_url(workflow_id)}\n  its agent step: {agents.run_url(outcome.agent_run)}"
    )


class OrderRefundDemo:
    """The demo's last act: the application's workflow, served by worker.py next to the demo agents, against an
    orders service started for it."""

    worker_command = [sys.executable, str(HERE / "worker.py")]

    def __init__(self) -> None:
        self.service: subprocess.Popen[bytes] | None = None
        self.url = ""

    def worker_env(self, settings: Settings) -> dict[str, str]:
        if self.service is None:
            port = free_port()
            self.url = f"http://127.0.0.1:{port}"
            command = [
                sys.executable,
                "-m",
                "examples.orders_service",
                "--port",
                str(port),
                "--db",
                str(settings.data_dir / "demo-orders.db"),
            ]
            self.service = subprocess.Popen(command, cwd=HERE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 30
            while not port_open("127.0.0.1", port):
                if self.service.poll() is not None or time.monotonic() > deadline:
                    raise CliError("the orders service did not start")
                time.sleep(0.1)
        return {"ORDERS_URL": self.url}

    async def run(self, demo: Any, client: AgentClient) -> None:
        demo.say("\n[order-refund] the application's own workflow: look up A-1, the orders agent refunds it (a")
        demo.say("  human approves), then the customer is told — one workflow, the agent its middle step")
        handle = await start_order_refund(client.client, demo.settings, "A-1")
        waiting = await refund_approval(client, handle.id)
        demo.say(f"  {handle.id} waits in its agent step {waiting.run_id}: {waiting.tool}({waiting.arguments})")
        demo.say("  approving it as 'demo-approver'; the workflow then notifies the customer")
        await client.handle(waiting.run_id).approve(
            waiting.call_id, by="demo-approver", reason="demo", arguments_hash=waiting.arguments_hash
        )
        outcome = await handle.result()
        shown = {"workflow": "OrderRefund", "agent": "orders", "run_id": handle.id, "url": client.run_url(handle.id)}
        demo.results.append(shown | outcome.model_dump(mode="json"))
        for line in outcome_text(handle.id, outcome, client).splitlines():
            demo.say(f"  {line.strip()}")

    def stop(self) -> None:
        if self.service is not None:
            self.service.terminate()
            self.service.wait(timeout=10)


def application_commands(command: Callable[..., argparse.ArgumentParser], root: argparse.ArgumentParser) -> None:
    """The application's command, and its act at the end of `demo`."""
    refund = command("order-refund", cmd_order_refund, "start the application's OrderRefund workflow for an order")
    refund.add_argument("order_id", metavar="ORDER", help="the order, e.g. A-1 (examples/orders_service.py)")
    refund.add_argument("--approve-as", metavar="NAME", help="approve its agent's refund as NAME and wait for the end")
    root.set_defaults(demo_application=OrderRefundDemo())


def parser():
    return cli.parser(PROG, DEMO_AGENTS, application_commands)


def main(argv: list[str]) -> int:
    return cli.main(argv, prog=PROG, default_agents=DEMO_AGENTS, extend=application_commands)


if __name__ == "__main__":
    exit_now(main(sys.argv[1:]))  # releases the Temporal runtimes before exiting (sdk-python issue 300)
