# Homework router. The two commands: `make run` and `make test`.
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
PYTEST := $(VENV)/bin/pytest
export PYTHONPATH := $(CURDIR)/nox-modules:$(CURDIR)/hwdb/python:$(CURDIR)/tests

.PHONY: all deps build run test test-hwdb test-dnsd test-unit test-e2e test-ui image image-test bench clean

all: build

deps:
	@bash scripts/deps.sh

build: deps

# The router on this machine with an emulated home; Ctrl-C tears it down.
run: deps
	@bash scripts/run-home.sh

# Every test: hwdb and dnsd (cargo), controller units, end to end on real OVS, browser, image boot.
test: deps
	@$(MAKE) --no-print-directory test-hwdb test-dnsd test-unit test-e2e test-ui image-test

test-hwdb:
	@if [ -f hwdb/Makefile ]; then $(MAKE) --no-print-directory -C hwdb test; fi

test-dnsd:
	cd dnsd && cargo test --release -q

test-unit:
	$(PYTEST) -q tests/unit

test-e2e:
	$(PYTEST) -q tests/e2e

test-ui:
	@if [ -d tests/ui ]; then bash tests/ui/run.sh; fi

image: deps
	@bash image/build.sh

image-test: deps
	@if [ -f image/boot-test.sh ]; then bash image/boot-test.sh; fi

bench: deps
	@bash scripts/bench.sh

clean:
	@bash scripts/teardown-stale.sh || true
	rm -rf out .pytest_cache test-artifacts
	@if [ -f hwdb/Cargo.toml ]; then (cd hwdb && cargo clean); fi
	@if [ -f dnsd/Cargo.toml ]; then (cd dnsd && cargo clean); fi
