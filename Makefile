# lance-partitioned: the two fresh-machine entry points are `make test` and `make demo`.
# Everything they need is installed here: a venv at .venv (pip, pinned tools, protoc from
# PyPI), the release build of the extension, then the checks. Build caches live outside the
# clone (CACHE) so a warm CI run takes minutes.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
ROOT := $(CURDIR)
VENV := $(ROOT)/.venv
PY := $(VENV)/bin/python
CACHE ?= $(HOME)/.cache/lance-partitioned
export CARGO_TARGET_DIR ?= $(CACHE)/target
export PIP_CACHE_DIR ?= $(CACHE)/pip
export PROTOC := $(VENV)/bin/protoc
export PYO3_PYTHON := $(PY)
export VIRTUAL_ENV := $(VENV)
export PATH := $(VENV)/bin:$(PATH)
PYTHON3 ?= python3

.PHONY: all venv build test test-rust test-python lint fmt demo bench bench-rust java-check clean

all: test

$(VENV)/.installed: requirements-dev.txt
	@command -v cargo >/dev/null || { echo "cargo (Rust toolchain) is required"; exit 1; }
	$(PYTHON3) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed

# One build profile (release) for tests, benchmarks and the demo.
build: venv
	cd $(ROOT) && maturin develop --release -q

lint: venv
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --release -- -D warnings
	ruff check python tests benches
	ruff format --check python tests benches
	mypy

test-rust: venv
	cargo test --release -p lance-partitioned-core

test-python: build
	pytest -q

# The test command of README.md (and .ci/run).
test: venv
	$(MAKE) lint
	$(MAKE) test-rust
	$(MAKE) test-python

bench-rust: venv
	cargo bench -p lance-partitioned-core --bench kernels

bench: build
	$(PY) -m pip install -q -r requirements-bench.txt
	$(PY) benches/kernels.py

java-check:
	@command -v java >/dev/null || { echo "Java 17 is required for Spark (apt-get install openjdk-17-jre-headless)"; exit 1; }
	@java -version 2>&1 | head -1

demo: build java-check
	@echo "make demo arrives with the Spark issue (#4); the kernels are ready: see README.md."
	$(PY) -c "import lance_partitioned.kernels as k, pyarrow as pa; print(k.bucket(pa.array(['US','FR','DE']), 16))"

fmt: venv
	cargo fmt --all
	ruff format python tests benches
	ruff check --fix python tests benches

clean:
	rm -rf $(VENV) python/lance_partitioned/*.so
