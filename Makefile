# lance-partitioned: the two fresh-machine entry points are `make test` and `make demo`.
# Everything they need is installed here: a venv at .venv (pip, pinned tools, protoc from
# PyPI), the release build of the extension, then the checks. Build caches live outside the
# clone (CACHE) so a warm CI run takes minutes.

# Sub-makes print no "Entering directory" lines: `eval "$$(make -s cargo-env)"` reads stdout.
MAKEFLAGS += --no-print-directory
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
# Spark needs Java 17+: prefer an installed JDK 17 (then 21) when JAVA_HOME is not set.
JAVA_HOME ?= $(firstword $(wildcard /usr/lib/jvm/java-17-openjdk-* /usr/lib/jvm/java-21-openjdk-*))
ifneq ($(strip $(JAVA_HOME)),)
export JAVA_HOME
endif
export SPARK_LOCAL_IP ?= 127.0.0.1

DIST := $(ROOT)/dist

# On x86_64 Linux every cargo build (clippy, cargo test, the extension, the wheel) compiles C
# and links through zig against glibc $(GLIBC), so the wheel installs on glibc $(GLIBC) and
# newer (RHEL 8, Amazon Linux 2023, EMR 7) whatever glibc the build machine has. Every cargo
# command gets the same settings: one build graph, never rebuilt by switching tools. The
# wrappers call `maturin zig`, which fits compiler flags to zig; zig itself is the ziglang
# wheel of requirements-dev.txt.
GLIBC := 2.28
ifeq ($(shell uname -sm),Linux x86_64)
ZIG_DIR := $(CACHE)/zig-$(GLIBC)
export CARGO_BUILD_TARGET := x86_64-unknown-linux-gnu
export CC_x86_64_unknown_linux_gnu := $(ZIG_DIR)/cc
export CXX_x86_64_unknown_linux_gnu := $(ZIG_DIR)/c++
export AR_x86_64_unknown_linux_gnu := $(ZIG_DIR)/ar
export RANLIB_x86_64_unknown_linux_gnu := $(ZIG_DIR)/ranlib
export CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER := $(ZIG_DIR)/cc
export CARGO_ZIGBUILD_ZIG_COMMAND := $(PY)
export CARGO_ZIGBUILD_ZIG_COMMAND_ARGS := -m ziglang
ZIG_WRAPPERS := $(ZIG_DIR)/.written
else
ZIG_WRAPPERS :=
endif

.PHONY: cargo-env all venv jar build wheel test test-rust test-python lint clippy lint-python stubtest fmt demo bench bench-quick bench-rust java-check clean

all: test

$(VENV)/.installed: requirements-dev.txt
	@command -v cargo >/dev/null || { echo "cargo (Rust toolchain) is required"; exit 1; }
	$(PYTHON3) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed $(ZIG_WRAPPERS)

# The wrappers name no clone (maturin is the venv's, first on PATH): every clone shares them,
# so the C compiler's path, which build scripts watch, never changes between clones.
$(ZIG_DIR)/.written: $(VENV)/.installed
	mkdir -p $(ZIG_DIR)
	for tool in cc c++; do \
		printf '#!/bin/sh\nexec maturin zig %s -- -fno-sanitize=all -target x86_64-linux-gnu.%s "$$@"\n' \
			"$$tool" "$(GLIBC)" > $(ZIG_DIR)/$$tool.new; \
	done
	for tool in ar ranlib; do \
		printf '#!/bin/sh\nexec maturin zig %s -- "$$@"\n' "$$tool" > $(ZIG_DIR)/$$tool.new; \
	done
	for tool in cc c++ ar ranlib; do \
		chmod +x $(ZIG_DIR)/$$tool.new; \
		if cmp -s $(ZIG_DIR)/$$tool.new $(ZIG_DIR)/$$tool; then rm $(ZIG_DIR)/$$tool.new; \
		else mv $(ZIG_DIR)/$$tool.new $(ZIG_DIR)/$$tool; fi; \
	done
	touch $@

# The Spark key functions (java/): compiled against the pyspark jars of the venv into the
# package, so wheels carry them and Spark loads them with ADD JAR (see python/lance_partitioned/spark/key.py).
JAR := $(ROOT)/python/lance_partitioned/jars/lance-partitioned-spark.jar
JAVA_SOURCES := $(wildcard $(ROOT)/java/io/lancepartitioned/spark/*.java)
JDK_BIN := $(if $(JAVA_HOME),$(JAVA_HOME)/bin/,)

$(JAR): $(JAVA_SOURCES) $(VENV)/.installed
	@command -v $(JDK_BIN)javac >/dev/null || { echo "javac (a JDK 17+) is required: apt-get install openjdk-17-jdk-headless"; exit 1; }
	rm -rf $(CACHE)/java-classes && mkdir -p $(CACHE)/java-classes $(dir $@)
	$(JDK_BIN)javac --release 17 -Xlint:all,-path -Werror -d $(CACHE)/java-classes \
		-cp "$$($(PY) -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')/jars/*" \
		$(JAVA_SOURCES)
	$(JDK_BIN)jar --create --file $@ -C $(CACHE)/java-classes .

jar: $(JAR)

# One build (release, stripped) for tests, benchmarks, the demo and the wheel: the same cargo
# invocation, so `make wheel` after `make build` (or the reverse) compiles nothing. Test-only
# hooks are runtime switches the test suite sets (docs/architecture.md, "Tests").
MATURIN_FLAGS := --release --strip -q

BUILD_EXTENSION := cd $(ROOT) && maturin develop $(MATURIN_FLAGS)

build: venv jar
	$(BUILD_EXTENSION)

# The installable wheel (abi3) into dist/, as users get it.
wheel: venv jar
	rm -f $(DIST)/lance_partitioned-*.whl
	cd $(ROOT) && maturin build $(MATURIN_FLAGS) -o $(DIST)
	@ls -l $(DIST)/lance_partitioned-*.whl

lint: venv
	cargo fmt --all --check
	$(MAKE) clippy
	$(MAKE) lint-python

# Every cargo command here (the lint, cargo test, the extension and the wheel through maturin)
# compiles our two crates with clippy-driver, a drop-in rustc that also lints, as cargo's
# wrapper for workspace members only (dependencies compile with rustc). One build graph thus
# serves all of them, the lint included: the dependencies compile once and never a second time
# in check mode, as `cargo clippy` would, and each of our crates once. The binding crate is
# linted by maturin's own build of it (the command of `make build`): a plain `cargo build` of
# it differs from maturin's in pyo3's build environment and its link arguments, so it compiled
# the binding (4 of a cold run's minutes) a second time. A build only prints clippy's
# warnings; `make clippy` fails on any (cargo replays a fresh crate's warnings, so the check
# holds for what an earlier command built).
CLIPPY_DRIVER := $(shell command -v clippy-driver 2>/dev/null)
ifneq ($(CLIPPY_DRIVER),)
export RUSTC_WORKSPACE_WRAPPER := $(CLIPPY_DRIVER)
endif
CLIPPY_LOG := $(CACHE)/clippy.log

clippy: venv jar
	@[ -n "$(CLIPPY_DRIVER)" ] || { echo "clippy is required: rustup component add clippy"; exit 1; }
	@mkdir -p $(CACHE)
	cargo build --release -p lance-partitioned-core --all-targets 2>&1 | tee $(CLIPPY_LOG)
	$(BUILD_EXTENSION) 2>&1 | tee -a $(CLIPPY_LOG)
	@! grep -E '^(warning|error)' $(CLIPPY_LOG) || { echo "make clippy: the warnings above fail the lint"; exit 1; }

lint-python: venv
	ruff check python tests benches
	ruff format --check python tests benches
	mypy
	$(MAKE) stubtest

# The extension's type stubs must match the built module (needs the build).
stubtest: build
	LANCE_PARTITIONED_TEST_HOOKS=1 $(PY) -m mypy.stubtest lance_partitioned._native --allowlist python/stubtest-allowlist.txt

test-rust: venv
	cargo test --release -p lance-partitioned-core

# Two test processes, each taking whole files (a file's session fixtures, Spark and the
# servers, start once per process): most tests wait on Spark, a peer process or I/O, so the
# suite takes about a quarter less time than in one process even on 2 cores. Files are handed
# out in collection order (`--no-loadscope-reorder`), which tests/conftest.py makes longest
# first (LONGEST_FIRST), so that no long file runs alone at the end.
test-python: build wheel java-check
	pytest -q -n 2 --dist loadfile --no-loadscope-reorder

# The test command of README.md (and .ci/run).
test: venv
	$(MAKE) lint
	$(MAKE) test-rust
	$(MAKE) test-python

bench-rust: venv
	cargo bench -p lance-partitioned-core --bench kernels

# Regenerates all of BENCHMARKS.md in one run (benches/all.py; under an hour on the project
# machine); bench-quick runs every bench at a small size into build/BENCHMARKS-quick.md.
bench: build java-check
	$(PY) -m pip install -q -r requirements-bench.txt
	$(PY) benches/all.py

bench-quick: build java-check
	$(PY) -m pip install -q -r requirements-bench.txt
	$(PY) benches/all.py --quick

java-check:
	@JAVA="$${JAVA_HOME:+$$JAVA_HOME/bin/}java"; \
	command -v "$$JAVA" >/dev/null || { echo "Java 17+ is required for Spark (apt-get install openjdk-17-jre-headless)"; exit 1; }; \
	v=$$("$$JAVA" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1); \
	[ "$${v:-0}" -ge 17 ] || { echo "Spark needs Java 17+, found $$("$$JAVA" -version 2>&1 | head -1)"; exit 1; }; \
	echo "java $$v ($${JAVA_HOME:-java on PATH})"

# The main job: a Spark ingest pipeline on a local namespace (see python/lance_partitioned/demo.py).
demo: build java-check
	$(PY) -m lance_partitioned.demo

fmt: venv
	cargo fmt --all
	ruff format python tests benches
	ruff check --fix python tests benches

# The build settings of every cargo command here, as shell exports: a cargo run by hand with
# them shares the graph (`eval "$$(make -s cargo-env)"`); without them the next make rebuilds.
CARGO_ENV_VARS := CARGO_TARGET_DIR PROTOC PYO3_PYTHON CARGO_BUILD_TARGET RUSTC_WORKSPACE_WRAPPER \
	CC_x86_64_unknown_linux_gnu CXX_x86_64_unknown_linux_gnu AR_x86_64_unknown_linux_gnu \
	RANLIB_x86_64_unknown_linux_gnu CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER \
	CARGO_ZIGBUILD_ZIG_COMMAND CARGO_ZIGBUILD_ZIG_COMMAND_ARGS

cargo-env:
	@$(foreach v,$(CARGO_ENV_VARS),$(if $($(v)),printf 'export %s=%q\n' $(v) "$($(v))";))

clean:
	rm -rf $(VENV) python/lance_partitioned/*.so python/lance_partitioned/jars
