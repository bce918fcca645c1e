#!/usr/bin/env bash
# Browser tests of the Guest Board (called by `make test`): node's test runner with
# playwright-core driving Debian's chromium against an emulated home (needs root).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d node_modules/playwright-core ]; then
  echo "ui: playwright-core missing (make deps runs npm install in tests/)" >&2
  exit 1
fi
# Under CI=true or HOMEWORK_REQUIRE_ALL=1 a skipped test fails the run (ui/require_all.mjs, a
# second reporter beside the usual one: spec on a terminal, TAP otherwise).
reporters=()
if [[ "${CI:-}" =~ ^(true|1|yes)$ || "${HOMEWORK_REQUIRE_ALL:-}" = 1 ]]; then
  if [ -t 1 ]; then usual=spec; else usual=tap; fi
  reporters=(--test-reporter="$usual" --test-reporter-destination=stdout
             --test-reporter=./ui/require_all.mjs --test-reporter-destination=stderr)
fi
# Arguments: only these test files, relative to tests/ (e.g. ui/usage_charts.test.mjs).
exec node --test --test-concurrency=1 --test-timeout=600000 "${reporters[@]}" "${@:-ui/}"
