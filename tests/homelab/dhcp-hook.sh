#!/bin/sh
# Event hook for the emulated home's DHCP clients (dhclient, udhcpc, dhcpcd).
# Records the client's environment for this event (one NUL-separated file per
# event, read back by homelab.Device.leases()), then runs the client's own script
# so the interface is configured exactly as on a real machine.
# Called through a per-device wrapper that sets HOOK_CLIENT, HOOK_EVENTS, HOOK_NEXT.
set -u
ts=$(date +%s.%N)
f="$HOOK_EVENTS/$ts-$$"
HOOK_TIME=$ts HOOK_ARG1=${1:-} env -0 >"$f.tmp" 2>/dev/null && mv "$f.tmp" "$f.env"
exec "$HOOK_NEXT" "$@"
