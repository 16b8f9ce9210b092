"""docker-compose.yml and the Dockerfile, checked by structure (no Docker engine runs here): the services,
pinned images, health checks and the start order they imply, the worker's environment against settings.py,
the search attributes the setup job creates against duragent/_workflows/search_attributes.py, the stores every
worker replica shares (the agents' own database in Temporal's PostgreSQL; the job that creates it is run
for real against a PostgreSQL, then `starter.py migrate` as the workers' role), and the secrets: every one a
file `make secrets` generates and compose mounts, none a variable, approver keys required."""

from __future__ import annotations

import asyncio
import os
import re
import stat
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml
from google.protobuf.duration_pb2 import Duration
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest, RegisterNamespaceRequest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from agentic.signing import ApproverKey, parse_public_keys
from duragent._config.approver_keys import approver_public_keys
from duragent._config.settings import ROOT, TEMPORAL_STANDARD, Settings
from duragent._config.webhook_signing import load_secret
from duragent._config.worker_keys import load_worker_keys
from duragent._ops.devstack.compose_secrets import MOUNTED_FILES, RANDOM, make_secrets
from duragent._ops.devstack.server_profile import TUNED
from duragent._ops.retention.policy import FAILED_DAYS, NAMESPACE_RETENTION
from duragent._versioning import WorkerVersioningError, worker_deployment
from duragent._workflows import search_attributes
from tests.conftest import eventually, new_worker
from tests.support.backends import POSTGRES_TABLES
from tests.support.postgres_server import LocalPostgres

COMPOSE = ROOT / "docker-compose.yml"
CORE = {
    "postgresql",
    "temporal-schema",
    "temporal",
    "temporal-setup",
    "temporal-ui",
    "agents-database",
    "agents-migrate",
    "worker",
    "deployment-setup",
}
ONE_SHOTS = {"temporal-schema", "temporal-setup", "agents-database", "agents-migrate", "deployment-setup"}
# Read by the worker process but not through Settings: the files of the database password
# (duragent/_stores/postgres/pool.py) and of the webhook secret (duragent/_config/webhook_signing.py).
WORKER_ENV_OUTSIDE_SETTINGS = {"PGPASSWORD_FILE", "AGENT_WEBHOOK_SECRET_FILE"}
RUN_SECRETS = "/run/secrets/"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return compose["services"]


def settings_variables() -> set[str]:
    """Every environment variable settings.py reads, Temporal's standard client configuration included (a
    secret read with `_env_secret` also from NAME_FILE)."""
    source = (ROOT / "duragent" / "_config" / "settings.py").read_text()
    ours = set(re.findall(r"""(?:os\.environ\.get|_env\w*)\(\s*["']([A-Z][A-Z0-9_]*)["']""", source))
    secrets = re.findall(r"""_env_secret\(\s*["']([A-Z][A-Z0-9_]*)["']""", source)
    return ours | {f"{name}_FILE" for name in secrets} | TEMPORAL_STANDARD


@pytest.fixture
def mounted(tmp_path: Path) -> Path:
    """What `make secrets` makes (for maria), where a test stands it in for /run/secrets/."""
    directory = tmp_path / "secrets"
    make_secrets(directory, ["maria"])
    return directory


def on_host(value: str, mounted: Path) -> str:
    """A container path under /run/secrets/ as the file `make secrets` made."""
    return value.replace(RUN_SECRETS, f"{mounted}/")


def interpolate(value: str) -> str:
    """Compose's `${NAME:-default}` with nothing set in the environment."""
    return re.sub(r"\$\{[A-Z0-9_]+:-([^}]*)\}", r"\1", value)


def environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment", {})
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: str(v) for k, v in env.items()}


def split_image(image: str) -> tuple[str, str]:
    name, _, tag = image.rpartition(":")
    assert "/" not in tag, f"{image}: no tag"
    return name, tag


def assert_pinned(image: str) -> None:
    assert "$" not in image, f"{image}: pinned in the file, not taken from the environment"
    name, tag = split_image(image)
    assert name and tag and tag != "latest", f"{image}: not pinned"
    assert re.fullmatch(r"v?\d+\.\d+(\.\d+)?([-.][A-Za-z0-9.-]+)?", tag), f"{image}: tag {tag!r} is not a version"


def test_services_exist(services: dict[str, dict[str, Any]]) -> None:
    assert set(services) >= CORE
    assert services["codec"]["profiles"] == ["codec"] and services["prometheus"]["profiles"] == ["metrics"]
    assert services["worker-draining"]["profiles"] == ["drain"]
    assert not [name for name in CORE if services[name].get("profiles")], "the core stack needs no profile"


def test_every_image_is_pinned(services: dict[str, dict[str, Any]]) -> None:
    images = {name: service["image"] for name, service in services.items()}
    assert set(images) == set(services), "every service names its image (built ones get a versioned tag)"
    # The previous build's workers, during a deploy: the tag is the build that drains, given then.
    assert images.pop("worker-draining") == "durable-agents-worker:${AGENT_DRAINING_BUILD:-set-AGENT_DRAINING_BUILD}"
    for image in images.values():
        assert_pinned(image)
    # Server and admin-tools move together (the schema job migrates to the server's schema).
    assert split_image(images["temporal"])[1] == split_image(images["temporal-schema"])[1]
    assert split_image(images["temporal"])[1] == split_image(images["temporal-setup"])[1]
    assert split_image(images["temporal"])[0] == "temporalio/server"
    assert split_image(images["temporal-ui"])[0] == "temporalio/ui"
    assert re.fullmatch(r"postgres:16\.\d+", images["postgresql"])
    assert services["worker"]["build"] == "." and images["worker"] == images["codec"] == images["agents-migrate"]
    assert images["deployment-setup"] == images["worker"], "the worker image carries the temporal CLI"
    assert images["agents-database"] == images["postgresql"], "psql of the server's own version"
    assert not [s for s in services.values() if "auto-setup" in s["image"]], "auto-setup is deprecated"


def test_health_checks_and_start_order(services: dict[str, dict[str, Any]]) -> None:
    for name, service in services.items():
        if name in ONE_SHOTS:
            assert service["restart"] == "no", f"{name} is a one-shot"
            continue
        check = service.get("healthcheck")
        assert check and check["test"][0] in ("CMD", "CMD-SHELL"), f"{name} has no health check"
        assert service["restart"] == "unless-stopped"
    for name, service in services.items():
        for dependency, spec in service.get("depends_on", {}).items():
            assert isinstance(spec, dict), f"{name} -> {dependency}: a condition, not just an order"
            wanted = "service_completed_successfully" if dependency in ONE_SHOTS else "service_healthy"
            assert spec["condition"] == wanted, f"{name} -> {dependency}"
            assert dependency in services
    order = {name: set(service.get("depends_on", {})) for name, service in services.items()}
    assert order["temporal-schema"] == {"postgresql"}
    assert order["temporal"] == {"temporal-schema"}
    assert order["temporal-setup"] == {"temporal"}
    assert order["temporal-ui"] == {"temporal"}
    assert order["agents-database"] == {"postgresql"}
    assert order["agents-migrate"] == {"agents-database"}
    assert order["worker"] == {"temporal", "temporal-setup", "agents-migrate"}
    assert order["deployment-setup"] == {"worker"}, "its build is made current once its workers poll"
    assert order["worker-draining"] == {"temporal"}


@pytest.mark.system
def test_one_shot_scripts_parse_as_shell(services: dict[str, dict[str, Any]]) -> None:
    assert services["agents-migrate"]["command"] == ["python", "starter.py", "migrate"]
    for name in ONE_SHOTS - {"agents-migrate"}:
        service = services[name]
        assert service["entrypoint"] == ["/bin/sh", "-euc"]
        [script] = service["command"]
        done = subprocess.run(["sh", "-n", "-c", script.replace("$$", "$")], capture_output=True, text=True)
        assert done.returncode == 0, f"{name}: {done.stderr}"


def test_ports_and_scaling(services: dict[str, dict[str, Any]]) -> None:
    published = {name: service.get("ports", []) for name, service in services.items()}
    assert published["temporal"] == ["127.0.0.1:7233:7233"]
    assert published["temporal-ui"] == ["127.0.0.1:8080:8080"]
    assert published["codec"] == ["127.0.0.1:8081:8081"]
    assert all(port.startswith("127.0.0.1:") for ports in published.values() for port in ports)
    # `--scale worker=N`: no fixed container name, no host port to collide on.
    worker = services["worker"]
    assert "container_name" not in worker and not published["worker"]
    metrics_port = environment(worker)["AGENT_METRICS_ADDRESS"].rsplit(":", 1)[1]
    assert worker["expose"] == [metrics_port]
    assert f":{metrics_port}/metrics" in " ".join(worker["healthcheck"]["test"])
    codec_port = services["codec"]["command"][services["codec"]["command"].index("--port") + 1]
    assert published["codec"][0].endswith(f":{codec_port}")
    assert "codec-server" in services["codec"]["command"]


def test_worker_environment_matches_settings(
    services: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch, mounted: Path
) -> None:
    env = environment(services["worker"])
    known = settings_variables()
    assert {"TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_TASK_QUEUE", "AGENT_DATABASE_URL"} <= known
    required = {
        "TEMPORAL_ADDRESS",
        "TEMPORAL_NAMESPACE",
        "TEMPORAL_TASK_QUEUE",
        "AGENT_DATABASE_URL",
        "AGENT_CODEC_KEY_FILE",
        "AGENT_APPROVER_KEYS_FILE",
        "AGENT_WORKER_KEYS_FILE",
        "AGENT_METRICS_ADDRESS",
        "AGENT_OTEL",
        "AGENT_LOG_FORMAT",
        "TEMPORAL_DEPLOYMENT_NAME",
        "TEMPORAL_WORKER_BUILD_ID",
    }
    assert required <= set(env)
    assert set(env) - known - WORKER_ENV_OUTSIDE_SETTINGS == set(), "a variable settings.py does not read"

    # What the worker would see, read through Settings itself, with the files `make secrets` makes mounted.
    for name in known | {"OPENAI_API_KEY", "AGENT_WEBHOOK_SECRET"}:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, on_host(interpolate(value), mounted))
    settings = Settings()
    assert settings.address == "temporal:7233" and settings.task_queue == "durable-agents"
    assert settings.metrics_address == "0.0.0.0:9464" and settings.log_format == "json" and settings.otel is False
    assert settings.codec_keys is None and settings.tls is None and settings.api_key is None
    assert settings.codec_key_file == mounted / "codec_keys"  # payloads encrypted, from the mounted keys
    assert set(approver_public_keys(settings)) == {"maria"}  # only her signed decisions count
    assert settings.openai_api_key is None  # an empty file: no `openai:` models
    assert load_secret(settings) == (mounted / "webhook_secret").read_text().strip().encode()  # deliveries are signed
    assert load_worker_keys(settings) is not None  # what the workflows schedule is sealed
    assert settings.database_url == env["AGENT_DATABASE_URL"]
    assert (settings.deployment_name, settings.build_id) == ("durable-agents", "0.1.0")

    # Everything that talks to Temporal talks to the server service, in the worker's namespace.
    setup = environment(services["temporal-setup"])
    ui = environment(services["temporal-ui"])
    assert setup["TEMPORAL_ADDRESS"] == env["TEMPORAL_ADDRESS"] == ui["TEMPORAL_ADDRESS"]
    assert setup["TEMPORAL_NAMESPACE"] == env["TEMPORAL_NAMESPACE"]
    assert env["TEMPORAL_ADDRESS"].split(":")[0] == "temporal"
    codec = environment(services["codec"])
    assert codec["AGENT_CODEC_KEY_FILE"] == env["AGENT_CODEC_KEY_FILE"], "the codec endpoint has the worker's keys"
    assert codec["TEMPORAL_NAMESPACE"] == env["TEMPORAL_NAMESPACE"], "payloads are bound to the namespace"


def test_every_replica_shares_the_agents_database_and_nothing_on_disk(
    compose: dict[str, Any], services: dict[str, dict[str, Any]]
) -> None:
    """`--scale worker=N` is correct across containers (and hosts): the ledger and the transcripts are in the
    agents' own database on the stack's PostgreSQL, which the one-shot jobs create before any worker starts."""
    worker, migrate = environment(services["worker"]), environment(services["agents-migrate"])
    database = environment(services["agents-database"])
    assert "volumes" not in services["worker"] and "AGENT_LEDGER" not in worker, "no store on a replica's disk"
    assert set(compose["volumes"]) == {"postgres-data"}
    url = conninfo_to_dict(worker["AGENT_DATABASE_URL"])
    assert url["host"] == database["PGHOST"] == "postgresql" and url["host"] in services and url["port"] == "5432"
    assert url["dbname"] == url["user"] == database["AGENT_DB"], "the role and database the job creates"
    assert url["dbname"] not in ("temporal", "temporal_visibility", "postgres"), "not Temporal's own databases"
    assert "password" not in url, "the password comes from a mounted file, never in the URL"
    assert worker["PGPASSWORD_FILE"] == migrate["PGPASSWORD_FILE"] == f"{RUN_SECRETS}agent_db_password"
    assert "cat /run/secrets/agent_db_password" in services["agents-database"]["command"][0], "the role's password"
    assert {k: migrate[k] for k in ("AGENT_DATABASE_URL", "PGPASSWORD_FILE")} == {
        k: worker[k] for k in ("AGENT_DATABASE_URL", "PGPASSWORD_FILE")
    }, "the tables are made where the workers look"
    postgres = environment(services["postgresql"])
    assert database["PGUSER"] == postgres["POSTGRES_USER"]
    assert postgres["POSTGRES_PASSWORD_FILE"] == f"{RUN_SECRETS}postgres_password"
    assert "cat /run/secrets/postgres_password" in services["agents-database"]["command"][0], "the superuser's"


@pytest.mark.system
def test_the_agents_database_job_and_migrate_work_on_a_real_postgresql(
    services: dict[str, dict[str, Any]], own_postgres: LocalPostgres, mounted: Path
) -> None:
    """The agents-database script, run by `sh` with a real `psql` against a real server (as its superuser, as
    the job runs as Temporal's), twice; then `starter.py migrate` with the workers' URL as the role it made —
    every password from the files `make secrets` made, none from a variable."""
    job = services["agents-database"]
    [script] = job["command"]
    env = environment(job) | {
        "PGHOST": "127.0.0.1",
        "PGPORT": str(own_postgres.port),
        "PGUSER": "postgres",
        "PATH": f"{own_postgres.bin_dir}{os.pathsep}{os.environ['PATH']}",
    }
    assert not [name for name in env if "PASSWORD" in name]
    for _ in range(2):  # every `docker compose up` runs it again
        done = subprocess.run(
            [*job["entrypoint"], on_host(script.replace("$$", "$"), mounted)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    name = env["AGENT_DB"]
    with psycopg.connect(own_postgres.url) as db:
        assert db.execute("SELECT rolcanlogin FROM pg_roles WHERE rolname = %s", (name,)).fetchone() == (True,)
        owner = db.execute("SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = %s", (name,)).fetchone()
        assert owner == (name,)

    worker = environment(services["worker"])
    url = make_conninfo(worker["AGENT_DATABASE_URL"], host="127.0.0.1", port=str(own_postgres.port))
    [program, *arguments] = services["agents-migrate"]["command"]
    assert program == "python"
    migrate = subprocess.run(
        [sys.executable, *arguments],
        cwd=ROOT,
        env={
            "PATH": os.environ["PATH"],
            "AGENT_DATABASE_URL": url,
            "PGPASSWORD_FILE": str(mounted / "agent_db_password"),
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert migrate.returncode == 0, migrate.stderr
    tables = POSTGRES_TABLES
    assert migrate.stdout.startswith(f"created {', '.join(tables)} in PostgreSQL at 127.0.0.1:")
    with psycopg.connect(make_conninfo(own_postgres.url, dbname=name)) as db:
        owners = dict(db.execute("SELECT tablename, tableowner FROM pg_tables WHERE schemaname = 'public'").fetchall())
    assert owners == dict.fromkeys(tables, name)

    # This server trusts local users; asked for the role's password, as compose's server does, the workers'
    # file is the one that works (the job set the role's password from it).
    hba = own_postgres.data / "pg_hba.conf"
    trusting = hba.read_text()
    hba.write_text(f"host all {name} 127.0.0.1/32 scram-sha-256\n{trusting}")
    with psycopg.connect(own_postgres.url, autocommit=True) as db:
        db.execute("SELECT pg_reload_conf()")
    try:
        wrong = mounted / "wrong_password"
        wrong.write_text("not-it\n")
        for password_file, works in ((mounted / "agent_db_password", True), (wrong, False)):
            again = subprocess.run(
                [sys.executable, *arguments],
                cwd=ROOT,
                env={"PATH": os.environ["PATH"], "AGENT_DATABASE_URL": url, "PGPASSWORD_FILE": str(password_file)},
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert (again.returncode == 0) is works, again.stderr
            assert works or "password authentication failed" in again.stderr
    finally:
        hba.write_text(trusting)
        with psycopg.connect(own_postgres.url, autocommit=True) as db:
            db.execute("SELECT pg_reload_conf()")


def test_search_attributes_match_the_module(services: dict[str, dict[str, Any]]) -> None:
    [script] = services["temporal-setup"]["command"]
    created = re.findall(r"search-attribute create\b[^\n]*?--name\s+(\w+)\s+--type\s+(\w+)", script)
    flags = search_attributes.dev_server_flags()
    expected = {tuple(flag.split("=")) for flag in flags[1::2]}
    assert len(expected) == len(search_attributes.ALL)
    assert sorted(created) == sorted(expected)  # exactly: none missing, none extra, none twice
    assert '--namespace "$$TEMPORAL_NAMESPACE"' in script


def test_mounted_files_exist_and_parse(services: dict[str, dict[str, Any]]) -> None:
    for service in services.values():
        for mount in service.get("volumes", []):
            source = mount.split(":")[0]
            if source.startswith("./"):
                assert (ROOT / source).is_file(), source
    dynamic = yaml.safe_load((ROOT / "deploy/temporal/dynamicconfig.yaml").read_text())
    assert dynamic["frontend.enableUpdateWorkflowExecution"][0]["value"] is True
    assert all(isinstance(v, list) and "value" in v[0] for v in dynamic.values())
    path = environment(services["temporal"])["DYNAMIC_CONFIG_FILE_PATH"]
    assert any(m.endswith(f":{path}:ro") for m in services["temporal"]["volumes"])
    prometheus = yaml.safe_load((ROOT / "deploy/prometheus.yml").read_text())
    [workers] = [job for job in prometheus["scrape_configs"] if job["job_name"] == "agent-workers"]
    assert workers["dns_sd_configs"][0]["names"] == ["worker"] and workers["dns_sd_configs"][0]["port"] == 9464


def test_the_compose_server_is_tuned_like_the_embedded_one() -> None:
    dynamic = yaml.safe_load((ROOT / "deploy/temporal/dynamicconfig.yaml").read_text())
    assert TUNED.dynamic_config, "the tuned profile sets dynamic config"
    for key, value in TUNED.dynamic_config.items():
        assert dynamic.get(key) == [{"value": value, "constraints": {}}], key


def test_dockerfile_and_dockerignore() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    instructions = [line.split(None, 1) for line in dockerfile.splitlines() if line and not line.startswith((" ", "#"))]
    [base] = [args for op, args in instructions if op == "FROM"]
    assert_pinned(base)
    assert base.startswith("python:3.11.") and "slim" in base
    assert "pip install -r requirements.lock" in dockerfile
    assert re.search(r"pip install --no-deps[^\n]* \.", dockerfile)
    assert 'CMD ["python", "worker.py"]' in dockerfile
    [user] = [args for op, args in instructions if op == "USER"]
    assert user.strip() not in ("root", "0")
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".git", ".venv/", ".data/", ".temporal/", ".env", "*.pem", "*.key", "*.keys", "*.db"} <= ignored
    # What the image needs is not ignored.
    assert not {"requirements.lock", "pyproject.toml", "worker.py", "codec/"} & ignored


def test_compose_documentation_exists() -> None:
    doc = (ROOT / "docs/operations.md").read_text()
    for needle in ("docker compose up", "--scale worker=", "AGENT_CODEC_KEYS", "codec-server", "TEMPORAL_API_KEY"):
        assert needle in doc, needle
    assert Path(COMPOSE).read_text().count("docs/operations.md") >= 1


async def test_setup_job_registers_the_search_attributes_on_a_real_server(
    services: dict[str, dict[str, Any]], dev_env: WorkflowEnvironment
) -> None:
    """The temporal-setup script itself, run by `sh` with the real `temporal` CLI against the dev server,
    for a namespace that does not exist yet: it creates the namespace and exactly our search attributes."""
    namespace = f"setup-{uuid.uuid4().hex[:8]}"
    done = run_setup_job(services, dev_env, namespace)
    assert done.returncode == 0, done.stdout + done.stderr
    listed = await dev_env.client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=namespace)
    )
    expected = {key.name: key.indexed_value_type for key in search_attributes.ALL}
    assert dict(listed.custom_attributes) == expected
    # The namespace keeps closed runs longer than the longest retention policy: prune ends them, not the server.
    assert await retention_of(dev_env.client, namespace) == NAMESPACE_RETENTION >= timedelta(days=FAILED_DAYS)
    # Running it again (every `docker compose up`) changes nothing and still succeeds.
    again = run_setup_job(services, dev_env, namespace)
    assert again.returncode == 0, again.stderr


SECRET_NAME = re.compile(r"PASSWORD|PWD|SECRET|TOKEN|API_KEY|CODEC_KEYS|APPROVER_KEYS")


def test_secrets_are_mounted_files_never_variables(
    compose: dict[str, Any], services: dict[str, dict[str, Any]]
) -> None:
    """No password, token or key is a variable (which `docker inspect` and `docker compose config`
    show, and `.env` holds in plaintext): each is a file `make secrets` made, declared once, mounted only into
    the services that use it, and read there through a *_FILE variable or the service's own script."""
    declared = compose["secrets"]
    assert set(declared) == set(MOUNTED_FILES), "exactly the files `make secrets` makes"
    assert all(spec == {"file": f"./secrets/{name}"} for name, spec in declared.items())
    for name, service in services.items():
        env = environment(service)
        inline = [k for k, v in env.items() if SECRET_NAME.search(k) and not k.endswith("_FILE")]
        assert not inline, f"{name}: {inline} as variables"
        scripts = " ".join(service.get("command", []) if isinstance(service.get("command"), list) else [])
        used = {v.removeprefix(RUN_SECRETS) for v in env.values() if v.startswith(RUN_SECRETS)}
        used |= set(re.findall(r"cat /run/secrets/(\w+)", scripts))
        assert set(service.get("secrets", [])) == used, f"{name} mounts exactly what it reads"
        assert used <= set(declared)
    from_env = set(re.findall(r"\$\{([A-Z0-9_]+)", COMPOSE.read_text()))
    assert from_env and not [n for n in from_env if SECRET_NAME.search(n)], "only settings, never a secret, from .env"
    codec = services["codec"]
    assert "--insecure-no-auth" not in codec["command"], "without its token file the endpoint refuses to start"
    doc = (ROOT / "docs/operations.md").read_text()
    assert "make secrets" in doc and "AGENT_CODEC_KEY_FILE" in doc and "secrets:" in doc
    assert (
        "## Trust model" in doc and "who may signal may send decisions; only approver keys make them authentic" in doc
    )


@pytest.mark.system  # processes of its own
def test_make_secrets_writes_every_mounted_file_once_and_keeps_them(tmp_path: Path) -> None:
    """`make secrets` as an operator runs it: what compose mounts, owner-only where it can be, kept on a
    re-run (a new approver is added, nobody's key replaced), never in git or an image."""
    assert "python -m duragent._ops.cli.compose_secrets" in (ROOT / "Makefile").read_text()
    directory = tmp_path / "secrets"
    command = [sys.executable, "-m", "duragent._ops.cli.compose_secrets", "--dir", str(directory)]
    env = {"PATH": os.environ["PATH"], "OPENAI_API_KEY": "sk-at-setup"}
    first = subprocess.run([*command, "--approver", "maria"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert {p.name for p in directory.iterdir()} == {*MOUNTED_FILES, "approvers"}
    assert stat.S_IMODE(directory.stat().st_mode) == stat.S_IMODE((directory / "approvers").stat().st_mode) == 0o700
    assert all(stat.S_IMODE((directory / name).stat().st_mode) == 0o644 for name in MOUNTED_FILES)
    private = directory / "approvers" / "maria.key"
    assert stat.S_IMODE(private.stat().st_mode) == 0o600 and "maria's private key" in first.stdout
    maria = ApproverKey.parse(private.read_text())
    public = parse_public_keys((directory / "approver_keys").read_text())
    assert public == {"maria": maria.public_entry().split("=", 1)[1]}, "her public key is the workers'"
    assert (directory / "openai_api_key").read_text().strip() == "sk-at-setup"
    assert len({(directory / n).read_text() for n in RANDOM}) == len(RANDOM), "each one its own"
    before = {p: p.read_bytes() for p in directory.rglob("*") if p.is_file()}

    again = subprocess.run(
        [*command, "--approver", "maria", "--approver", "ops"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert again.returncode == 0, again.stderr
    assert all(path.read_bytes() == body for path, body in before.items() if path.name != "approver_keys")
    assert set(parse_public_keys((directory / "approver_keys").read_text())) == {"maria", "ops"}
    assert parse_public_keys((directory / "approver_keys").read_text())["maria"] == public["maria"]
    bad = subprocess.run([*command, "--approver", "no spaces"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and not (directory / "approvers" / "no spaces.key").exists()

    ignored = subprocess.run(["git", "check-ignore", "-q", "secrets/postgres_password"], cwd=ROOT)
    assert ignored.returncode == 0, "secrets/ is git-ignored"
    assert "secrets/" in (ROOT / ".dockerignore").read_text().split()


@pytest.mark.system  # processes of its own
def test_the_worker_refuses_to_start_without_an_approver_key(tmp_path: Path, mounted: Path) -> None:
    """Compose mounts the approvers' public keys: a worker whose file is empty, or missing (Docker then mounts a
    directory in its place), says so in one line and does not start — before it even connects."""
    empty = tmp_path / "no_keys"
    empty.write_text("# NAME=PUBLIC_KEY per line\n")
    for keys_file, why in ((empty, "holds no approver key"), (tmp_path / "a_directory", "cannot read")):
        (tmp_path / "a_directory").mkdir(exist_ok=True)
        env = {
            "PATH": os.environ["PATH"],
            "AGENT_DATA_DIR": str(tmp_path / "data"),
            "TEMPORAL_ADDRESS": "127.0.0.1:9",  # nothing there: the keys are checked first
            "AGENT_APPROVER_KEYS_FILE": str(keys_file),
        }
        done = subprocess.run(
            [sys.executable, "worker.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 2, done.stderr
        assert [line for line in done.stderr.splitlines() if line.strip()] == [done.stderr.strip()]
        assert "AGENT_APPROVER_KEYS_FILE" in done.stderr and why in done.stderr
    settings = Settings(approver_keys_file=mounted / "approver_keys")
    assert set(approver_public_keys(settings)) == {"maria"}


@pytest.mark.system  # processes of its own
def test_the_temporal_servers_password_comes_from_its_secret(
    services: dict[str, dict[str, Any]], mounted: Path, tmp_path: Path
) -> None:
    """The server image reads its database password only from POSTGRES_PWD: the service's entrypoint sets it
    from the mounted file and hands over to the image's own entrypoint (here, a stand-in that prints it)."""
    service = services["temporal"]
    [script] = service["command"]
    stand_in = tmp_path / "entrypoint.sh"
    stand_in.write_text('#!/bin/sh\nprintf "%s" "$POSTGRES_PWD"\n')
    stand_in.chmod(0o755)
    shell = on_host(script.replace("$$", "$"), mounted).replace("/etc/temporal/entrypoint.sh", str(stand_in))
    done = subprocess.run(
        [*service["entrypoint"], shell], env={"PATH": os.environ["PATH"]}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (mounted / "postgres_password").read_text().strip()
    schema_job = services["temporal-schema"]["command"][0]
    assert 'SQL_PASSWORD="$$(cat /run/secrets/postgres_password)"; export SQL_PASSWORD' in schema_job


async def test_setup_job_lengthens_the_retention_of_an_existing_namespace(
    services: dict[str, dict[str, Any]], dev_env: WorkflowEnvironment
) -> None:
    """A namespace created earlier with a shorter retention (720h, as this file once did) gets the long one."""
    namespace = f"setup-{uuid.uuid4().hex[:8]}"
    await dev_env.client.workflow_service.register_namespace(
        RegisterNamespaceRequest(namespace=namespace, workflow_execution_retention_period=Duration(seconds=30 * 86400))
    )
    done = run_setup_job(services, dev_env, namespace)
    assert done.returncode == 0, done.stdout + done.stderr
    assert await retention_of(dev_env.client, namespace) == NAMESPACE_RETENTION


def run_setup_job(
    services: dict[str, dict[str, Any]], dev_env: WorkflowEnvironment, namespace: str
) -> subprocess.CompletedProcess[str]:
    """The temporal-setup script itself, run by `sh` with the real `temporal` CLI against the dev server."""
    [script] = services["temporal-setup"]["command"]
    env = os.environ | {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "TEMPORAL_ADDRESS": dev_env.client.service_client.config.target_host,
        "TEMPORAL_NAMESPACE": namespace,
    }
    return subprocess.run(
        [*services["temporal-setup"]["entrypoint"], script.replace("$$", "$")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


async def retention_of(client: Client, namespace: str) -> timedelta:
    described = await client.workflow_service.describe_namespace(DescribeNamespaceRequest(namespace=namespace))
    return described.config.workflow_execution_retention_ttl.ToTimedelta()


def test_the_workers_build_is_the_images_version_and_the_draining_workers_are_the_same_workers(
    services: dict[str, dict[str, Any]], mounted: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Worker Versioning in the stack (docs/operations.md, "Deploying a new version"): the build id is the image's
    tag (a release changes both); the previous build's workers differ from the current ones only in their build,
    and do not start without one."""
    worker, draining, setup = (
        environment(services[name]) for name in ("worker", "worker-draining", "deployment-setup")
    )
    repository, tag = split_image(services["worker"]["image"])
    assert worker["TEMPORAL_WORKER_BUILD_ID"] == tag == setup["TEMPORAL_WORKER_BUILD_ID"]
    assert (
        worker["TEMPORAL_DEPLOYMENT_NAME"] == draining["TEMPORAL_DEPLOYMENT_NAME"] == setup["TEMPORAL_DEPLOYMENT_NAME"]
    )
    assert {k: setup[k] for k in ("TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE")} == {
        k: worker[k] for k in ("TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE")
    }
    variable = "AGENT_DRAINING_BUILD"
    assert draining.pop("TEMPORAL_WORKER_BUILD_ID") == f"${{{variable}:-}}"
    assert draining == {k: v for k, v in worker.items() if k != "TEMPORAL_WORKER_BUILD_ID"}
    assert services["worker-draining"]["image"].startswith(f"{repository}:${{{variable}:-")
    for key in ("secrets", "healthcheck", "expose", "stop_grace_period", "restart"):
        assert services["worker-draining"][key] == services["worker"][key], key

    for name in settings_variables():
        monkeypatch.delenv(name, raising=False)
    for name, value in environment(services["worker-draining"]).items():
        monkeypatch.setenv(name, on_host(interpolate(value), mounted))
    settings = Settings()
    with pytest.raises(WorkerVersioningError, match="a deployment name is set but no build id"):
        worker_deployment(settings.deployment_name, settings.build_id)


async def test_the_deployment_job_makes_the_first_build_current_and_never_moves_it_after(
    services: dict[str, dict[str, Any]], dev_env: WorkflowEnvironment, ledger, task_queue: str
) -> None:
    """The deployment-setup script itself, run by `sh` with the real `temporal` CLI against the dev server and a
    versioned worker polling: it makes the worker's build current; once an operator has made another build
    current, running it again (every `docker compose up`) changes nothing."""
    deployment = f"compose-{uuid.uuid4().hex[:8]}"
    async with new_worker(dev_env.client, task_queue, ledger, deployment=deployment, build_id="0.1.0"):
        first = await asyncio.to_thread(run_deployment_job, services, dev_env, deployment, "0.1.0")
        assert first.returncode == 0, first.stdout + first.stderr
        assert first.stdout.strip().endswith(f"deployment {deployment}: current build 0.1.0")
        async with new_worker(dev_env.client, task_queue, ledger, deployment=deployment, build_id="0.2.0"):
            await eventually(lambda: set_current(dev_env, deployment, "0.2.0"), what="0.2.0 made current")
            again = await asyncio.to_thread(run_deployment_job, services, dev_env, deployment, "0.1.0")
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.strip().endswith(f"deployment {deployment}: current build 0.2.0")


def cli_env(dev_env: WorkflowEnvironment, **extra: str) -> dict[str, str]:
    return os.environ | {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "TEMPORAL_ADDRESS": dev_env.client.service_client.config.target_host,
        "TEMPORAL_NAMESPACE": dev_env.client.namespace,
        **extra,
    }


def run_deployment_job(
    services: dict[str, dict[str, Any]], dev_env: WorkflowEnvironment, deployment: str, build: str
) -> subprocess.CompletedProcess[str]:
    job = services["deployment-setup"]
    [script] = job["command"]
    env = cli_env(dev_env, TEMPORAL_DEPLOYMENT_NAME=deployment, TEMPORAL_WORKER_BUILD_ID=build)
    return subprocess.run(
        [*job["entrypoint"], script.replace("$$", "$")], env=env, capture_output=True, text=True, timeout=180
    )


async def set_current(dev_env: WorkflowEnvironment, deployment: str, build: str) -> bool:
    """The runbook's step, as an operator runs it; refused until the build's workers have polled."""
    command = [
        *("temporal", "worker", "deployment", "set-current-version"),
        *("--deployment-name", deployment, "--build-id", build, "--yes"),
    ]
    done = await asyncio.to_thread(subprocess.run, command, env=cli_env(dev_env), capture_output=True, timeout=60)
    return done.returncode == 0
