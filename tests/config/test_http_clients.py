"""duragent/_config/http_clients.py: one TLS context for the process's HTTP clients, verifying as httpx's default
does."""

from __future__ import annotations

import ssl

from duragent._config.http_clients import tls_context


def test_every_client_gets_the_same_context_and_it_verifies_certificates_and_host_names():
    context = tls_context()
    assert tls_context() is context  # built once: a new one parses the CA bundle again (32 ms)
    assert context.verify_mode is ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] > 0  # CAs loaded, not an empty store
