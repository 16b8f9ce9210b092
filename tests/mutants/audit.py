"""`python -m tests.mutants audit`: the hand-written mutants of the mutation audits, re-run on demand.

Each mutant is one edit of one rule (the exact text, found exactly once in its file, and what replaces it) and
the test files that state the rule, the catching file first. A mutant is *caught* when those tests fail (the
first failing test is named: `-x`), and *survives* when they pass. Nothing is committed: each mutant is applied
to a scratch copy (tests/mutants/scratch.py), after the same tests passed on the unmutated copy.

    python -m tests.mutants audit                   # every mutant of the latest audit (4), one at a time
    python -m tests.mutants audit --only M07 --only M08
    python -m tests.mutants audit --audit 2 --only N01
    python -m tests.mutants audit --list            # what each breaks, and its tests

Audit 2's catalogue is below; audits 3, 4 and 5 are in tests/mutants/audit_3.py, audit_4.py, audit_5.py.
`tests/mutants/test_audit_catalogue.py` keeps the catalogues in step with the code: every text still there once,
every test file still there.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from tests.mutants.audit_3 import AUDIT_3
from tests.mutants.audit_4 import AUDIT_4
from tests.mutants.audit_5 import AUDIT_5
from tests.mutants.mutant import AuditMutant, _t
from tests.mutants.scratch import copy_repository, preload, replaced, run_tests

# Mutation audit 2 (../shared/reviews/mutation-audit-2.md, at 835fe98), paths as the layout moved them.
AUDIT_2 = [
    AuditMutant(
        "N01",
        "agentic/signing.py",
        '"approve": approve,',
        "",
        "a signature covers yes/no: a signed decline cannot be turned into an approval",
        _t("agentic/signing_rules", "temporal/signed_decisions"),
    ),
    AuditMutant(
        "N02",
        "agentic/approvals.py",
        "if decision.call_id in set(expected):",
        "if True:",
        "a decision for a call neither pending nor queued is rejected, not kept as early",
        _t("agentic/approval_rules", "agentic/properties_approvals", "temporal/approvals"),
    ),
    AuditMutant(
        "N03",
        "agentic/approvals.py",
        "uid = call.identity",
        "uid = call.id",
        "approvals are keyed by the runner's call identity, not the provider's id",
        _t("agentic/approval_rules", "temporal/approvals"),
    ),
    AuditMutant(
        "N04",
        "duragent/_workflows/agent.py",
        "remaining = max((pending.deadline - workflow.now()).total_seconds(), 0.0)",
        "remaining = timeout",
        "the approval timer runs to the recorded deadline, not restarted in full by a continuation",
        _t("temporal/long_runs", "temporal/approvals", "temporal/durable_waits"),
        equivalent=(
            "the line runs in the workflow task that makes the request (now = requested_at: remaining = timeout)"
            " or in a continuation that carried the request over; and no run hands over with a request pending:"
            " the check before the wait sees the same history, in the same workflow task, as the loop's check"
            " just before it, which would have handed over first. Replays and worker restarts replay the"
            " original now"
        ),
    ),
    AuditMutant(
        "N05",
        "duragent/_baseline/approvals.py",
        "if now >= deadline:",
        "if False:",
        "baseline: whoever first notices a passed deadline records the expiry",
        _t("baseline/baseline_approvals"),
    ),
    AuditMutant(
        "N06",
        "agentic/delegation.py",
        "_left(budget.max_steps, consumed.steps)",
        "_left(budget.max_steps, 0)",
        "a child reserves only what the parent has left",
        _t("temporal/delegation", "temporal/delegation_budget"),
    ),
    AuditMutant(
        "N07",
        "agentic/delegation.py",
        "max_cost=_smaller(cost, limit.max_cost),",
        "max_cost=cost,",
        "the per-delegation cost cap limits the child's reservation",
        _t("agentic/delegation_rules", "temporal/delegation", "temporal/delegation_budget"),
    ),
    AuditMutant(
        "N08",
        "agentic/delegation.py",
        "path = parent.lineage(parent_run_id) if parent is not None else [parent_run_id]",
        "path = [parent_run_id]",
        "a grandchild's approvals name the whole tree (root and path)",
        _t("temporal/delegation", "ops/runs_api"),
    ),
    AuditMutant(
        "N09",
        "agentic/saga.py",
        "steps.extend(reversed(record.delegation.undo))",
        "steps.extend(record.delegation.undo)",
        "a child's effects are undone newest first, at the position of its call",
        _t("temporal/delegation", "agentic/saga_rules"),
    ),
    AuditMutant(
        "N10",
        "duragent/_workflows/delegation.py",
        "usage=partial.usage if partial else Usage(),",
        "usage=Usage(),",
        "a child that failed is still charged to its parent",
        _t("temporal/delegation"),
    ),
    AuditMutant(
        "N11",
        "agentic/delegation.py",
        "s if s.run_id is not None else _owned_by(",
        "_owned_by(",
        "a grandchild's planned undo keeps the grandchild's run, agent and options",
        _t("temporal/delegation", "agentic/saga_rules"),
    ),
    AuditMutant(
        "N12",
        "agentic/mcp/client.py",
        "meta={IDEMPOTENCY_KEY_META: key}",
        "meta=None",
        "an MCP call carries its idempotency key in _meta",
        _t("temporal/mcp"),
    ),
    AuditMutant(
        "N13",
        "agentic/mcp/toolset.py",
        'hints.get("destructiveHint") is not False',
        'hints.get("destructiveHint") is True',
        "an unannotated MCP tool counts as destructive (needs approval by default)",
        _t("temporal/mcp"),
    ),
    AuditMutant(
        "N14",
        "duragent/_workflows/agent.py",
        "carry.spec if carry else None",
        "None",
        # Since the gate (GATE_PATCH) a continuation asks for its spec again and keeps only the recorded MCP
        # tools, so this line now decides what a continuation from before the gate replays: its history has no
        # describe, and the recorded continued migration fails to replay with the mutant.
        "a continuation from before the gate keeps the spec and MCP tool list recorded at start (replays as run)",
        _t("temporal/replay", "temporal/mcp", "temporal/long_runs"),
    ),
    AuditMutant(
        "N15",
        "agentic/agent.py",
        "if spec.requires_confirmation and (denied :=",
        "if False and spec.requires_confirmation and (denied :=",
        "an MCP tool that requires confirmation does not run unapproved",
        _t("temporal/mcp"),
    ),
    AuditMutant(
        "N16",
        "duragent/_stores/facts.py",
        "SET value = 'null'",
        "SET value = value",
        "forgetting a source erases the forgotten values",
        _t("stores/facts", "temporal/memory_durable", "ops/facts_http", "ops/facts_cli"),
    ),
    AuditMutant(
        "N17",
        "duragent/_stores/facts.py",
        '" WHERE namespace = ? AND source = ?',
        '" WHERE (namespace = ? OR 1) AND source = ?',
        "forget is scoped to one namespace (tenant)",
        _t("stores/facts", "ops/facts_http", "ops/facts_cli", "temporal/memory_durable"),
    ),
    AuditMutant(
        "N18",
        "duragent/_stores/memory_tools.py",
        "write_key=ctx.idempotency_key",
        "write_key=None",
        "one fact version per tool call: a retried or replayed remember adds none",
        _t("stores/memory_tools", "temporal/memory_durable", "stores/facts"),
    ),
    AuditMutant(
        "N19",
        "duragent/_ops/retention/policy.py",
        "closed.due_at <= now",
        "closed.closed_at <= now",
        "a run is due only after its own retention",
        _t("ops/prune", "ops/prune_cli"),
    ),
    AuditMutant(
        "N20",
        "duragent/_ops/retention/policy.py",
        "    if run.parent_id:\n",
        "    if False:\n",
        "a closed child is not pruned while its parent run is open",
        _t("ops/prune"),
    ),
    AuditMutant(
        "N21",
        "duragent/_ops/retention/policy.py",
        'if temporal_status == "completed" and status in ANSWERED:',
        "if status in ANSWERED:",
        "only a run Temporal closed as Completed gets the 30-day retention",
        _t("ops/prune_cli", "ops/prune"),
    ),
    AuditMutant(
        "N22",
        "duragent/_ops/retention/temporal.py",
        "[run for run in due if run.run_id not in in_journal]",
        "due",
        "a run an earlier pass archived (in the journal) is finished, not archived again",
        _t("ops/prune"),
    ),
    AuditMutant(
        "N23",
        "duragent/_ops/retention/checkpoints.py",
        "(status IN ({ok_in}) AND COALESCE(finished_at, updated_at) < ?)",
        "(status IN ({ok_in}) AND created_at < ?)",
        "baseline retention counts from when a run finished, not when it was created",
        _t("ops/baseline_prune", "baseline/baseline_cli"),
    ),
    AuditMutant(
        "N24",
        "duragent/_stores/postgres/ledger.py",
        'db.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (KEY_LOCKS, key))',
        "pass",
        "PostgreSQL ledger: apply performs once per key under concurrency",
        _t("stores/ledger", "stores/multi_host"),
    ),
    AuditMutant(
        "N25",
        "duragent/_ops/http/auth.py",
        'self.sessions.end(cookie_value(request.headers.get("cookie"), self.cookie))',
        "pass",
        "logging out of the runs API ends the server-side session (its test: branch one-http)",
        _t("ops/inbox", "ops/runs_api", "ops/http_auth", "ops/properties_http", "ops/baseline_http"),
    ),
    AuditMutant(
        "N26",
        "duragent/_ops/http/sessions.py",
        "if found is None or found[0] <= self.clock():",
        "if found is None:",
        "a browser session expires",
        _t("ops/codec_endpoint_security", "ops/inbox", "ops/http_auth"),
    ),
    AuditMutant(
        "N27",
        "duragent/_ops/http/auth.py",
        "if not is_loopback(host):",
        "if False:",
        "--insecure-no-auth is allowed on a loopback address only",
        _t("ops/http_auth", "ops/runs_api", "ops/baseline_http", "ops/codec_endpoint_security"),
    ),
    AuditMutant(
        "N28",
        "agentic/budget.py",
        "used.cost >= self.max_cost",
        "used.cost > self.max_cost",
        "a run whose cost has reached max_cost makes no further model call",
        _t("agentic/loop", "agentic/loop_details", "temporal/delegation_budget"),
    ),
    AuditMutant(
        "N29",
        "duragent/_baseline/runner.py",
        "if self.loop.state.consumed != self.stored_usage:",
        "if False:",
        "baseline resume refuses when the replayed consumption differs from the stored one",
        _t("baseline/baseline_lease", "baseline/baseline_kill", "stores/store_rules"),
    ),
    AuditMutant(
        "N30",
        "duragent/_baseline/lease.py",
        "AND attempts < ?",
        "AND (attempts < ? OR 1)",
        "a run taken over max_attempts times is dead-lettered",
        _t("baseline/baseline_lease", "baseline/lease_rules"),
    ),
    AuditMutant(
        "N31",
        "duragent/_baseline/lease.py",
        '"UPDATE runs SET lease_owner = NULL, lease_expires = 0 WHERE run_id = ? AND lease_owner = ?"',
        '"UPDATE runs SET lease_owner = NULL, lease_expires = 0 WHERE run_id = ? AND (lease_owner = ? OR 1)"',
        "a worker releases only a lease it holds",
        _t("baseline/lease_rules", "baseline/baseline_lease"),
    ),
    AuditMutant(
        "N32",
        "duragent/_baseline/jobs.py",
        "if options.delegation is not None and not by_parent:",
        "if False:",
        "a delegated child is resumed only through its parent",
        _t("temporal/delegation", "baseline/baseline_cli"),
    ),
    AuditMutant(
        "N33",
        "duragent/_ops/http/app.py",
        "if request.approve and request.arguments_hash is None:",
        "if False:",
        "an approval over HTTP carries the hash of the arguments the approver reviewed",
        _t("ops/runs_api", "ops/properties_http", "ops/baseline_http"),
    ),
    AuditMutant(
        "N34",
        "duragent/_client.py",
        "approve, target.call_id, by=by, reason=reason, arguments_hash=arguments_hash, wait=wait, key=key",
        "approve, target.call_id, by=by, reason=reason, arguments_hash=arguments_hash, wait=wait",
        "a decision routed down a delegation tree is still signed",
        _t("temporal/signed_decisions", "temporal/delegation", "ops/runs_api_temporal"),
    ),
    AuditMutant(
        "N35",
        "agentic/loop.py",
        "s.consumed = s.consumed.plus(result.delegation.usage)",
        "pass",
        "a child's consumption is charged to its parent",
        _t("temporal/delegation", "agentic/loop", "temporal/delegation_budget"),
    ),
    AuditMutant(
        "N36",
        "duragent/_ops/retention/policy.py",
        "if execution.status == WorkflowExecutionStatus.RUNNING:",
        "if False:",
        "a closed run is not pruned while another run under the same id is open",
        _t("ops/prune"),
    ),
    AuditMutant(
        "N37",
        "duragent/_ops/http/auth.py",
        "return host in allowed",
        "return any(host.startswith(a) for a in allowed)",
        "the Host allowlist is an exact match (DNS rebinding)",
        _t("ops/http_auth", "ops/runs_api", "ops/codec_endpoint_security", "ops/properties_http"),
    ),
    AuditMutant(
        "N38",
        "duragent/_workflows/agent.py",
        "child_run_id(self.run_id, call.identity)",
        "child_run_id(self.run_id, call.id)",
        "a child's run id comes from the runner's call uid, never the provider's id",
        _t("temporal/delegation", "temporal/delegation_budget", "ops/runs_api"),
    ),
    AuditMutant(
        "N39",
        "agentic/mcp/toolset.py",
        "if not server.exposes(remote):",
        "if False:",
        "only the MCP tools the agent exposes are offered",
        _t("temporal/mcp"),
    ),
]
AUDITS = {"2": AUDIT_2, "3": AUDIT_3, "4": AUDIT_4, "5": AUDIT_5}


def run(args: argparse.Namespace) -> int:
    chosen = [m for m in AUDITS[args.audit] if not args.only or m.id in args.only]
    if args.only and len(chosen) != len(set(args.only)):
        print(f"mutants audit: no such mutant in audit {args.audit}: {sorted(set(args.only))}", file=sys.stderr)
        return 2
    if args.list:
        for m in chosen:
            print(f"{m.id} {m.path}: {m.rule}\n    {m.old.strip()!r} -> {m.new.strip()!r}\n    {' '.join(m.tests)}")
        return 0
    preload()
    unexpected = 0
    print(f"mutants audit {args.audit}: {len(chosen)} mutants, one at a time", flush=True)
    with tempfile.TemporaryDirectory(prefix="mutants-") as scratch:
        copy = Path(scratch)
        copy_repository(copy)
        passing: set[tuple[str, ...]] = set()
        for mutant in chosen:
            if mutant.tests not in passing and not args.skip_unmutated:  # unmutated, they must pass
                unmutated = run_tests(copy, list(mutant.tests), args.timeout)
                if not unmutated.passed:
                    why = unmutated.first_failure or unmutated.last_line
                    print(f"{mutant.id} NOT RUN: its tests fail unmutated: {why}", flush=True)
                    unexpected += 1
                    continue
                passing.add(mutant.tests)
            started = time.monotonic()
            with replaced(copy, mutant.path, mutant.old, mutant.new):
                tested = run_tests(copy, list(mutant.tests), args.timeout)
            took = f"{time.monotonic() - started:.0f} s"
            if not tested.passed:
                unexpected += mutant.equivalent is not None
                print(f"{mutant.id} caught    by {tested.first_failure or tested.last_line} ({took})", flush=True)
            else:
                unexpected += mutant.equivalent is None
                verdict = "survived (equivalent: expected)" if mutant.equivalent else "SURVIVED"
                print(f"{mutant.id} {verdict}: {mutant.rule} ({took}, {tested.last_line})", flush=True)
    return 1 if unexpected else 0


def configure(parser: argparse.ArgumentParser) -> None:
    parser.set_defaults(handler=run)
    parser.add_argument("--audit", choices=sorted(AUDITS), default=max(AUDITS), help="which audit (default: latest)")
    parser.add_argument("--only", action="append", metavar="ID", help="a mutant (repeatable), e.g. N01")
    parser.add_argument("--list", action="store_true", help="list the mutants and their tests, and stop")
    parser.add_argument("--timeout", type=float, default=300.0, help="pytest's timeout per test, in seconds")
    parser.add_argument(
        "--skip-unmutated", action="store_true", help="do not run the tests on the unmutated copy first"
    )
