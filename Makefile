# Two entry points for a fresh machine: `make samples` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: samples test lint deps hubdeps bench
$(BIN)/grader: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,dask,lint,postgres,hub]'
	touch $@

# bubblewrap gives every kernel its own namespaces. Without it, a batch as root refuses students' code (it would
# run as root); `make samples` then grades the course's own samples with --no-sandbox and says so.
deps:
	@command -v bwrap >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  { apt-get install -y -q bubblewrap >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q bubblewrap >/dev/null; }; }; } || \
	  echo "note: bubblewrap is not installed; kernels will run without the sandbox"

# The bundled samples are the course's own code: where bubblewrap cannot be had (no apt, a container), they are
# graded with --no-sandbox, said plainly; students' work needs bubblewrap (batch refuses it as root without one).
samples: deps $(BIN)/grader
	@flags=$$(command -v bwrap >/dev/null 2>&1 || echo --no-sandbox); \
	[ -z "$$flags" ] || echo "note: no bubblewrap here: the bundled samples (the course's own code) are graded with --no-sandbox; install bubblewrap (apt-get install bubblewrap) before you grade students' work"; \
	for lesson in inference-capacity inference-scaling dynamic-batching; do \
	  $(BIN)/grader batch samples/$$lesson --lesson $$lesson --out out/$$lesson $$flags || exit 1; done
	@echo "open out/inference-capacity/index.html, out/inference-scaling/index.html and out/dynamic-batching/index.html"

# npm's configurable-http-proxy, pinned: the JupyterHub tests start a real hub with it (skipped, saying so, without npm)
hubdeps: $(BIN)/grader
	@[ -x $(VENV)/node/node_modules/.bin/configurable-http-proxy ] || command -v configurable-http-proxy >/dev/null 2>&1 || \
	  { command -v npm >/dev/null 2>&1 && npm install --silent --prefix $(VENV)/node configurable-http-proxy@5.3.0 >/dev/null 2>&1; } || \
	  echo "note: configurable-http-proxy could not be installed (npm); the JupyterHub tests will be skipped"

test: deps $(BIN)/grader hubdeps
	$(BIN)/python -m pytest -q

# The house's habits: ruff (lint, import order) over the repository and mypy over the package (pyproject.toml).
lint: $(BIN)/grader
	$(BIN)/ruff check .
	$(BIN)/mypy

bench: deps $(BIN)/grader
	$(BIN)/python bench/run_all.py
