# Homework router. The two commands: `make run` and `make test`.
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
PYTEST := $(VENV)/bin/pytest
export PYTHONPATH := $(CURDIR)/nox-modules:$(CURDIR)/hwdb/python:$(CURDIR)/tests:$(CURDIR)/ispedge

.PHONY: agent-deb all deps build run test test-hwdb test-dnsd test-dhcpd test-unit test-e2e test-ui image image-test image-test-powercut bench \
        clean openapi docs lint lint-python lint-rust lint-shell lint-js

all: build

deps:
	@bash scripts/deps.sh

build: deps agent-deb

# The end-host agent's Debian package (hostagent/): out/homework-agent_<version>_all.deb
agent-deb:
	@bash hostagent/build-deb.sh out

# The router on this machine with an emulated home; Ctrl-C tears it down.
run: deps
	@bash scripts/run-home.sh

# Every test: the image boot test starts first and runs beside the rest (scripts/test-slow.sh):
# lint, hwdb, dnsd and dhcpd (cargo), controller units; then end to end on real OVS and the
# browser tests; last the few that need the machine to themselves.
test: deps
	@bash scripts/test-slow.sh

test-hwdb:
	@$(MAKE) --no-print-directory -C hwdb test

test-dnsd:
	cd dnsd && cargo test --release -q

test-dhcpd:
	cd dhcpd && cargo test --release -q

test-unit:
	$(PYTEST) -q tests/unit

test-e2e:
	$(PYTEST) -q tests/e2e

test-ui:
	bash tests/ui/run.sh

image: deps
	@bash image/build.sh

image-test: deps
	bash image/boot-test.sh

# The wide matrix of power cuts at boot (image/README.md, "Power cuts at boot"): a cut every
# few seconds of two boots and in every marking step, each booted again; longer than make test's budget.
image-test-powercut: deps
	HOMEWORK_POWERCUT=wide bash image/boot-test.sh

# Static checks: ruff (pyflakes, pycodestyle errors, bugbear, pyupgrade: ruff.toml) on the
# Python and mypy over the controller (mypy.ini), clippy with warnings as errors on the Rust
# crates, shellcheck on the shell scripts, eslint (eslint.config.mjs) on the Guest Board's
# scripts. The first step of `make test`.
lint: lint-python lint-rust lint-shell lint-js

lint-python:
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

lint-js:
	tests/node_modules/.bin/eslint guestboard-ui

lint-rust:
	cd hwdb && cargo clippy --release -q --all-targets -- -D warnings
	cd dnsd && cargo clippy --release -q --all-targets -- -D warnings
	cd dhcpd && cargo clippy --release -q --all-targets -- -D warnings

SHELL_SCRIPTS = $(wildcard scripts/*.sh image/*.sh tests/homelab/*.sh hostagent/*.sh) $(shell grep -lsE '^\#!/(usr/)?bin/(env )?(ba)?sh' image/guest/* 2>/dev/null)
lint-shell:
	shellcheck -x --severity=warning $(SHELL_SCRIPTS)

# The ws.v1 OpenAPI document, generated from the route declarations (docs/api.md), with the
# board's js/routes.js and the changelog's unnamed additions.
openapi:
	$(PY) -m homework.components.api.openapi --write

# The generated parts of docs/ (config.md; architecture.md's events and manifests tables).
docs:
	$(PY) -m homework.gendocs

bench: deps
	@bash scripts/bench.sh

clean:
	@bash scripts/teardown-stale.sh || true
	rm -rf out .pytest_cache test-artifacts
	cd hwdb && cargo clean
	cd dnsd && cargo clean
	cd dhcpd && cargo clean
