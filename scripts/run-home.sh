#!/usr/bin/env bash
# `make run`: the Homework router (private OVS + controller) with an emulated home of
# three devices running dhclient, udhcpc and dhcpcd. Ctrl-C tears it all down.
# HOMEWORK_RUN_SECONDS=N exits by itself after N seconds (smoke test).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
export PYTHONPATH="$REPO/nox-modules:$REPO/hwdb/python:$REPO/tests${PYTHONPATH:+:$PYTHONPATH}"
PY=$REPO/.venv/bin/python
[ -x "$PY" ] || PY=/usr/bin/python3
if [ "$(id -u)" != 0 ]; then
  echo "run-home: needs root (network namespaces, Open vSwitch)" >&2
  exit 1
fi
# Leftovers of an earlier run that was killed hard (only our own hwXXXXX-* names).
bash scripts/teardown-stale.sh >/dev/null 2>&1 || true
exec "$PY" -m homelab.run "$@"
