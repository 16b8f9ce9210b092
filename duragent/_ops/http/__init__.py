"""The runs API: one HTTP API (FastAPI) over both engines — Temporal (`python starter.py serve`) and the
checkpoint baseline (`job serve`) — with the same routes, JSON shapes and access rules, and an approvals
inbox page for people who approve. `app.py` builds it; `engine.py` is what each backend implements."""

from agentic.extras import require_extra

require_extra("http")  # before FastAPI is imported: `duragent serve` without the extra says so in one line
