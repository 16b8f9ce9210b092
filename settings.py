"""Where the worker and the command line connect, and where local state lives — read from the environment
once, here. `TEMPORAL_TASK_QUEUE` is the single definition of the task queue name."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent
DEFAULT_DATA = ROOT / ".data"


@dataclass(frozen=True)
class Settings:
    address: str = field(default_factory=lambda: os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    namespace: str = field(default_factory=lambda: os.environ.get("TEMPORAL_NAMESPACE", "default"))
    task_queue: str = field(default_factory=lambda: os.environ.get("TEMPORAL_TASK_QUEUE", "durable-agents"))
    ledger_path: Path = field(default_factory=lambda: Path(os.environ.get("AGENT_LEDGER", DEFAULT_DATA / "ledger.db")))
    ui_url: str = field(default_factory=lambda: os.environ.get("TEMPORAL_UI_URL", "http://localhost:8233"))

    def run_url(self, run_id: str) -> str:
        return f"{self.ui_url}/namespaces/{self.namespace}/workflows/{run_id}"
