"""The one TLS context this process's HTTP clients share.

httpx builds a new TLS context for every client it makes (certifi's CA bundle parsed again): 32 ms of CPU here,
more than a request to a local server costs, paid by every webhook delivery, every health probe of a model
server and every client a test opened. A context may serve any number of clients and threads, so it is built
once, on first use, and verifies exactly as httpx's own default does (certifi's CAs, SSL_CERT_FILE and
SSL_CERT_DIR honoured). Pass it as `verify=tls_context()`.
"""

from __future__ import annotations

import functools
import ssl


@functools.cache
def tls_context() -> ssl.SSLContext:
    # Imported here: httpx also loads its command line's libraries (rich, click, pygments), a fifth of a
    # second at the start of every process that imports this module and never makes a request.
    import httpx

    return httpx.create_ssl_context()
