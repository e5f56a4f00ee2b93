# Two entry points for a fresh machine: `make samples` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: samples test deps bench
$(BIN)/grader: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,dask]'
	touch $@

# bubblewrap gives every kernel its own namespaces; without it grading still
# works and says which isolation layers are missing.
deps:
	@command -v bwrap >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  { apt-get install -y -q bubblewrap >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q bubblewrap >/dev/null; }; }; } || \
	  echo "note: bubblewrap is not installed; kernels will run without the sandbox"

samples: deps $(BIN)/grader
	$(BIN)/grader batch samples/inference-capacity --lesson inference-capacity --out out/inference-capacity
	$(BIN)/grader batch samples/inference-scaling --lesson inference-scaling --out out/inference-scaling
	$(BIN)/grader batch samples/dynamic-batching --lesson dynamic-batching --out out/dynamic-batching
	@echo "open out/inference-capacity/index.html, out/inference-scaling/index.html and out/dynamic-batching/index.html"

test: deps $(BIN)/grader
	$(BIN)/python -m pytest -q

bench: deps $(BIN)/grader
	$(BIN)/python bench/run_all.py
