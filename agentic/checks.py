"""Output and argument checks (guardrails): functions an agent declares that look at its final answer or at a
tool call's arguments, and pass (return None), send the model back with a reason (`SendBack`), or refuse
(`Refuse`: the run stops with `Stop.CHECK_REFUSED`).

Checks are judged where the model's reply arrives — in-process right after the model call, in the checkpoint
runner before the reply is checkpointed, on Temporal in the model activity — and their verdicts travel with
the reply (`ModelReply.verdicts`), so they are recorded with it (history, the checkpoint row) and a replay or a
resume reads them instead of running the checks again. The loop only reads verdicts. A check should be a pure
function of what it is given; one that does I/O is run again when its model call is retried. A check that
raises refuses (fails closed): a guardrail that cannot say yes says no.

An argument check is judged before anything else happens to the call: a refused or sent-back call is never
offered for approval and never runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentic.models.base import ModelReply
from agentic.output import FINAL_ANSWER, OutputType
from agentic.verdicts import CheckRecord, Verdict, Verdicts

__all__ = ["Check", "CheckRecord", "Refuse", "SendBack", "Verdict", "Verdicts", "judge", "run_checks"]


@dataclass(frozen=True)
class Refuse:
    """A check's no: the run stops (`Stop.CHECK_REFUSED`) with this reason."""

    reason: str


@dataclass(frozen=True)
class SendBack:
    """A check's "try again": the model reads the reason and may answer again (bounded by `output_retries`)."""

    reason: str


Check = Callable[[Any], Refuse | SendBack | None]
"""An output check gets the answer (the typed value, or the text of a plain agent); an argument check gets the
call's arguments (a dict)."""


def name_of(check: Check) -> str:
    return getattr(check, "__name__", None) or type(check).__name__


def run_checks(checks: Sequence[Check], value: Any) -> Verdict:
    """The first check that does not pass decides; all passing, the verdict is ok."""
    passed: list[str] = []
    for check in checks:
        try:
            said = check(value)
        except Exception as exc:  # a check that cannot decide refuses: a guardrail fails closed
            return Verdict(outcome="refuse", check=name_of(check), reason=f"the check failed: {exc!r}"[:500])
        if isinstance(said, Refuse):
            return Verdict(outcome="refuse", check=name_of(check), reason=said.reason, checks=passed)
        if isinstance(said, SendBack):
            return Verdict(outcome="send_back", check=name_of(check), reason=said.reason, checks=passed)
        passed.append(name_of(check))
    return Verdict(checks=passed)


def judge_answer(output: OutputType | None, checks: Sequence[Check], raw: Any, *, text: bool) -> Verdict:
    """An answer: validated with the output type (a `final_answer` call's arguments, or a text reply), then
    checked; ok carries the answer as the run keeps it."""
    if output is None:
        answer = raw if isinstance(raw, str) else ""
        value: Any = answer
    else:
        answer_or_none, problems = output.from_text(raw) if text else output.from_arguments(raw)
        if answer_or_none is None:
            return Verdict(outcome="invalid", reason=problems)
        answer = answer_or_none
        value = output.load(answer)
    verdict = run_checks(checks, value)
    return verdict.model_copy(update={"answer": answer}) if verdict.outcome == "ok" else verdict


def judge(
    reply: ModelReply,
    output: OutputType | None,
    output_checks: Sequence[Check] = (),
    argument_checks: Mapping[str, Sequence[Check]] | None = None,
) -> ModelReply:
    """The reply with its verdicts: what a typed agent's answer and its checks say. A reply the loop refuses
    whole (over its limits) is not judged; nor is anything when the agent has no type and no checks (its
    reply, and so every payload it makes, stays as it always was)."""
    argument_checks = argument_checks or {}
    if reply.verdicts is not None:
        # Verdicts are this function's alone: a model (or a model class) that hands some back is not believed.
        reply = reply.model_copy(update={"verdicts": None})
    if reply.refused is not None or (output is None and not output_checks and not argument_checks):
        return reply
    message = reply.message
    verdicts = Verdicts()
    if not message.tool_calls:
        if output is not None or output_checks:
            verdicts = Verdicts(answer=judge_answer(output, output_checks, message.content, text=True))
    else:
        calls: dict[int, Verdict] = {}
        for position, call in enumerate(message.tool_calls, 1):
            if call.name == FINAL_ANSWER and output is not None:
                calls[position] = judge_answer(output, output_checks, call.arguments, text=False)
            elif argument_checks.get(call.name):
                arguments = call.arguments if isinstance(call.arguments, dict) else {}
                if isinstance(call.arguments, str):
                    continue  # not JSON: the call is answered with that, never reaching its checks
                calls[position] = run_checks(argument_checks[call.name], arguments)
        verdicts = Verdicts(calls=calls)
    if verdicts == Verdicts():
        return reply
    return reply.model_copy(update={"verdicts": verdicts})
