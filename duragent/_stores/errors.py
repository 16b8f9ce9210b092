"""The one error a shared store raises when its database cannot be reached (here, without importing a driver,
so callers can catch it whether or not PostgreSQL is in use)."""


class StoreUnavailable(RuntimeError):
    """The database did not answer (down, restarting, unreachable, out of connections). Retry later: an
    activity that meets it fails retryably, and the store reconnects by itself once the server is back."""
