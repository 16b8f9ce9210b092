"""The fault matrix's hosts, each in a network namespace of a lab of its own (duragent/_ops/devstack/netlab.py): the
Temporal dev server, PostgreSQL (the workers' ledger and transcripts, `AGENT_DATABASE_URL`), the orders service (the
tool provider: one refund per `Idempotency-Key`) and two workers on one task queue. The driver (this process) reaches
them over the lab's wire like any host. Every process is stopped by its handle (pid)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.served import worker_env
from duragent._client import AgentClient
from duragent._config.settings import ROOT, Settings
from duragent._ops.devstack import child_process, devserver, local_postgres
from duragent._ops.devstack.netlab import Lab
from duragent._ops.devstack.worker_process import WorkerProcess

HOSTS = ("temporal", "postgres", "provider", "w1", "w2")
WORKERS = ("w1", "w2")
# Each host has a namespace, and so a port space, of its own: the usual ports.
TEMPORAL_PORT, POSTGRES_PORT, PROVIDER_PORT = 7233, 5432, 8090


class LabPostgres(local_postgres.LocalPostgres):
    """A throwaway PostgreSQL (as the tests start one) listening on its lab host's address only."""

    def __init__(self, bin_dir: Path, lab: Lab) -> None:
        self.lab = lab  # before the base class starts the server
        # In /tmp, whatever TMPDIR says: the server runs as `postgres`, who cannot reach a root-only scratch
        # directory (a test's); `close()` removes it.
        super().__init__(bin_dir, settings={"fsync": "off", "full_page_writes": "off"}, parent=Path("/tmp"))

    @property
    def url(self) -> str:
        return f"postgresql://postgres@{self.lab.address('postgres')}:{POSTGRES_PORT}/postgres"

    def start(self) -> None:
        self.port = POSTGRES_PORT
        hba = self.data / "pg_hba.conf"
        subnet = self.lab.address("postgres").rsplit(".", 1)[0] + ".0/24"
        rule = f"host all all {subnet} trust\n"  # the lab's hosts (initdb trusts only loopback)
        if rule not in hba.read_text():
            with open(hba, "a") as out:
                out.write(rule)
        options = f"-p {self.port} -k {self.dir} -c listen_addresses={self.lab.address('postgres')}"
        options += "".join(f" -c {name}={value}" for name, value in self.settings.items())
        pg_ctl = [str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", options, "-w"]
        command = [*pg_ctl, "-t", "60", "start"]
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            command = ["su", "postgres", "-c", shlex.join(command)]
        done = subprocess.run(
            self.lab.command("postgres", command), cwd=self.dir, capture_output=True, text=True, timeout=120
        )
        if done.returncode != 0:
            raise RuntimeError(f"PostgreSQL did not start in the lab: {done.stdout}{done.stderr}")


@dataclass
class NetStack:
    lab: Lab
    workdir: Path
    settings: Settings  # the workers' (and the driver's client's)
    server: subprocess.Popen[bytes]
    postgres: LabPostgres
    provider: subprocess.Popen[bytes]
    workers: dict[str, WorkerProcess]
    agents: AgentClient

    @property
    def provider_db(self) -> Path:
        return self.workdir / "orders.db"

    def worker_of(self, identity: str) -> str | None:
        """The lab host of the worker a Temporal identity (`pid@host`) names."""
        pid = identity.partition("@")[0]
        return next((name for name, w in self.workers.items() if str(w.pid) == pid), None)


def start_worker(lab: Lab, name: str, settings: Settings, workdir: Path) -> WorkerProcess:
    env = worker_env(workdir / name) | {
        "AGENT_MODULES": "examples,examples.orders",
        "ORDERS_URL": f"http://{lab.address('provider')}:{PROVIDER_PORT}",
    }
    command = lab.command(name, [sys.executable, str(ROOT / "worker.py")])
    return WorkerProcess(settings, log=workdir / f"{name}.log", extra_env=env, command=command)


@asynccontextmanager
async def net_stack(lab: Lab, workdir: Path, *, provider_delay: float) -> AsyncIterator[NetStack]:
    """Every host started on `lab`, and stopped (by pid) on the way out, whatever happened."""
    bin_dir = local_postgres.find_binaries()
    if bin_dir is None:
        raise RuntimeError("the fault matrix needs PostgreSQL's binaries (apt-get install postgresql)")
    temporal = f"{lab.address('temporal')}:{TEMPORAL_PORT}"
    # All addresses of the temporal host's own namespace (its loopback and its lab address, nothing else): the dev
    # server's services dial each other on 127.0.0.1 whatever `--ip` says, so they must listen there too.
    command = devserver.server_command(TEMPORAL_PORT, 0, workdir / "dev.db", headless=True, ip="0.0.0.0")
    log = open(workdir / "server.log", "ab")  # noqa: SIM115 - handed to the child process
    server = subprocess.Popen(lab.command("temporal", command), stdout=log, stderr=subprocess.STDOUT)
    postgres: LabPostgres | None = None
    provider: subprocess.Popen[bytes] | None = None
    workers: dict[str, WorkerProcess] = {}
    try:
        postgres = LabPostgres(bin_dir, lab)
        provider_command = [sys.executable, "-m", "examples.orders_service", "--host", lab.address("provider")]
        provider_command += ["--port", str(PROVIDER_PORT), "--db", str(workdir / "orders.db")]
        provider_command += ["--slow-after-effect", str(provider_delay)]
        with open(workdir / "provider.log", "ab") as out:
            provider = subprocess.Popen(lab.command("provider", provider_command), cwd=ROOT, stdout=out, stderr=out)
        await devserver.wait_until_serving(temporal, timeout=60)
        settings = Settings(
            address=temporal,
            namespace="default",
            task_queue=f"netfaults-{uuid.uuid4().hex[:8]}",
            data_dir=workdir,
            ledger_path=workdir / "ledger.db",
            database_url=postgres.url,
        )
        workers = {name: start_worker(lab, name, settings, workdir) for name in WORKERS}
        for worker in workers.values():
            worker.wait_ready(90)
        agents = await AgentClient.connect(settings)
        yield NetStack(lab, workdir, settings, server, postgres, provider, workers, agents)
    finally:
        for worker in workers.values():
            worker.kill()
        if provider is not None:
            child_process.kill(provider)
        if postgres is not None:
            postgres.close()
        child_process.kill(server)
        log.close()
