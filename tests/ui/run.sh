#!/usr/bin/env bash
# Browser tests of the Guest Board (called by `make test`): node's test runner with
# playwright-core driving Debian's chromium against an emulated home (needs root).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d node_modules/playwright-core ]; then
  echo "ui: playwright-core missing (make deps runs npm install in tests/)" >&2
  exit 1
fi
# Arguments: only these test files, relative to tests/ (e.g. ui/usage_charts.test.mjs).
exec node --test --test-concurrency=1 --test-timeout=600000 "${@:-ui/}"
