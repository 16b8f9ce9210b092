"""Running the engine: settings, the connection to Temporal, the embedded dev server, worker processes,
observability, payload encryption (`duragent._config.codec`) and the command line (`duragent._ops.cli`).

Nothing here decides anything about an agent run; the engine (`agentic`, `workflows`, `activities`) does.
"""
