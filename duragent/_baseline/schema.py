"""The checkpoint store's tables. docs/baseline.md documents every column; this is the source of truth.

Times are ISO-8601 UTC strings except `runs.lease_expires`, an epoch float, because the lease takeover is
one numeric comparison inside a conditional UPDATE.
"""

from __future__ import annotations

VERSION = 3

ACTIVE = ("running", "awaiting_approval", "compensating")
SUCCEEDED = ("completed", "compensated", "abandoned")  # retention: archived after 30 days
FAILED = ("failed", "compensation_failed", "dead_letter")  # retention: kept 90 days for postmortems
TERMINAL = SUCCEEDED + FAILED

DDL = """
CREATE TABLE IF NOT EXISTS runs (
    run_id          TEXT PRIMARY KEY,
    scenario        TEXT NOT NULL,
    status          TEXT NOT NULL,
    options         TEXT NOT NULL,            -- RunOptions JSON: scenario options, budget, approval policy...
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    finished_at     TEXT,
    used_steps      INTEGER NOT NULL DEFAULT 0,  -- consumption carried forward: a resumed run gets no fresh allowance
    input_tokens    INTEGER NOT NULL DEFAULT 0,
    output_tokens   INTEGER NOT NULL DEFAULT 0,
    cost            REAL NOT NULL DEFAULT 0,
    progress_step   INTEGER NOT NULL DEFAULT 0,  -- latest progress, for pollers and the SSE stream
    progress_total  INTEGER,
    progress_label  TEXT NOT NULL DEFAULT '',
    lease_owner     TEXT,
    lease_expires   REAL NOT NULL DEFAULT 0,
    attempts        INTEGER NOT NULL DEFAULT 0,  -- workers that took the run (the first run included)
    stop            TEXT,
    stop_detail     TEXT,
    output          TEXT,
    error           TEXT,
    remaining       TEXT,                     -- JSON: compensations not done (compensation_failed)
    not_compensable TEXT,                     -- JSON: mutating tools with effects and no inverse
    webhook_url     TEXT,
    execution       TEXT                      -- this row's own random id, which a signed decision is bound to:
                                              -- a run id is free again once pruned, an execution never recurs
);
CREATE INDEX IF NOT EXISTS runs_status ON runs(status, lease_expires);

CREATE TABLE IF NOT EXISTS outputs (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id     TEXT NOT NULL,
    step       INTEGER NOT NULL,
    body       TEXT NOT NULL,                 -- JSON: a ModelReply, a ToolResult, or a stop
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS outputs_run ON outputs(run_id);

CREATE TABLE IF NOT EXISTS steps (
    run_id          TEXT NOT NULL REFERENCES runs(run_id),
    step            INTEGER NOT NULL,         -- 1, 2, 3... one loop action each
    step_name       TEXT NOT NULL,            -- model_call | tool:<name> | compensate:<name> | stop:<why> | mcp_tools
    status          TEXT NOT NULL,            -- in_progress | completed | failed
    input_hash      TEXT NOT NULL,
    output_ref      INTEGER REFERENCES outputs(id),
    idempotency_key TEXT,
    call_id         TEXT,
    attempts        INTEGER NOT NULL DEFAULT 0,
    label           TEXT NOT NULL DEFAULT '',
    started_at      TEXT NOT NULL,
    finished_at     TEXT,
    PRIMARY KEY (run_id, step)
);

CREATE TABLE IF NOT EXISTS events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id     TEXT NOT NULL,
    kind       TEXT NOT NULL,                 -- cancel
    detail     TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    handled_at TEXT,
    handled_step INTEGER
);
CREATE INDEX IF NOT EXISTS events_run ON events(run_id, handled_at);

CREATE TABLE IF NOT EXISTS approvals (
    run_id         TEXT NOT NULL,
    call_id        TEXT NOT NULL,
    tool           TEXT NOT NULL,
    arguments      TEXT NOT NULL,
    arguments_hash TEXT NOT NULL,
    status         TEXT NOT NULL,             -- pending | approved | declined | expired | withdrawn
    timeout_s      REAL NOT NULL,
    requested_at   TEXT NOT NULL,
    deadline       TEXT NOT NULL,             -- written before the wait starts
    decided_by     TEXT,
    reason         TEXT NOT NULL DEFAULT '',
    decided_at     TEXT,
    signature      TEXT,                      -- the decider's Ed25519 signature (agentic/signing.py), if signed
    PRIMARY KEY (run_id, call_id)
);

CREATE TABLE IF NOT EXISTS approval_audit (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id         TEXT NOT NULL,
    call_id        TEXT NOT NULL,
    tool           TEXT,
    event          TEXT NOT NULL,             -- approved | declined | expired | rejected | withdrawn
    approver       TEXT,
    at             TEXT NOT NULL,
    arguments_hash TEXT,
    reason         TEXT NOT NULL DEFAULT '',
    rejection      TEXT,
    signed         INTEGER NOT NULL DEFAULT 0 -- 1: verified against the approver's public key
);
CREATE INDEX IF NOT EXISTS approval_audit_run ON approval_audit(run_id, id);

CREATE TABLE IF NOT EXISTS webhooks (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id        TEXT NOT NULL,
    url           TEXT NOT NULL,
    payload       TEXT NOT NULL,
    status        TEXT NOT NULL,              -- pending | delivered | failed
    attempts      INTEGER NOT NULL DEFAULT 0,
    claimed_until REAL NOT NULL DEFAULT 0,
    created_at    TEXT NOT NULL,
    delivered_at  TEXT
);

CREATE TABLE IF NOT EXISTS webhook_attempts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook_id  INTEGER NOT NULL REFERENCES webhooks(id),
    run_id      TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    at          TEXT NOT NULL,
    status_code INTEGER,
    error       TEXT
);
"""

# What a store of an earlier version gets, after DDL (which creates only what is missing), to reach each version.
MIGRATIONS = {
    2: (  # signed decisions (agentic/signing.py)
        "ALTER TABLE approvals ADD COLUMN signature TEXT",
        "ALTER TABLE approval_audit ADD COLUMN signed INTEGER NOT NULL DEFAULT 0",
    ),
    3: (  # signatures bound to the run's execution
        "ALTER TABLE runs ADD COLUMN execution TEXT",
        "UPDATE runs SET execution = lower(hex(randomblob(16))) WHERE execution IS NULL",
    ),
}

# Child tables first: deleting a run deletes these, in this order.
RUN_TABLES = ("webhook_attempts", "webhooks", "approval_audit", "approvals", "events", "steps", "outputs")
