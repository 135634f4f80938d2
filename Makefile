# Two commands set everything up: `make reproduce` and `make test`.
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat requirements.lock pyproject.toml | sha1sum | cut -c1-12)

.PHONY: install reproduce test test-fast browser lint ui paper paper-online schemes clean-venv plan benchmark reference-benchmark reference-default

install: $(STAMP)

# uv installs the locked set in ~5 s from its cache where pip takes ~220 s (mostly torch's CUDA
# wheels). It does not byte-compile: compiling the whole venv (--compile-bytecode) took 59 of
# the install's 67 s here, while Python compiles a module on its first import (~10 s once for
# torch, MLflow, scikit-learn, pandas and matplotlib) and reuses the bytecode after. For that
# to happen every recipe may write bytecode, also where the shell sets PYTHONDONTWRITEBYTECODE:
# otherwise each stage and test process compiles what it imports again (~1 s of CPU for the
# package alone in a test's workspace copy, ~8 s for the libraries of a fresh venv).
# uv reads pip's configuration (pip.conf, PIP_*) for extra indexes and wheel folders (asked of
# $(PYTHON): make expands a recipe before its first line creates the venv); if uv cannot be
# had, pip installs the same lock.
unexport PYTHONDONTWRITEBYTECODE
UV_VERSION := 0.13.8
PIP_SOURCES = $(foreach u,$(shell $(PYTHON) -m pip config get global.extra-index-url 2>/dev/null),--extra-index-url $(u)) \
  $(foreach u,$(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null) $(PIP_FIND_LINKS),--find-links $(u))
UV_INSTALL = $(BIN)/uv pip install -q --python $(BIN)/python --index-strategy unsafe-best-match $(PIP_SOURCES)

$(STAMP): requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	if $(BIN)/python -m pip install -q uv==$(UV_VERSION); then \
	  $(UV_INSTALL) -r requirements.lock && $(UV_INSTALL) --no-deps -e .; \
	else \
	  $(BIN)/python -m pip install -q -r requirements.lock && $(BIN)/python -m pip install -q --no-deps -e .; \
	fi
	rm -f $(VENV)/.installed-* && touch $@

# Each suite target: `clusterfl reproduce` = render its dvc.yaml, `clusterfl plan --write`
# (the stale cells, their cost here, the expected wall time; PLAN_FLAGS=--no-probe skips the
# probes), then `dvc repro` (each finished cell prints the suite's progress and ETA).
REPRO := PATH="$(abspath $(BIN)):$$PATH" $(BIN)/clusterfl reproduce

reproduce: $(STAMP)  ## download -> partition -> train -> report, default suite
	$(REPRO) --suite default --no-probe $(PLAN_FLAGS)  # minutes: probing would add ~10%

paper: $(STAMP)  ## the papers' settings on offline data (hours on 2 cores)
	$(REPRO) --suite paper $(PLAN_FLAGS)

paper-%: $(STAMP)  ## one paper's cells of `paper`, e.g. make paper-p5 -> reports/paper/p5/
	$(REPRO) --suite paper --paper $* $(PLAN_FLAGS)

reference-benchmark: $(STAMP)  ## after make benchmark: its histories, picks and report into reference/benchmark/benchmark/
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pipeline.reference benchmark --paper benchmark

reference-default: $(STAMP)  ## after make reproduce: each paper's histories and report into reference/default/KEY/ (committed)
	for key in p1 p2 p3 p4 p5; do \
	  PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pipeline.reference default --paper $$key || exit; done

reference-%: $(STAMP)  ## after make paper-KEY: its histories and report into reference/paper/KEY/ (committed)
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pipeline.reference paper --paper $*

# The benchmark's 400 tune and train stages go through `clusterfl sweep` (one pool of worker
# processes, one write of dvc.lock per kind of stage): ~30 min on 2 cores, where `dvc repro`
# took ~3 h, most of it DVC re-writing the 2.7 MB lock after each stage (docs/benchmark.md).
# `clusterfl reproduce` then runs what is left, the report. SWEEP_FLAGS="--cpus N" sets the pool.
SWEEP := PATH="$(abspath $(BIN)):$$PATH" $(BIN)/clusterfl sweep --executor process $(SWEEP_FLAGS)

benchmark: $(STAMP)  ## every algorithm x every non-IID scheme, tuned on validation (~40 min on 2 cores)
	$(BIN)/clusterfl render benchmark  # the sweep reads the suite's dvc.yaml: current first
	$(SWEEP) --suite benchmark
	$(REPRO) --suite benchmark --no-probe $(PLAN_FLAGS)  # the report

paper-online: $(STAMP)  ## the papers' settings on data that must be downloaded
	$(REPRO) --suite paper_online $(PLAN_FLAGS)

schemes: $(STAMP)  ## every paper's partition scheme, no training
	$(REPRO) --suite schemes $(PLAN_FLAGS)

browser:  ## Debian's Chromium for tests/test_browser.py (installed as root with apt-get only)
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium) \
	      || echo "could not install chromium: tests/test_browser.py will skip"; \
	  else echo "no chromium and not root with apt-get: tests/test_browser.py will skip"; fi; }

# While ruff and mypy run, one process imports the libraries every test process needs, so
# their bytecode is written once (~10 s) before the two workers start, not by many at once.
WARM_IMPORTS := import torch, sklearn, scipy.optimize, pandas, matplotlib.pyplot, mlflow.tracking, dvc.repo
LINT := $(BIN)/ruff check src pipeline tests && $(BIN)/mypy
test: $(STAMP) browser
	$(BIN)/python -c "$(WARM_IMPORTS)" & { $(LINT); }; status=$$?; wait $$! && exit $$status  # mypy: src/clusterfl and pipeline ([tool.mypy] in pyproject.toml), ~50 s without its cache
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder --durations=15

test-fast: $(STAMP)  ## the edit loop (~2.5 min on 2 cores): every test not marked slow, server or browser
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pytest -q -n 2 --dist loadfile -m "not slow and not server and not browser"

plan: $(STAMP)  ## what `make SUITE` would train and how long it takes: make plan SUITE=paper
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/clusterfl plan --suite $${SUITE:-default} $(PLAN_FLAGS)

lint: $(STAMP)
	$(LINT)

ui: $(STAMP)  ## the MLflow UI on the runs of this repo, opened on the runs table
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/clusterfl ui --port $${PORT:-5000}

clean-venv:
	rm -rf $(VENV)
