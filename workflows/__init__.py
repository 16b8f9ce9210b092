"""Temporal workflow code, deterministic: `AgentWorkflow` (an agent run), its delegated child runs, its
terminal-state notifier (`WebhookWorkflow`), and what it publishes to visibility. Programs import the face,
`duragent`, not this package."""

if __name__ == "workflows":  # 0.1's top-level name, from a source checkout: the same package (CHANGELOG.md)
    from duragent._moved import moved_package

    moved_package(__name__, "duragent.workflows", replace=True)


# 0.1's `from workflows import AgentClient` (and the rest of the face it held then): `duragent` since 0.2.
_MOVED_TO_THE_FACE = frozenset(
    {
        "AgentClient",
        "AgentClientError",
        "AmbiguousApproval",
        "ApprovalRejected",
        "DecisionOutcome",
        "DurableAgentsPlugin",
        "NoPendingApproval",
        "RunAlreadyExists",
        "RunClosed",
        "RunFailed",
        "RunHandle",
        "RunSummary",
        "TemporalUnavailable",
        "UnknownAgent",
        "UnknownRun",
        "WorkerUnavailable",
    }
)


def __getattr__(name: str) -> object:
    if name in _MOVED_TO_THE_FACE:
        from duragent._moved import moved_name

        value = globals()[name] = moved_name("workflows", name, "duragent")  # warned once, then a plain name
        return value
    raise AttributeError(f"module 'duragent.workflows' has no attribute {name!r}")
