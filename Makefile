# The two commands the README opens with: `make demo` and `make test`. Both set up .venv first.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-slow lint bench chaos clean

setup: $(STAMP)

$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.lock
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(STAMP)

demo: setup
	$(BIN)/python starter.py demo

test: setup
	$(BIN)/python -m pytest

# The long chaos sessions and other `@pytest.mark.slow` tests, excluded from `make test`.
test-slow: setup
	$(BIN)/python -m pytest -m slow

# Temporal vs the checkpoint baseline on this machine: tables, results/bench.json, PNG plots (docs/benchmarks.md).
bench: setup
	$(BIN)/python -m bench all

# Workers (and the Temporal dev server) SIGKILLed at random; fails on a lost run or a duplicate effect.
chaos: setup
	$(BIN)/python -m bench chaos --engine baseline
	$(BIN)/python -m bench chaos --engine temporal

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) .temporal .data results
