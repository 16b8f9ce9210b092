"""One way to connect, so every process uses the same data converter (pydantic models on the wire)."""

from __future__ import annotations

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from settings import Settings


async def connect(settings: Settings | None = None) -> Client:
    settings = settings or Settings()
    return await Client.connect(settings.address, namespace=settings.namespace, data_converter=pydantic_data_converter)
