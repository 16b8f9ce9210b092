"""Mutation audit 5: the rules this round added — results sealed and gates taken only from the worker's own
records (run_tool, compensate), the masking's place among the interceptors, the live stream's batches and what a
run carries across continue-as-new, the merged event stream's last progress frames, and the throughput goals
judged on an interval. Each mutant was seen caught before it was catalogued."""

from __future__ import annotations

from tests.mutants.mutant import AuditMutant, _t

AUDIT_5 = [
    AuditMutant(
        "Q01",
        "duragent/_activities/tools.py",
        "        if not any(_proposes(message.tool_calls, call) for message in messages if message.role == "
        '"assistant"):',
        "        if False:",
        "a tool call acts only if a model reply the agents' workers stored proposed it (keys or not)",
        _t("temporal/rogue_handover", "temporal/rogue_worker"),
    ),
    AuditMutant(
        "Q02",
        "duragent/_activities/tools.py",
        "            if not self.transcripts.holds(receipt(step.original_key, step.result, step.result_ref)):",
        "            if False:",
        "an undo acts only on a result the worker receipted for that call",
        _t("temporal/rogue_worker"),
    ),
    AuditMutant(
        "Q03",
        "duragent/_activities/tools.py",
        "        if not listed or tool.name != call.name:",
        "        if tool.name != call.name:",
        "an MCP call runs only under the flags this worker listed for the run",
        _t("temporal/mcp_listing_records"),
    ),
    AuditMutant(
        "Q04",
        "duragent/_activities/tools.py",
        "        gated = tool.requires_confirmation or server.needs_confirmation(tool.mcp.tool, destructive=False)",
        "        gated = tool.requires_confirmation",
        "the agent's own rule for a server gates a listed tool, whatever the listing said",
        _t("temporal/mcp_listing_records"),
    ),
    AuditMutant(
        "Q05",
        "duragent/_activities/result_seal.py",
        "    return None if keys.verifies(seal, text) else \"its seal is not the agents' workers'\"",
        "    return None",
        "a result counts only under a seal of the agents' workers' keys",
        _t("temporal/worker_key_rotation", "temporal/rogue_answers"),
    ),
    AuditMutant(
        "Q06",
        "duragent/_sealed_results.py",
        "        if seal_on(payload) is None and unsealed_allowed():",
        "        if seal_on(payload) is None:",
        "an unsealed result counts only where the run's own history says it predates sealing",
        _t("temporal/rogue_answers"),
    ),
    AuditMutant(
        "Q07",
        "duragent/_plugin.py",
        "        return [*sealing, *own, *missing, *scrubbing]",
        "        return [*sealing, *scrubbing, *own, *missing]",
        "the masking of secrets is innermost: no interceptor (tracing's spans) sees a secret before it",
        _t("temporal/secret_spans"),
    ),
    AuditMutant(
        "Q08",
        "duragent/_activities/live.py",
        "            due = now - self._sent_at >= self._wait or self._chars >= self.batch_chars",
        "            due = True",
        "a model's deltas go to the live stream in batches by the schedule, never one per delta",
        _t("temporal/live_stream"),
    ),
    AuditMutant(
        "Q09",
        "duragent/_workflows/agent.py",
        "            live=self.live.handover(LIVE_CARRY_BYTES if self.input.stream else 0),",
        "            live=self.live.handover(LIVE_CARRY_BYTES),",
        "a run that does not stream carries only its live offsets across continue-as-new (its history stays bounded)",
        _t("bench/bench_history"),
    ),
    AuditMutant(
        "Q10",
        "bench/stats.py",
        "        return True if low >= goal else False if high < goal else None",
        "        return True if (low + high) / 2 >= goal else False",
        "a goal is met only when its whole interval is, and undecided while the interval straddles it",
        _t("bench/stats"),
    ),
    AuditMutant(
        "Q11",
        "duragent/_activities/child_result.py",
        "    if keys is not None:",
        "    if False:",
        "a delegated run's or a turn's result read by an activity counts only under the agents' workers' seal",
        _t("temporal/rogue_children"),
    ),
    AuditMutant(
        "Q12",
        "duragent/_sealing.py",
        "            if arg.delegation is None and arg.history_ref is None:",
        "            if arg.delegation is None:",
        "a run started from a conversation's transcript (`history_ref`) starts only under the agents' workers' seal",
        _t("temporal/rogue_children"),
    ),
    AuditMutant(
        "Q13",
        "duragent/_sealing.py",
        "        if isinstance(arg, AgentInput | ConversationInput) and not workflow.unsafe.is_replaying():",
        "        if isinstance(arg, AgentInput) and not workflow.unsafe.is_replaying():",
        "a conversation's continuation takes its `carry` only from a continue-as-new the agents' workers sealed",
        _t("temporal/rogue_children"),
    ),
    AuditMutant(
        "Q14",
        "duragent/_activities/transcripts.py",
        "    if not owners or run_id in owners or UNOWNED in owners:",
        "    if True:",
        "a run reads only a transcript written for it (a model call, a tool call's proposal check), keys or not",
        _t("temporal/rogue_worker", "temporal/rogue_children"),
    ),
    AuditMutant(
        "Q15",
        "duragent/_activities/transcripts.py",
        '    if conversation is not None and any(owner.startswith(f"{conversation}{TURN}") for owner in owners):',
        "    if TURN in run_id and any(owner.startswith(run_id.rsplit(TURN, 1)[0] + TURN) for owner in owners):",
        "a turn reads its conversation's transcript only once the server's parent link says it is that one's turn",
        _t("temporal/rogue_worker", "temporal/rogue_children"),
    ),
    AuditMutant(
        "Q16",
        "duragent/_activities/turn_parents.py",
        "        conversation = named if parent == named else None",
        "        conversation = named",
        "a run's id names a conversation; only its parent link makes it that conversation's turn",
        _t("temporal/rogue_worker"),
    ),
]
