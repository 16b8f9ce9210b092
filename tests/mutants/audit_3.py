"""Mutation audit 3 (../shared/reviews/mutation-audit-3.md, mutants-3.json, at fa2d3ff): the rules added with the
approval gate's execution binding, the deploys, the testing kit and the sticky release. The paths are today's
(the one import root of 0.2)."""

from __future__ import annotations

from tests.mutants.mutant import AuditMutant, _t

AUDIT_3 = [
    AuditMutant(
        "M01",
        "duragent/_activities/caller.py",
        "if execution.type.name != AGENT_WORKFLOW or execution.task_queue != task_queue:",
        "if execution.type.name != AGENT_WORKFLOW:",
        (
            "the effects worker acts only for an AgentWorkflow on its OWN task queue (an impostor named "
            "AgentWorkflow on another queue is refused)"
        ),
        _t("temporal/outsider", "temporal/gate_mcp"),
    ),
    AuditMutant(
        "M02",
        "duragent/_activities/caller.py",
        "if claimed is not None and claimed != info.workflow_id:",
        "if False:",
        "an activity input that names another run than the one the server reports as the caller is refused",
        _t("temporal/outsider"),
    ),
    AuditMutant(
        "M03",
        "duragent/_activities/caller.py",
        "for _ in range(MAX_DEPTH):",
        "for _ in range(1):",
        (
            "a compensation may undo effects of a run delegated at ANY depth (grandchildren), checked up the "
            "server's parent links"
        ),
        _t("temporal/delegation", "temporal/saga"),
    ),
    AuditMutant(
        "M04",
        "duragent/_activities/caller.py",
        "return execution.first_run_id",
        "return activity.info().workflow_run_id",
        (
            "the execution a signature is checked against at the effect is the run's FIRST execution id (stable "
            "across continue-as-new)"
        ),
        _t("temporal/handover", "temporal/gate"),
    ),
    AuditMutant(
        "M05",
        "duragent/_activities/tools.py",
        "if mcp is not None or gated:",
        "if gated:",
        (
            "an MCP tool's flags come from the run's input, so they are trusted only once the server confirms "
            "the caller is an agents' run"
        ),
        _t("temporal/gate_mcp", "temporal/outsider"),
    ),
    AuditMutant(
        "M06",
        "duragent/_activities/tools.py",
        "keys = self.served.approver_keys",
        "keys = {}",
        "at the effect, the approval is verified against the effects worker's own approver keys",
        _t("temporal/gate"),
    ),
    AuditMutant(
        "M07",
        "duragent/_activities/tools.py",
        "        if owner != run_id:\n            await descends_from(owner, run_id)",
        "        if False:\n            await descends_from(owner, run_id)",
        "compensate undoes only the calling run's effects or those of a run it delegated to (server parent links)",
        _t("temporal/compensate_input", "temporal/outsider"),
    ),
    AuditMutant(
        "M08",
        "duragent/_activities/tools.py",
        "if (step.original_key, step.key) != (original_key, undo_key(original_key)):",
        "if step.original_key != original_key:",
        (
            "the undo's idempotency key is the one derived from the original's key, never one the input chooses "
            "(at most once)"
        ),
        _t("temporal/compensate_input", "temporal/outsider"),
    ),
    AuditMutant(
        "M09",
        "duragent/_activities/tools.py",
        (
            "if recorded is None or (recorded.call.name, recorded.call.arguments) != (step.call.name, "
            "step.call.arguments):"
        ),
        "if recorded is None:",
        "an undo whose tool/arguments differ from the call the run recorded is refused",
        _t("temporal/compensate_input", "temporal/outsider", "temporal/saga"),
        equivalent=(
            "compensate acts with the call and options the run recorded, never the step's; and the step an "
            "agents' run schedules is planned from that same record, so its tool and arguments are the "
            "record's. Only a crafted input could differ, and the caller check refuses those first (called "
            "directly, past that check, the mutant would undo the recorded call where HEAD refuses)"
        ),
    ),
    AuditMutant(
        "M10",
        "duragent/_activities/tools.py",
        "latest = activity.info().workflow_run_id if owner == run_id else (await describe(owner)).run_id",
        "latest = activity.info().workflow_run_id",
        "a delegated run's recorded call is read from THAT run's history (its latest execution), not the caller's",
        _t("temporal/delegation"),
    ),
    AuditMutant(
        "M11",
        "duragent/_activities/recorded.py",
        'run_id = started.continued_execution_run_id if started is not None else ""',
        'run_id = ""',
        "the record a compensation checks is found back along the run's continue-as-new chain",
        _t("temporal/long_runs", "temporal/saga"),
    ),
    AuditMutant(
        "M12",
        "duragent/_activities/describe.py",
        "if description.status != WorkflowExecutionStatus.CONTINUED_AS_NEW:",
        "if False:",
        "a continuation's predecessor must have CONTINUED AS NEW (by the server) to hand over carry",
        _t("temporal/handover"),
        equivalent=(
            "the second layer of one rule (carry only from a real continue-as-new): the cron and retry checks "
            "refuse first, a client cannot set continued_execution_run_id, and a stranger's handover is refused "
            "by agent_run_execution first"
        ),
    ),
    AuditMutant(
        "M13",
        "duragent/_workflows/agent.py",
        "if input.carry is not None and info.cron_schedule:",
        "if False:",
        "a cron run is never handed a carry",
        _t("temporal/handover"),
    ),
    AuditMutant(
        "M14",
        "duragent/_workflows/agent.py",
        "if delegation is not None and (info.parent is None or info.parent.workflow_id != claimed):",
        "if delegation is not None and info.parent is None:",
        (
            "a run claiming to be delegated by run P must have been started by P (the server's parent link), not "
            "by any parent"
        ),
        _t("temporal/handover"),
    ),
    AuditMutant(
        "M15",
        "duragent/_workflows/agent.py",
        "if self.spec is None or (checked and input.carry is not None):",
        "if self.spec is None:",
        "a continuation asks the worker again for its spec and approver keys (never trusts carry's)",
        _t("temporal/handover"),
    ),
    AuditMutant(
        "M16",
        "duragent/_workflows/agent.py",
        "listed = {name: tool for name, tool in carried.tools.items() if tool.mcp is not None}",
        "listed = dict(carried.tools)",
        (
            "from carry a continuation keeps only the MCP tools listed at start; every other tool's flags come "
            "from the worker"
        ),
        _t("temporal/handover"),
    ),
    AuditMutant(
        "M17",
        "duragent/_workflows/agent.py",
        "or (before_wait and info.is_target_worker_deployment_version_changed())",
        "or False",
        "before a wait for a human, a run hands over when the deployment has a new current build (Worker Versioning)",
        _t("ops/deploy"),
    ),
    AuditMutant(
        "M18",
        "duragent/_workflows/agent.py",
        "workflow.ContinueAsNewVersioningBehavior.AUTO_UPGRADE if build and build.deployment_name else None",
        "None",
        (
            "a versioned run's continuation starts on the deployment's current build (AUTO_UPGRADE), not pinned "
            "to the old one"
        ),
        _t("ops/deploy"),
    ),
    AuditMutant(
        "M19",
        "duragent/_workflows/visibility.py",
        "                updates = by_steps",
        "                pass",
        "runs recorded before progress-by-time replay with the old every-5-steps rule (workflow.patched)",
        _t("temporal/replay"),
    ),
    AuditMutant(
        "M20",
        "duragent/_workflows/visibility.py",
        "if changed or charged or self.progress_at is None:",
        "if changed or self.progress_at is None:",
        (
            "a delegated child's consumption charged to the parent is published at once, not after the next 2 s "
            "of the activities' work"
        ),
        _t("temporal/delegation", "temporal/visibility_writes"),
    ),
    AuditMutant(
        "M21",
        "agentic/approvals.py",
        'self.pending = {uid: p.model_copy(update={"execution": execution}) for uid, p in self.pending.items()}',
        "pass",
        "requests already open when approver keys arrive are bound to the execution too",
        _t("temporal/gate"),
    ),
    AuditMutant(
        "M22",
        "agentic/approvals.py",
        "if decision.execution != execution or decision.deadline is None:",
        "if decision.execution != execution:",
        "at the effect a signed approval must name the request it answers (its deadline), not only the execution",
        _t("temporal/gate", "agentic/signing_rules"),
    ),
    AuditMutant(
        "M23",
        "agentic/signing.py",
        '        text["execution"] = execution',
        "        pass",
        (
            "the signature covers the execution (a signed decision cannot be moved to another execution by "
            "editing the field)"
        ),
        _t("temporal/gate", "agentic/signing_rules"),
    ),
    AuditMutant(
        "M24",
        "agentic/signing.py",
        '        text["deadline"] = deadline',
        "        pass",
        "the signature covers the deadline of the request it answers",
        _t("temporal/gate", "agentic/signing_rules"),
    ),
    AuditMutant(
        "M25",
        "duragent/_reported.py",
        "return [shown(p) for p in pending if p.run_id == workflow_id]",
        "return [shown(p) for p in pending]",
        "a pending entry is shown only if it names the run that reports it (no decoy entries for another run)",
        _t("temporal/pending_shown", "ops/approvals_shown"),
        equivalent=(
            "every entry an agents' run reports comes from its own book (run_id=self.run_id) or from memo "
            "upserts its own code issued: no run can report another run's entry"
        ),
    ),
    AuditMutant(
        "M26",
        "duragent/_reported.py",
        'run_id = started.continued_execution_run_id if started is not None else ""',
        'run_id = ""',
        "with no worker up, the pending list a run last published is found back along its continue-as-new chain",
        _t("temporal/pending_shown"),
    ),
    AuditMutant(
        "M27",
        "duragent/_sticky.py",
        'STEPPING = ("running", "compensating")',
        'STEPPING = ("running",)',
        "a restarting worker also releases COMPENSATING runs from dead sticky queues",
        _t("temporal/sticky_release"),
    ),
    AuditMutant(
        "M28",
        "duragent/_sticky.py",
        'f" AND ({named} OR AgentStatus IS NULL)" if unlabelled',
        'f" AND {named}" if unlabelled',
        "runs without our search attributes (no AgentStatus) are released too",
        _t("temporal/sticky_release"),
    ),
    AuditMutant(
        "M29",
        "duragent/_workflows/versioned.py",
        "versioning_behavior=VersioningBehavior.PINNED,",
        "versioning_behavior=VersioningBehavior.AUTO_UPGRADE,",
        "an AgentWorkflow run is PINNED to the build it started on",
        _t("temporal/versioned_workflows", "ops/deploy"),
    ),
    AuditMutant(
        "M30",
        "duragent/testing.py",
        '"database_url": None}',
        "}",
        "the testing kit never points a test's worker at a shared database (AGENT_DATABASE_URL) — stores go to scratch",
        _t("temporal/testing_kit"),
    ),
    AuditMutant(
        "M31",
        "duragent/replay.py",
        "if tool.mcp is None and name not in kept",
        "if name not in kept",
        "replay's stranding check ignores MCP tools (the servers', not the agent's registry)",
        _t("temporal/replay_command"),
    ),
    AuditMutant(
        "M32",
        "duragent/_config/secrets.py",
        "if text and path is not None:",
        "if False:",
        "a secret given both as NAME and NAME_FILE is refused (not silently one of them)",
        _t("config/secret_files"),
    ),
    AuditMutant(
        "M33",
        "duragent/_ops/devstack/compose_secrets.py",
        "if key_path.exists() or name in known:",
        "if key_path.exists():",
        "make secrets never gives an approver whose public key is already configured a new pair",
        _t("ops/compose_secrets"),
    ),
    AuditMutant(
        "M34",
        "duragent/_ops/http/limits.py",
        "            if received > limit:\n                raise BodyTooLarge(limit)",
        "            if False:\n                raise BodyTooLarge(limit)",
        "a chunked (undeclared-length) body growing past the limit is answered 413",
        _t("ops/codec_endpoint_security", "ops/http_auth"),
    ),
    AuditMutant(
        "M35",
        "duragent/_ops/http/login.py",
        'secure = secure_cookie or request.headers.get("x-forwarded-proto") == "https"',
        "secure = secure_cookie",
        "the session cookie is Secure behind a TLS proxy (X-Forwarded-Proto: https)",
        _t("ops/login", "ops/inbox", "ops/codec_endpoint_security", "ops/http_auth"),
    ),
    AuditMutant(
        "M36",
        "duragent/_activities/webhook.py",
        "problem = resolved_problem(addresses, allow_loopback=self.allow_loopback)",
        "problem = resolved_problem(addresses, allow_loopback=True)",
        "at delivery, a webhook host that RESOLVES to loopback is refused without the operator's opt-in",
        _t("ops/webhook_targets"),
    ),
    AuditMutant(
        "M37",
        "agentic/memory.py",
        'return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word',
        "return word",
        "a PROTECTED key is refused in singular and plural (permission/permissions, privilege, entitlement, scope)",
        _t("agentic/protected_keys"),
    ),
    AuditMutant(
        "M38",
        "duragent/_ops/retention/policy.py",
        (
            'root_id=execution.root_id if execution.root_id not in (None, "", execution.id, execution.parent_id) '
            "else None,"
        ),
        "root_id=None,",
        "a closed grandchild is not pruned while its ROOT run is still open",
        _t("ops/prune"),
    ),
    AuditMutant(
        "M39",
        "duragent/_ops/retention/run_record.py",
        'for name in ("completed", "failed", "timed_out"):',
        'for name in ("completed",):',
        "prune skips an id the server continues by RETRY (failed/timed-out with a new execution), not only by cron",
        _t("ops/prune_chains", "ops/prune"),
        equivalent=(
            "the retry chain's first execution still ends as ServerChain: reading its result raises "
            "WorkflowContinuedAsNewError (run_record's second guard); either guard alone skips the chain"
        ),
    ),
    AuditMutant(
        "M40",
        "duragent/_activities/transcripts.py",
        'return item if ref is None else item.model_copy(update={"content": content, "content_ref": ref})',
        "return item",
        "content over the threshold travels as a preview + ref (claim check), never whole in history",
        _t("temporal/long_runs", "temporal/engine_options"),
    ),
]
