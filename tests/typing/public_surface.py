"""The public surface as a user's code uses it, type-checked by `make lint` (mypy, strict, against the installed
packages and their `py.typed`): a name dropped from `duragent`, or a signature changed under a user, fails lint.
Never run; the README's programs are run as written by tests/temporal/test_own_agent.py and test_testing_kit.py."""

from __future__ import annotations

from datetime import timedelta

import httpx
from pydantic import BaseModel
from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Worker

import duragent
from agentic import Agent as LessonAgent
from agentic import Budget, FakeModel, Message, Registry, Stop, ToolCall, tool, tool_call
from agentic.memory import Fact, FactStore
from duragent import (
    AgentClient,
    AgentResult,
    ApprovalPolicy,
    DurableAgentsPlugin,
    PendingApproval,
    RunHandle,
    Settings,
    ToolContext,
    build_worker,
)
from duragent.testing import agent_server
from duragent.workflow import run_agent, start_agent


@tool(description="Refund an order.", order_id="The order id.", mutating=True, requires_confirmation=True)
def refund(order_id: str, ctx: ToolContext) -> str:
    reply = ctx.deps.post(f"/orders/{order_id}/refund", headers={"Idempotency-Key": ctx.idempotency_key})
    answer: str = reply.raise_for_status().json()["answer"]
    return answer


agent = duragent.Agent(
    FakeModel([tool_call("refund", {"order_id": "A-1"}), "Refunded A-1."]),
    Registry([refund]),
    name="refunds",
    approvals=ApprovalPolicy(timeout_seconds=60),
)
lesson: LessonAgent = agent
in_process = agent.run("Refund order A-1")
stopped: Stop = in_process.stop
said: list[Message] = in_process.messages
calls: list[ToolCall] = [call for message in said for call in message.tool_calls]
budget: Budget = agent.budget


class Decision(BaseModel):
    order_id: str
    refund: bool


def no_refunds_on_fridays(answer: Decision) -> duragent.Refuse | None:
    return duragent.Refuse("not on Fridays") if answer.refund else None


def one_order(arguments: dict[str, object]) -> duragent.SendBack | None:
    return None if arguments.get("order_id") else duragent.SendBack("name the order")


typed = duragent.Agent(
    FakeModel([duragent.final_answer(Decision(order_id="A-1", refund=False))]),
    name="decider",
    output_type=Decision,
    output_retries=1,
    output_checks=[no_refunds_on_fridays],
    argument_checks={"refund": [one_order]},
    handoffs=[agent, "billing"],
)
decided: Decision = typed.run("Decide A-1").output
facts: list[Fact] = []
store: type[FactStore] = FactStore


async def own_agent(orders: httpx.Client) -> str | None:
    client = await Client.connect("localhost:7233", plugins=[DurableAgentsPlugin(Settings.from_env())])
    async with build_worker(client, task_queue="refunds", agents=[agent], deps=orders):
        run: RunHandle = await AgentClient(client, task_queue="refunds").start(agent, "Refund order A-1")
        waiting: list[PendingApproval] = await run.wait_for_approval()
        await run.approve(waiting[0].call_id, by="maria", arguments_hash=waiting[0].arguments_hash)
        result: AgentResult = await run.result()
        answer: str | None = result.output  # a plain agent's answer is its text (a typed one's, its type)
        return answer


@workflow.defn
class OrderRefund:
    @workflow.run
    async def run(self, order_id: str) -> str:
        handle: workflow.ChildWorkflowHandle[object, AgentResult] = await start_agent("refunds", id=f"r-{order_id}")
        first: AgentResult = await handle
        again: AgentResult = await run_agent(agent, f"Refund order {order_id}", budget=Budget(max_steps=3))
        return (again.output or "") if first.stop is Stop.ANSWERED else first.stop.value


async def own_worker(client: Client, orders: httpx.Client) -> None:
    plugin = DurableAgentsPlugin(agents=[agent], deps=orders)
    async with Worker(client, task_queue="shop", workflows=[OrderRefund], plugins=[plugin]):
        pass


async def testing_kit() -> None:
    refunds: list[str] = []
    async with agent_server([agent], deps=refunds) as runs:
        run = await runs.start(agent, "Refund order A-1")
        await runs.sleep(timedelta(hours=25))
        await run.result()


duragent.run(testing_kit())
