"""What `job status --json` and `GET /runs/{id}` answer: the run, its steps, progress, consumption, lease."""

from __future__ import annotations

import json
import time
from typing import Any

from agentic.progress import percent
from duragent._baseline import approvals, webhooks
from duragent._baseline.store import RunRow, Store, iso


def run_status(store: Store, run_id: str) -> dict[str, Any]:
    run = store.require(run_id)
    steps = store.steps(run_id)
    done = sum(1 for s in steps if s.status == "completed")
    return {
        "run_id": run.run_id,
        "agent": run.scenario,
        "scenario": run.scenario,  # the field's name before agents had names; kept for scripts
        "status": run.status,
        "stop": run.stop,
        "stop_detail": run.stop_detail,
        "output": run.output,
        "error": run.error,
        "created_at": run.created_at,
        "updated_at": run.updated_at,
        "finished_at": run.finished_at,
        "attempts": run.attempts,
        "percent_complete": percent(done, run.progress_total, run.terminal),
        "progress": run.progress.to_dict(),
        "consumption": run.consumed.model_dump(),
        "lease": lease_view(run),
        "cancel_requested": not run.terminal and store.pending_cancel(run_id) is not None,
        "remaining_compensations": json.loads(run.remaining) if run.remaining else [],
        "not_compensable": json.loads(run.not_compensable) if run.not_compensable else [],
        "steps": [
            {
                "step": s.step,
                "step_name": s.step_name,
                "status": s.status,
                "label": s.label,
                "input_hash": s.input_hash,
                "output_ref": s.output_ref,
                "idempotency_key": s.idempotency_key,
                "attempts": s.attempts,
                "started_at": s.started_at,
                "finished_at": s.finished_at,
            }
            for s in steps
        ],
        **approvals.view(store, run_id),
        "webhooks": webhooks.deliveries(store, run_id),
        "options": json.loads(run.options),
    }


def lease_view(run: RunRow) -> dict[str, Any]:
    live = run.lease_owner is not None and run.lease_expires > time.time()
    return {
        "owner": run.lease_owner,
        "expires_at": iso(run.lease_expires) if run.lease_owner else None,
        "live": live,
    }
