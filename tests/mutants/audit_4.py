"""Mutation audit 4 (../shared/reviews/mutation-audit-4.md, mutants-4.json, at 7627c49): the rules added for the
rogue worker (seals), the MCP schema check, credential masking, the runs API's connection slots, progress by
work, the rejection caps, prune's queue filter, SQLite's disk faults and the extras. The paths are today's
(`duragent/_...`); P13 is rewritten for the checks' own thread pool (the line it mutated is gone). Each survivor
of the audit has a behavioural test now, named first in its tests."""

from __future__ import annotations

from tests.mutants.mutant import AuditMutant, _t

AUDIT_4 = [
    AuditMutant(
        "P01",
        "duragent/_sealing.py",
        "    return sealed_text(what, name, workflow_id, run_id, target, to_jsonable_python(list(args)))",
        "    return sealed_text(what, name, workflow_id, run_id, target, [])",
        (
            "a seal covers the schedule's whole input: a seal copied from a run's history does not open the "
            "same activity with other arguments"
        ),
        _t("config/seal_binding"),
    ),
    AuditMutant(
        "P02",
        "duragent/_sealing.py",
        "    return sealed_text(what, name, workflow_id, run_id, target, to_jsonable_python(list(args)))",
        '    return sealed_text(what, name, workflow_id, "", target, to_jsonable_python(list(args)))',
        (
            "a seal binds the execution (run id) that scheduled it: a seal copied from another execution of "
            "the same workflow id does not open"
        ),
        _t("config/seal_binding"),
    ),
    AuditMutant(
        "P03",
        "duragent/_sealing.py",
        "        if not self.keys.verifies(_seal_of(input.headers), text):",
        "        if _seal_of(input.headers) is not None and not self.keys.verifies(_seal_of(input.headers), text):",
        "with worker keys configured, an activity whose schedule carries no seal is refused (not only a wrong seal)",
        _t("temporal/rogue_worker"),
    ),
    AuditMutant(
        "P04",
        "duragent/_sealing.py",
        "        elif isinstance(arg, AgentInput) and info.parent is not None:",
        "        elif False:",
        (
            "a child run claiming a place in a delegation tree is refused unless its start was sealed by the "
            "parent's workers"
        ),
        _t("temporal/rogue_handover"),
    ),
    AuditMutant(
        "P05",
        "duragent/_sealing.py",
        "        if isinstance(arg, AgentInput | ConversationInput) and not workflow.unsafe.is_replaying():",
        "        if isinstance(arg, AgentInput | ConversationInput):",
        "the start check runs live only: a replay never checks a seal (recorded histories replay under rotated keys)",
        _t("temporal/worker_key_rotation"),
    ),
    AuditMutant(
        "P06",
        "duragent/_config/worker_keys.py",
        '        return any(hmac.compare_digest(given, _mac(key, text).encode("ascii")) for key in self.keys)',
        '        return hmac.compare_digest(given, _mac(self.keys[0], text).encode("ascii"))',
        "every listed key verifies (rotation: what the old key sealed still runs while it is listed)",
        _t("temporal/worker_key_rotation"),
    ),
    AuditMutant(
        "P07",
        "duragent/_config/worker_keys.py",
        "        return _mac(self.keys[0], text)",
        "        return _mac(self.keys[-1], text)",
        "rotation order: the FIRST key signs",
        _t("config/worker_keys"),
    ),
    AuditMutant(
        "P08",
        "duragent/_config/worker_keys.py",
        (
            "        if settings.worker_keys_file is not None:\n"
            '            raise WorkerKeyError(f"{where} holds no worker key")'
        ),
        '        if False:\n            raise WorkerKeyError(f"{where} holds no worker key")',
        "a key file that is named but holds no key is an error: sealing is never silently off",
        _t("config/worker_keys"),
    ),
    AuditMutant(
        "P09",
        "duragent/_plugin.py",
        "        return self.worker_keys if self.worker_keys is not None else load_worker_keys(settings)",
        "        return self.worker_keys",
        (
            "a worker's plugin (build_worker's too) takes the worker keys from its settings (AGENT_WORKER_KEYS) "
            "when none are passed: a program's own worker seals too"
        ),
        _t("temporal/rogue_worker"),
    ),
    AuditMutant(
        "P10",
        "agentic/mcp/schema_check.py",
        '        if keyword == "$schema":',
        '        if keyword == "$schema" and value != schema.get("$schema"):',
        (
            "any nested $schema is refused at listing, even one naming the root's own dialect (jsonschema "
            "checks it with its stock validator, on `re`)"
        ),
        _t("agentic/mcp_schema_check"),
    ),
    AuditMutant(
        "P11",
        "agentic/mcp/schema_check.py",
        "    return extend(base, {keyword: _in_time(check) for keyword, check in checks.items()})",
        "    return extend(base, {keyword: _in_time(check) for keyword, check in ours.items()})",
        (
            "EVERY keyword checks the deadline (anyOf/$ref combinations are cut off at CHECK_SECONDS), not "
            "only the regex/uniqueItems ones"
        ),
        _t("agentic/mcp_schema_check"),
    ),
    AuditMutant(
        "P12",
        "agentic/mcp/schema_check.py",
        "    return _compiled(pattern).search(text) is not None",
        "    return _compiled(pattern).fullmatch(text) is not None",
        "pattern/patternProperties keep JSON Schema's meaning on RE2: unanchored search, not a full match",
        _t("agentic/mcp_schema_check"),
    ),
    AuditMutant(
        "P13",
        "agentic/mcp/toolset.py",
        "        submitted = _pool().submit(checked_arguments, spec, call)",
        "        submitted = asyncio.get_running_loop().run_in_executor(None, checked_arguments, spec, call)",
        (
            "arguments are checked off the event loop, in the checks' own threads: never in the threads model "
            "and tool calls use"
        ),
        _t("agentic/mcp_schema_check"),
    ),
    AuditMutant(
        "P14",
        "agentic/mcp/toolset.py",
        '    destructive = hints.get("destructiveHint") is True or (',
        "    destructive = (",
        "destructiveHint: true wins over readOnlyHint: true (contradictory hints take the safe side)",
        _t("temporal/mcp_hostile"),
    ),
    AuditMutant(
        "P15",
        "duragent/_activities/model.py",
        '        return self.credentials.plus(getattr(model, "credentials", ()))(text)',
        "        return self.credentials(text)",
        (
            "call_model masks the model's OWN credentials (a key given to the model object, not in the "
            "settings) as well as the worker's"
        ),
        _t("config/provider_errors"),
    ),
    AuditMutant(
        "P16",
        "duragent/_activities/model.py",
        "            if (text := self._hidden(model, str(exc))) == str(exc):\n                raise",
        "            if (text := self._hidden(model, str(exc))) or True:\n                raise",
        "a user model's non-ModelError exception quoting a secret is masked before it becomes the activity failure",
        _t("config/provider_errors"),
    ),
    AuditMutant(
        "P17",
        "duragent/_activities/model.py",
        (
            "                raise ApplicationError(\n"
            "                    text, type=exc.type, non_retryable=exc.non_retryable, "
            "next_retry_delay=exc.next_retry_delay\n"
            "                ) from None"
        ),
        "                raise ApplicationError(text, type=type(exc).__name__) from None",
        (
            "a user model's own ApplicationError keeps its classification (type, non_retryable, "
            "next_retry_delay) when its text is masked"
        ),
        _t("config/provider_errors"),
    ),
    AuditMutant(
        "P18",
        "agentic/models/openai_chat.py",
        "            err.args = tuple(self._hide(a) if isinstance(a, str) else a for a in err.args)",
        "            pass",
        (
            "the OpenAI adapter masks its own key in every error it raises (usable in-process, without a "
            "worker's call_model)"
        ),
        _t("agentic/openai_adapter"),
    ),
    AuditMutant(
        "P19",
        "duragent/_ops/http/origin.py",
        '    return host in (f"{name}:{port}", name if port == _DEFAULT_PORTS[parts.scheme] else "")',
        '    return host in (f"{name}:{port}", name)',
        (
            "a Host without a port is the scheme's default port: an Origin naming another port of the same "
            "host is cross-origin"
        ),
        _t("ops/login"),
    ),
    AuditMutant(
        "P20",
        "duragent/_ops/http/connections.py",
        "STRANGER_GRACE = 1.0",
        "STRANGER_GRACE = 0.0",
        (
            "a new connection has STRANGER_GRACE to send its request before it counts in the strangers' share "
            "(a burst of honest connections is answered)"
        ),
        _t("ops/connection_slots"),
    ),
    AuditMutant(
        "P21",
        "duragent/_ops/http/connections.py",
        "        for _ in range(len(strangers) - int(most * UNAUTHENTICATED_SHARE)):",
        "        for _ in range(len(strangers) - most):",
        (
            "past their grace, unauthenticated connections hold at most UNAUTHENTICATED_SHARE of the slots "
            "(the rest are closed)"
        ),
        _t("ops/codec_endpoint_security"),
    ),
    AuditMutant(
        "P22",
        "duragent/_ops/http/auth.py",
        "        if principal is not ANONYMOUS:\n            vouch(request.scope)",
        "        if principal is not ANONYMOUS:\n            pass",
        "an authenticated request vouches for its connection: no stranger's newcomer takes its slot",
        _t("ops/codec_endpoint_security"),
    ),
    AuditMutant(
        "P23",
        "duragent/_ops/http/streams.py",
        "            if self._held[who.name] >= self.per_principal:",
        "            if self._held[who.name] > self.per_principal:",
        "at most MAX_STREAMS_PER_PRINCIPAL (4) event streams per identity; the next is 429",
        _t("ops/connection_slots"),
    ),
    AuditMutant(
        "P24",
        "duragent/_ops/http/streams.py",
        (
            "        try:\n"
            "            await super().__call__(scope, receive, send)\n"
            "        finally:\n"
            "            self.give_back()"
        ),
        "        await super().__call__(scope, receive, send)\n        self.give_back()",
        "a stream's slot is given back however it ends (the client leaving, an error), not only at a normal end",
        _t("ops/stream_slots"),
    ),
    AuditMutant(
        "P25",
        "duragent/_workflows/visibility.py",
        "            self.progress_at, self.worked = now, timedelta()",
        "            self.progress_at = now",
        "by work: the work counted is what was done SINCE progress was last published (reset at each publish)",
        _t("temporal/replay", "temporal/visibility_writes"),
    ),
    AuditMutant(
        "P26",
        "duragent/_workflows/agent.py",
        "        self.publish.add_work(reply.worked_ms)\n",
        "",
        "a model activity's work counts towards publishing progress (a slow model step shows at once)",
        _t("temporal/visibility_writes"),
    ),
    AuditMutant(
        "P27",
        "duragent/_workflows/agent.py",
        (
            '            self.publish.rule = "work" if spec.progress_by_work else "time" if '
            "spec.progress_by_time else None"
        ),
        (
            '            self.publish.rule = "time" if spec.progress_by_time else "work" if '
            "spec.progress_by_work else None"
        ),
        "a run whose start record names progress_by_work publishes by work (today's records name both flags)",
        _t("temporal/visibility_writes"),
    ),
    AuditMutant(
        "P28",
        "duragent/_workflows/visibility.py",
        '        elif self.rule == "work":',
        '        elif self.rule != "time":',
        "a run whose record predates both rules follows time vs steps (asking the patch), not the work rule",
        _t("temporal/visibility_writes"),
    ),
    AuditMutant(
        "P29",
        "duragent/_activities/worked.py",
        '    return step.model_copy(update={"worked_ms": round((time.monotonic() - started) * 1000)})',
        '    return step.model_copy(update={"worked_ms": round(time.monotonic() - started)})',
        "worked_ms is milliseconds of the activity's own work",
        _t("temporal/visibility_writes"),
    ),
    AuditMutant(
        "P30",
        "agentic/approvals.py",
        "        if same >= REJECTED_PER_CALL or len(rejected) >= REJECTED_KEPT:",
        "        if same >= REJECTED_PER_CALL:",
        "rejected decisions are kept at most REJECTED_KEPT in all (not only REJECTED_PER_CALL per call)",
        _t("agentic/decision_bounds"),
    ),
    AuditMutant(
        "P31",
        "agentic/approvals.py",
        "        self._audit_rejected(UNREADABLE, entry)",
        "        self.audit.append(entry)",
        (
            "unreadable decisions count toward the rejection caps (a flood of unreadable signals does not grow "
            "the audit without end)"
        ),
        _t("agentic/decision_bounds"),
    ),
    AuditMutant(
        "P32",
        "duragent/_workflows/agent.py",
        "        book = self.book.bounded() if workflow.patched(DECISION_BOUNDS_PATCH) else self.book",
        "        book = self.book",
        (
            "the book handed to a continuation is bounded (rejections an earlier version audited whole are cut "
            "and capped)"
        ),
        _t("temporal/pre_bounds_handover", "agentic/decision_bounds", "temporal/decision_flood"),
    ),
    AuditMutant(
        "P33",
        "duragent/_workflows/decisions.py",
        "        return workflow.payload_converter().from_payload(payload, Decision)",
        (
            "        return Decision.model_construct(**dict(workflow.payload_converter().from_payload(payload, "
            "_UnboundedDecision)))"
        ),
        "a new run reads a decision with every field bounded: one with an over-long field is unreadable",
        _t("temporal/decision_flood"),
    ),
    AuditMutant(
        "P34",
        "duragent/_ops/retention/run_record.py",
        "    except (ValueError, TypeError, LookupError) as exc:  # pydantic's ValidationError is a ValueError",
        "    except (TypeError, LookupError) as exc:  # pydantic's ValidationError is a ValueError",
        "prune skips a run whose result cannot be decoded as an AgentResult, with its reason, and goes on",
        _t("ops/prune_strangers"),
    ),
    AuditMutant(
        "P35",
        "duragent/_ops/cli/prune.py",
        "            task_queue=settings.task_queue,",
        "            task_queue=None,",
        "`starter.py prune` lists only the agents' task queue (TEMPORAL_TASK_QUEUE)",
        _t("ops/prune_strangers"),
    ),
    AuditMutant(
        "P36",
        "duragent/_ops/retention/policy.py",
        "        if not _queryable(task_queue):",
        "        if False:",
        "a task queue with a quote or backslash is refused, never spliced into the visibility query",
        _t("ops/prune_cli"),
    ),
    AuditMutant(
        "P37",
        "duragent/_stores/disk_faults.py",
        (
            "        problem = _SQLITE_FAULTS.get(code & 0xFF) if code is not None else None  # extended codes "
            "keep the primary"
        ),
        "        problem = _SQLITE_FAULTS.get(code) if code is not None else None  # extended codes keep the primary",
        "extended SQLite result codes (SQLITE_IOERR_WRITE, SQLITE_READONLY_*) are disk faults by their primary code",
        _t("stores/sqlite_error_codes"),
    ),
    AuditMutant(
        "P38",
        "duragent/_stores/disk_faults.py",
        "    except (sqlite3.OperationalError, OSError) as exc:",
        "    except sqlite3.OperationalError as exc:",
        "an OSError of the disk (ENOSPC/EROFS creating the file) is a StoreDiskFault naming the file",
        _t("stores/disk_faults"),
    ),
    AuditMutant(
        "P39",
        "duragent/_stores/sqlite_file.py",
        (
            "            yield db\n"
            "            if db.in_transaction:\n"
            '                db.execute("COMMIT")\n'
            "        except BaseException:\n"
            "            # A failed COMMIT too (a full disk): SQLite may leave the transaction open after one, "
            "and this\n"
            "            # connection is kept for the thread's next write, whose BEGIN would then fail for "
            "ever.\n"
            "            if db.in_transaction:\n"
            "                with contextlib.suppress(sqlite3.Error):  # the first error is the one worth "
            "reporting\n"
            '                    db.execute("ROLLBACK")\n'
            "            raise\n"
        ),
        (
            "            yield db\n"
            "        except BaseException:\n"
            "            if db.in_transaction:\n"
            "                with contextlib.suppress(sqlite3.Error):  # the first error is the one worth "
            "reporting\n"
            '                    db.execute("ROLLBACK")\n'
            "            raise\n"
            "        if db.in_transaction:\n"
            '            db.execute("COMMIT")\n'
        ),
        "a failed COMMIT rolls back (the connection is usable for the next write, nothing half-written)",
        _t("stores/sqlite_error_codes"),
    ),
    AuditMutant(
        "P40",
        "duragent/_baseline/lease.py",
        "            except (sqlite3.OperationalError, StoreUnavailable):",
        "            except sqlite3.OperationalError:",
        "the baseline's lease renewer survives a full disk for a moment (StoreDiskFault) instead of dying",
        _t("stores/disk_fault_runs"),
    ),
    AuditMutant(
        "P41",
        "duragent/_baseline/jobs.py",
        "    except StoreUnavailable:\n        # The store cannot be written",
        "    except ZeroDivisionError:\n        # The store cannot be written",
        "letting go of a run on a disk that cannot be written reports the run's own error, not the let-go's",
        _t("baseline/let_go"),
    ),
    AuditMutant(
        "P42",
        "agentic/extras.py",
        "    if not all(_installed(module) for module in modules):",
        "    if not _installed(modules[0]):",
        (
            "an extra partly installed (mcp present, google-re2 missing) still gives the one-line MissingExtra "
            "naming the extra"
        ),
        _t("packaging/extras"),
    ),
    AuditMutant(
        "P43",
        "duragent/_ops/http/auth.py",
        "    return host in allowed and _PORT.match(rest) is not None",
        "    return host in allowed",
        "whatever follows an allowed host in Host must be a port ('localhost:80@evil' is not localhost)",
        _t("ops/http_auth"),
    ),
]
