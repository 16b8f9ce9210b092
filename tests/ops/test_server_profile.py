"""The server profiles: the embedded server runs tuned unless told otherwise, and the flags say exactly what
duragent/_ops/devstack/server_profile.py says (the bench and docs/operations.md measure and explain each knob)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from duragent._config.settings import ROOT
from duragent._ops.devstack import devserver
from duragent._ops.devstack.server_profile import DEFAULT, PROFILES, TUNED, profile
from tests.support.processes import descendants

# Processes of its own (servers, command lines, Python interpreters): tests/support/cost_markers.py.
pytestmark = pytest.mark.system


def pairs(command: list[str], flag: str) -> list[str]:
    return [command[i + 1] for i, part in enumerate(command) if part == flag]


def test_the_embedded_server_runs_the_tuned_profile_by_default() -> None:
    command = devserver.server_command(7233, 8233, Path("dev.db"))
    assert pairs(command, "--sqlite-pragma") == list(TUNED.pragmas)
    values = dict(value.split("=", 1) for value in pairs(command, "--dynamic-config-value"))
    assert {key: json.loads(value) for key, value in values.items()} == (
        TUNED.dynamic_config | TUNED.embedded_dynamic_config
    )
    # The search attributes' cache on: the dev server turns it off unless the key is given.
    assert values["system.forceSearchAttributesCacheRefreshOnRead"] == "false"
    assert values["history.timerProcessorMaxTimeShift"] == '"10ms"'  # a JSON string, as the CLI requires


def test_the_default_profile_is_the_dev_server_as_it_comes() -> None:
    command = devserver.server_command(7233, 8233, Path("dev.db"), profile=DEFAULT)
    assert "--sqlite-pragma" not in command and "--dynamic-config-value" not in command
    assert "--search-attribute" in command  # what every profile needs stays


def test_profiles_by_name_and_a_clear_error_for_an_unknown_one() -> None:
    assert profile("tuned") is TUNED and set(PROFILES) == {"default", "tuned"}
    with pytest.raises(ValueError, match="unknown server profile 'fast'; choose one of default, tuned"):
        profile("fast")


def test_the_knobs_bench_varies_every_knob_of_the_tuned_profile_once() -> None:
    from bench.knobs import CANDIDATES, variants

    found = {v.name: v for v in variants()}
    assert list(found)[:2] == ["default", "tuned"]
    assert found["tuned without the SQLite pragmas"].pragmas == ()
    for key in TUNED.dynamic_config:
        without = found[f"tuned without {key}"]
        assert without.pragmas == TUNED.pragmas
        assert {k: v for k, v in without.dynamic_config.items() if k != key} == {
            k: v for k, v in TUNED.dynamic_config.items() if k != key
        }
    assert (
        found["tuned without system.enableActivityEagerExecution"].dynamic_config["system.enableActivityEagerExecution"]
        is False
    )  # "without" turns it off: the server's own default is on
    for key in TUNED.embedded_dynamic_config:
        without = found[f"tuned without {key}"]
        assert key not in without.embedded_dynamic_config and without.dynamic_config == TUNED.dynamic_config
    for name, extra in CANDIDATES.items():
        assert found[f"tuned + {name}"].dynamic_config == TUNED.dynamic_config | extra
    assert len(found) == 2 + 1 + len(TUNED.dynamic_config) + len(TUNED.embedded_dynamic_config) + len(CANDIDATES)


def seconds(duration: str) -> float:
    """A dynamic-config duration as the dev server's flags write them ("5s", "10ms")."""
    value = duration.removesuffix("ms")
    return float(value) / 1000 if value != duration else float(duration.removesuffix("s"))


def test_the_worker_versioning_settings_never_forget_a_worker_that_still_polls() -> None:
    """The embedded server's Worker Versioning settings (docs/operations.md, "Deploying a new version"): a worker
    is remembered for several of its long polls, or its version could be deleted while it serves (seen with a
    15 s memory and the default minute-long polls); and a production cluster keeps Temporal's defaults."""
    config = devserver.WORKER_VERSIONING.dynamic_config
    assert seconds(config["matching.PollerHistoryTTL"]) >= 3 * seconds(config["matching.longPollExpirationInterval"])
    assert seconds(config["matching.wv.VersionDrainageStatusVisibilityGracePeriod"]) == 5
    production = yaml.safe_load((ROOT / "deploy" / "temporal" / "dynamicconfig.yaml").read_text())
    assert not set(config) & set(production)


def test_starter_server_runs_the_embedded_server_with_them(tmp_path: Path) -> None:
    port = devserver.free_port()
    env = os.environ | {"AGENT_DATA_DIR": str(tmp_path / "data")}
    command = [sys.executable, "starter.py", "server", "--json", "--port", str(port)]
    command += ["--ui-port", str(devserver.free_port()), "--db", str(tmp_path / "dev.db")]
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE)
    try:
        assert server.stdout is not None and json.loads(server.stdout.readline())["address"] == f"127.0.0.1:{port}"
        [temporal] = [pid for pid in descendants(server.pid) if Path(f"/proc/{pid}/exe").resolve().name == "temporal"]
        flags = Path(f"/proc/{temporal}/cmdline").read_bytes().decode().split("\0")
        assert all(flag in flags for flag in devserver.WORKER_VERSIONING.dev_server_flags())
    finally:
        server.terminate()
        try:
            code = server.wait(60)
        except subprocess.TimeoutExpired:  # hung on its way out: stopped here, not left behind the suite
            server.kill()
            raise
    assert code == 0
