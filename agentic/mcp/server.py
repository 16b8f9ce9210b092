"""`MCPServer`: how an agent reaches one MCP server — a command over stdio, or a URL over streamable HTTP —
and the agent's rules for its tools (which are exposed, which need a human's approval, how long a call
may take).

It is worker-side configuration, like a tool's `deps`: the URL and the credentials are resolved from the
worker's environment when a connection opens (`url_env=`, `token_env=`, `headers_env=`), so they never
enter a run's input, its history, or an error message.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypedDict, Unpack
from urllib.parse import urlsplit

from agentic.errors import AgenticError

# The prefix joins the server's name to its tools' names: `files__read`.
SEPARATOR = "__"
_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_)){0,31}$")

Patterns = bool | str | Sequence[str]


class Rules(TypedDict, total=False):
    """The agent's rules for a server's tools, the same for either transport (see the fields below)."""

    requires_confirmation: Patterns | None
    trusted_read_only: Sequence[str] | None
    tools: Sequence[str] | None
    timeout: float | None
    connect_timeout: float


class MCPToolsError(AgenticError):
    """Tools from an MCP server cannot be had."""


class MCPUnavailable(MCPToolsError):
    """The server could not be reached or did not answer: worth a few more tries, then the run fails."""


class MCPConfigError(MCPToolsError, ValueError):
    """The agent's MCP configuration cannot work (a variable unset, a command missing, a tool name a model
    cannot take, credentials refused): retrying cannot fix it."""


@dataclass(frozen=True)
class MCPServer:
    name: str
    """The prefix of its tools' names (`files` → `files__read`): letters, digits, '-', single '_'."""
    transport: Literal["stdio", "http"]
    command: tuple[str, ...] = ()
    """stdio: the program and its arguments, started for each connection."""
    env: Mapping[str, str] = field(default_factory=dict)
    """stdio: variables for the server process (besides PATH, HOME and the like, which it inherits)."""
    env_from: tuple[str, ...] = ()
    """stdio: names of the worker's variables handed to the server process as they are (its secrets)."""
    cwd: str | None = None
    url: str | None = None
    """http: the endpoint, e.g. http://127.0.0.1:8000/mcp."""
    url_env: str | None = None
    """http: the worker's variable holding the endpoint (instead of `url`)."""
    token_env: str | None = None
    """http: the worker's variable holding a bearer token, sent as `Authorization: Bearer ...`."""
    headers: Mapping[str, str] = field(default_factory=dict)
    headers_env: Mapping[str, str] = field(default_factory=dict)
    """http: header name → the worker's variable holding its value."""
    requires_confirmation: Patterns | None = None
    """Which tools wait for a human's approval: None (default) every destructive one; True all; False none;
    a name or glob pattern, or a list of them, matched against the server's tool names (`delete_*`). With
    `trusted_read_only`, every tool not listed there waits too."""
    trusted_read_only: Sequence[str] | None = None
    """Names or glob patterns of the tools this agent trusts to be read-only. None (default): the server's
    annotations say (its claim; `destructiveHint` wins over `readOnlyHint`). Given: only these are
    read-only, and every other tool of the server waits for approval, whatever it claims."""
    tools: Sequence[str] | None = None
    """Names or glob patterns of the tools to expose; None: all the server lists."""
    timeout: float | None = None
    """Seconds a call may take (None: the runner's tool timeout)."""
    connect_timeout: float = 30.0
    """Seconds to connect and list the tools when a run starts."""

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise MCPConfigError(
                f"MCP server name {self.name!r}: use 1-32 letters, digits, '-' or single '_', "
                "starting with a letter or digit (it prefixes its tools' names)"
            )
        if self.transport == "stdio" and not self.command:
            raise MCPConfigError(f"MCP server {self.name!r}: a stdio server needs a command")
        if self.transport == "http" and (self.url is None) == (self.url_env is None):
            raise MCPConfigError(f"MCP server {self.name!r}: give exactly one of url= and url_env=")
        if (self.timeout is not None and self.timeout <= 0) or self.connect_timeout <= 0:
            raise MCPConfigError(f"MCP server {self.name!r}: timeouts must be positive")
        if self.trusted_read_only is not None:
            if isinstance(self.trusted_read_only, str):
                raise MCPConfigError(f"MCP server {self.name!r}: trusted_read_only takes a list of tool names")
            if self.requires_confirmation is False:
                raise MCPConfigError(
                    f"MCP server {self.name!r}: requires_confirmation=False contradicts trusted_read_only, "
                    "under which every tool not listed waits for approval"
                )
            object.__setattr__(self, "trusted_read_only", tuple(self.trusted_read_only))
        object.__setattr__(self, "command", tuple(self.command))
        object.__setattr__(self, "env_from", tuple(self.env_from))

    @classmethod
    def stdio(
        cls,
        name: str,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        env_from: Sequence[str] = (),
        cwd: str | None = None,
        **rules: Unpack[Rules],
    ) -> MCPServer:
        """A server the worker starts as a subprocess and talks to over its stdin/stdout."""
        return cls(
            name, "stdio", command=tuple(command), env=dict(env or {}), env_from=tuple(env_from), cwd=cwd, **rules
        )

    @classmethod
    def http(
        cls,
        name: str,
        url: str | None = None,
        *,
        url_env: str | None = None,
        token_env: str | None = None,
        headers: Mapping[str, str] | None = None,
        headers_env: Mapping[str, str] | None = None,
        **rules: Unpack[Rules],
    ) -> MCPServer:
        """A server reached over streamable HTTP."""
        return cls(
            name,
            "http",
            url=url,
            url_env=url_env,
            token_env=token_env,
            headers=dict(headers or {}),
            headers_env=dict(headers_env or {}),
            **rules,
        )

    # -- the agent's rules for this server's tools ---------------------------------------------------

    def exposes(self, tool: str) -> bool:
        return self.tools is None or _matches(tool, self.tools)

    def trusts_read_only(self, tool: str) -> bool:
        return self.trusted_read_only is not None and _matches(tool, self.trusted_read_only)

    def needs_confirmation(self, tool: str, destructive: bool) -> bool:
        if self.trusted_read_only is not None and not self.trusts_read_only(tool):
            return True  # the agent trusts the tools it listed, and no claim of the server's
        rule = self.requires_confirmation
        if rule is None:
            return destructive
        if isinstance(rule, bool):
            return rule
        return _matches(tool, [rule] if isinstance(rule, str) else rule)

    # -- resolved on the worker, when a connection opens -------------------------------------------

    def resolve_url(self) -> str:
        return self.url if self.url is not None else self._variable(self.url_env or "", "its URL")

    def resolve_headers(self) -> dict[str, str]:
        headers = dict(self.headers)
        for header, variable in self.headers_env.items():
            headers[header] = self._variable(variable, f"header {header}")
        if self.token_env:
            headers["Authorization"] = f"Bearer {self._variable(self.token_env, 'its token')}"
        return headers

    def resolve_env(self) -> dict[str, str]:
        return dict(self.env) | {variable: self._variable(variable, "its environment") for variable in self.env_from}

    def where(self) -> str:
        """The server, for error messages: never a credential (no userinfo, no query string)."""
        if self.transport == "stdio":
            return "stdio: " + " ".join(self.command)
        if self.url is None:
            url = os.environ.get(self.url_env or "", "")
            return f"{_safe(url)} (${self.url_env})" if url else f"${self.url_env}"
        return _safe(self.url)

    def _variable(self, name: str, what: str) -> str:
        value = os.environ.get(name, "").strip()
        if not value:
            raise MCPConfigError(f"MCP server {self.name!r}: {what} comes from ${name}, not set on this worker")
        return value


def _matches(tool: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(tool, pattern) for pattern in patterns)


def _safe(url: str) -> str:
    try:
        parts = urlsplit(url)
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(an unparsable URL)"
    return f"{parts.scheme}://{parts.hostname or ''}{port}{parts.path}" if parts.scheme else "(an unparsable URL)"
