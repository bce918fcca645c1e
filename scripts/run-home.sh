#!/usr/bin/env bash
# `make run`: the Homework router (private OVS + controller) with an emulated home of
# three devices running dhclient, udhcpc and dhcpcd. Ctrl-C tears it all down.
# HOMEWORK_RUN_SECONDS=N exits by itself after N seconds (smoke test).
set -euo pipefail
source "$(dirname "$0")/env.sh"
if [ "$(id -u)" != 0 ]; then
  echo "run-home: needs root (network namespaces, Open vSwitch)" >&2
  exit 1
fi
# Leftovers of an earlier run that was killed hard (only our own hwXXXXX-* names).
bash scripts/teardown-stale.sh >/dev/null 2>&1 || true
exec "$PY" -m homelab.run "$@"
