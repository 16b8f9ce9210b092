"""Connecting to a remote cluster: TLS, mTLS and API keys from the environment, mapped onto
`Client.connect(tls=TLSConfig(...), api_key=...)` — and a clear error when TLS meets a plaintext server."""

from __future__ import annotations

import asyncio
import datetime
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from temporalio.service import TLSConfig
from temporalio.testing import WorkflowEnvironment

from duragent._config.connection import ConnectionSettingsError, connect_options, tls_config
from duragent._config.settings import Settings
from duragent._connection import connect
from duragent._errors import TemporalUnavailable

TLS_VARIABLES = (
    "TEMPORAL_ADDRESS",
    "TEMPORAL_NAMESPACE",
    "TEMPORAL_TLS",
    "TEMPORAL_TLS_CLIENT_CERT_PATH",
    "TEMPORAL_TLS_CLIENT_KEY_PATH",
    "TEMPORAL_TLS_SERVER_CA_CERT_PATH",
    "TEMPORAL_TLS_SERVER_NAME",
    "TEMPORAL_API_KEY",
    "TEMPORAL_PROFILE",
    "TEMPORAL_CONFIG_FILE",
    "TEMPORAL_TLS_CERT",
    "TEMPORAL_TLS_KEY",
    "TEMPORAL_TLS_CA",
)


@pytest.fixture(autouse=True)
def no_tls_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in TLS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    # No profile file from this machine's home directory may leak in.
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(tmp_path / "no-such-temporal.toml"))


def self_signed(directory: Path, name: str) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / f"{name}.pem", directory / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


def test_plaintext_by_default() -> None:
    options = connect_options(Settings(address="localhost:7233"))
    assert options["tls"] is False and options["api_key"] is None
    assert options["target_host"] == "localhost:7233" and options["namespace"] == "default"


def test_mtls_from_temporals_standard_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    client_cert, client_key = self_signed(tmp_path, "worker")
    ca, _ = self_signed(tmp_path, "ca")
    monkeypatch.setenv("TEMPORAL_ADDRESS", "agents.a1b2c.tmprl.cloud:7233")
    monkeypatch.setenv("TEMPORAL_NAMESPACE", "agents.a1b2c")
    monkeypatch.setenv("TEMPORAL_TLS_CLIENT_CERT_PATH", str(client_cert))
    monkeypatch.setenv("TEMPORAL_TLS_CLIENT_KEY_PATH", str(client_key))
    monkeypatch.setenv("TEMPORAL_TLS_SERVER_CA_CERT_PATH", str(ca))
    monkeypatch.setenv("TEMPORAL_TLS_SERVER_NAME", "frontend.internal")
    options = connect_options(Settings())
    tls = options["tls"]
    assert isinstance(tls, TLSConfig)
    assert tls.client_cert == client_cert.read_bytes() and tls.client_private_key == client_key.read_bytes()
    assert tls.server_root_ca_cert == ca.read_bytes() and tls.domain == "frontend.internal"
    assert options["target_host"] == "agents.a1b2c.tmprl.cloud:7233" and options["namespace"] == "agents.a1b2c"
    assert options["api_key"] is None


def test_a_toml_profile_is_read_like_the_temporal_cli_reads_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "temporal.toml"
    config.write_text(
        '[profile.default]\naddress = "localhost:7233"\n\n'
        '[profile.prod]\naddress = "prod.example:7233"\nnamespace = "agents-prod"\napi_key = "key-from-toml"\n'
        '[profile.prod.grpc_meta]\nx-team = "agents"\n'
    )
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(config))
    monkeypatch.setenv("TEMPORAL_PROFILE", "prod")
    settings = Settings()
    assert (settings.address, settings.namespace) == ("prod.example:7233", "agents-prod")
    assert "key-from-toml" not in repr(settings)
    options = connect_options(settings)
    assert options["api_key"] == "key-from-toml" and options["tls"] is True  # a key implies TLS
    assert options["rpc_metadata"] == {"x-team": "agents"}
    # The environment overrides the file, as for the `temporal` CLI.
    monkeypatch.setenv("TEMPORAL_NAMESPACE", "agents-staging")
    assert Settings().namespace == "agents-staging"


def test_an_api_key_implies_tls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEMPORAL_API_KEY", "key-123")
    settings = Settings()
    assert "key-123" not in repr(settings)
    options = connect_options(settings)
    assert options["tls"] is True and options["api_key"] == "key-123"
    monkeypatch.setenv("TEMPORAL_TLS_SERVER_NAME", "x")  # with a name for a private cluster: still TLS
    assert connect_options(Settings())["tls"] == TLSConfig(domain="x")
    with pytest.raises(ConnectionSettingsError, match="never sent without TLS"):
        tls_config(Settings(api_key="k", tls=False))


def test_tls_switch_old_names_and_contradictions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEMPORAL_TLS", "true")
    assert tls_config(Settings()) == TLSConfig()  # TLS with the system's roots, no client certificate
    monkeypatch.setenv("TEMPORAL_TLS", "maybe")  # Temporal's parser would read it as "on"
    with pytest.raises(ValueError, match="TEMPORAL_TLS"):
        Settings()
    monkeypatch.delenv("TEMPORAL_TLS")
    cert, _key = self_signed(tmp_path, "worker")
    monkeypatch.setenv("TEMPORAL_TLS_CERT", str(cert))  # this project's old name: refused, with the new one
    with pytest.raises(ValueError, match="TEMPORAL_TLS_CERT is no longer read: set TEMPORAL_TLS_CLIENT_CERT_PATH"):
        Settings()
    monkeypatch.delenv("TEMPORAL_TLS_CERT")
    monkeypatch.setenv("TEMPORAL_TLS_CLIENT_CERT_PATH", str(cert))
    with pytest.raises(ConnectionSettingsError, match="go together"):
        tls_config(Settings())
    monkeypatch.setenv("TEMPORAL_TLS_CLIENT_KEY_PATH", str(tmp_path / "missing.key"))
    with pytest.raises(ConnectionSettingsError, match=r"cannot read the TLS file .*missing\.key"):
        tls_config(Settings())


async def test_tls_against_the_plaintext_dev_server_fails_clearly(dev_env: WorkflowEnvironment) -> None:
    address = dev_env.client.service_client.config.target_host
    with pytest.raises(TemporalUnavailable) as raised:
        await asyncio.wait_for(connect(Settings(address=address, tls=True)), 120)  # a guard, not a speed goal
    message = str(raised.value)
    assert address in message and "over TLS" in message
    assert "not with TLS" in message and "TEMPORAL_TLS" in message
    # The same server, without TLS, is fine.
    client = await connect(Settings(address=address, namespace=dev_env.client.namespace))
    assert client.namespace == dev_env.client.namespace
