# Quickstart: `make run` (the main job) and `make test` (the test suite). Each sets up .venv itself.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: run test test-boundscheck test-rllib lint clean docs-check docs web-check chromium

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# The CPU build of torch first: any other torch request pulls a multi-GB CUDA build.
	$(PY) -m pip install -q torch==2.13.0
	# The TorchRL and Tianshou extras (their examples are tested: tests/test_examples.py) and the
	# benchmark's peers (connect_four_v3 needs pygame: tests/tools/test_bench.py).
	$(PY) -m pip install -q -e '.[dev,torchrl,tianshou,bench,docs,web]'
	# numba's cache, filled once here, so that no later command waits for compilation.
	$(PY) -m cf_env.tools.compile
	touch $@

run: $(VENV)/.installed
	$(PY) -m training.ppo

test: $(VENV)/.installed
	$(PY) -m pytest -q -n 2

# The compiled core again with numba's bounds checks on, compiled afresh into an empty cache: an
# out-of-range index in compiled code fails a test (IndexError) instead of corrupting memory.
# The kernel differential, the batched drivers and envs, the compiled bots and search, the fuzzers.
BOUNDSCHECK_TESTS ?= tests/core/test_kernel.py tests/core/test_kernel_observation.py \
	tests/core/test_kernel_privileged.py tests/core/test_compiled_boundary.py \
	tests/core/test_fuzz.py tests/core/test_playout.py tests/envs/test_batch.py \
	tests/envs/test_batch_safety.py \
	tests/envs/test_vector_env.py tests/agents/test_kernel_bots.py tests/agents/test_ismcts.py
test-boundscheck: $(VENV)/.installed
	cache=$$(mktemp -d) && trap 'rm -rf "$$cache"' EXIT && \
	  NUMBA_BOUNDSCHECK=1 NUMBA_CACHE_DIR="$$cache" $(PY) -m pytest -q -n 2 -p no:cacheprovider $(BOUNDSCHECK_TESTS)

# Ray pins an older gymnasium, so the RLlib tests get a venv of their own (CI runs both).
RLLIB_VENV ?= .venv-rllib
$(RLLIB_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(RLLIB_VENV)
	$(RLLIB_VENV)/bin/python -m pip install -q --upgrade pip
	$(RLLIB_VENV)/bin/python -m pip install -q torch==2.13.0
	$(RLLIB_VENV)/bin/python -m pip install -q -e '.[dev,rllib]'
	touch $@

# Then the self-play collectors as Ray actors on a two-node cluster made on this machine.
test-rllib: $(RLLIB_VENV)/.installed
	$(RLLIB_VENV)/bin/python -m pytest -q tests/training/test_rllib.py tests/test_readme.py tests/test_examples.py -k "rllib"
	$(RLLIB_VENV)/bin/python -m pytest -q tests/training/test_ray_collectors.py

# The built site in headless Chromium (tests/site: every page, link, anchor and image, offline;
# the search; a screenshot of the environment card in test-artifacts/). Debian's Chromium is
# driven by Playwright, so nothing is downloaded; as root it is installed if missing.
CHROMIUM ?= /usr/bin/chromium
docs-check: docs chromium
	CF_CHROMIUM="$(CHROMIUM)" $(PY) -m pytest -q tests/site

# The web app (python -m cf_env.tools.serve) in the same headless Chromium (tests/webapp): a game
# clicked to "Game over", a replay stepped, a game watched; about 15 s. Its screenshot goes to
# test-artifacts/web-play.png (make web-check CF_WEB_SCREENSHOT=docs/web-play.png refreshes the
# docs' picture).
web-check: $(VENV)/.installed chromium
	CF_CHROMIUM="$(CHROMIUM)" $(PY) -m pytest -q tests/webapp

chromium:
	@if [ ! -x "$(CHROMIUM)" ]; then \
	  if [ "$$(id -u)" = 0 ] && [ "$(CHROMIUM)" = /usr/bin/chromium ]; then \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get install -y -q chromium || { apt-get update -q && apt-get install -y -q chromium; }; \
	  else \
	    echo "docs-check and web-check need Chromium at $(CHROMIUM): apt-get install chromium (as root), or make docs-check CHROMIUM=/path/to/chromium" >&2; \
	    exit 1; \
	  fi; \
	fi

# The documentation site (docs/, Sphinx + MyST + furo) into site/; any warning fails the build.
# Sphinx's pickled doctrees go to build/doctrees, so site/ holds only what is published.
docs: $(VENV)/.installed
	rm -rf site/.doctrees
	$(VENV)/bin/sphinx-build -W --keep-going -n -q -b html -d build/doctrees docs site

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check cf_env training tests examples

clean:
	rm -rf $(VENV) $(RLLIB_VENV) site build/doctrees docs/_autosummary test-artifacts
