"""The orders service, as the application's workflows call it: look an order up, tell its customer. Plain
Temporal activities over an HTTP client made once per worker (examples/orders_service.py is the service).

Telling the customer is an effect: it carries an idempotency key of its own (the calling run's id), so a retry
or a second worker never sends the notice twice."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from pydantic import BaseModel
from temporalio import activity
from temporalio.exceptions import ApplicationError

if TYPE_CHECKING:  # the worker makes the client: a command that only starts the workflow imports no HTTP stack
    import httpx

UnknownOrder = "UnknownOrder"  # the error type of an order the service does not know: retrying cannot help


class Order(BaseModel):
    order_id: str
    amount: float


class Notice(BaseModel):
    order_id: str
    text: str


class OrderActivities:
    """The activities, bound to the worker's client of the orders service."""

    def __init__(self, orders: httpx.AsyncClient) -> None:
        self.orders = orders

    def all(self) -> list[object]:
        """What the worker registers."""
        return [self.look_up_order, self.notify_customer]

    @activity.defn(name="look_up_order")
    async def look_up_order(self, order_id: str) -> Order:
        reply = await self.orders.get(f"/orders/{quote(order_id, safe='')}")
        if reply.status_code == 404:
            raise ApplicationError(f"no order {order_id!r}", type=UnknownOrder, non_retryable=True)
        return Order.model_validate(reply.raise_for_status().json())

    @activity.defn(name="notify_customer")
    async def notify_customer(self, notice: Notice) -> bool:
        """Whether the notice was sent now (False: it had been, under this run's key)."""
        key = f"{activity.info().workflow_id}:notify"
        path = f"/orders/{quote(notice.order_id, safe='')}/notify"
        reply = await self.orders.post(path, json={"text": notice.text}, headers={"Idempotency-Key": key})
        return bool(reply.raise_for_status().json()["sent"])
