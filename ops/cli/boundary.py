"""The one error boundary of every command line (`starter.py`, `job`): a known error is one line on stderr
and a documented exit code; anything else is one line too, plus how to see the traceback (`--debug`).

Exit codes: 0 done; 1 the operation failed (a run failed, Temporal unreachable, a decision rejected...);
2 bad input (a flag, an option, an unknown agent or run id); 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from agentic.agent import InvalidOptions
from agentic.signing import ApproverKeyError
from ops.agent_modules import AgentModuleError, UnknownAgentName
from ops.cli.output import CliError, fail, printable
from ops.cli.run_options import RunOptionError
from workflows.errors import AgentClientError, AmbiguousApproval, NoPendingApproval

BAD_INPUT = (RunOptionError, InvalidOptions, AgentModuleError, UnknownAgentName, AmbiguousApproval, ApproverKeyError)


def run_command(handler: Callable[..., Any], *args: Any, debug: bool = False) -> int:
    try:
        outcome = handler(*args)
        if isinstance(outcome, Awaitable):
            outcome = asyncio.run(outcome)  # type: ignore[arg-type]
        return int(outcome)  # type: ignore[call-overload]
    except KeyboardInterrupt:
        return 130
    except CliError as exc:
        fail(printable(str(exc)))
        return exc.code
    except BAD_INPUT as exc:
        if debug:
            raise
        fail(printable(str(exc)))
        return 2
    except (AgentClientError, NoPendingApproval) as exc:
        if debug:
            raise
        fail(printable(str(exc)))
        return 1
    except Exception as exc:
        if debug:
            raise
        fail(printable(f"unexpected {type(exc).__name__}: {exc} (run with --debug for the traceback)"))
        return 1
