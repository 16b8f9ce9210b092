"""The server profiles: the embedded server runs tuned unless told otherwise, and the flags say exactly what
ops/devstack/server_profile.py says (the bench and docs/operations.md measure and explain each knob)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ops.devstack import devserver
from ops.devstack.server_profile import DEFAULT, PROFILES, TUNED, profile


def pairs(command: list[str], flag: str) -> list[str]:
    return [command[i + 1] for i, part in enumerate(command) if part == flag]


def test_the_embedded_server_runs_the_tuned_profile_by_default() -> None:
    command = devserver.server_command(7233, 8233, Path("dev.db"))
    assert pairs(command, "--sqlite-pragma") == list(TUNED.pragmas)
    values = dict(value.split("=", 1) for value in pairs(command, "--dynamic-config-value"))
    assert {key: json.loads(value) for key, value in values.items()} == TUNED.dynamic_config
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
    for name, extra in CANDIDATES.items():
        assert found[f"tuned + {name}"].dynamic_config == TUNED.dynamic_config | extra
    assert len(found) == 2 + 1 + len(TUNED.dynamic_config) + len(CANDIDATES)
