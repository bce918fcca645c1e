#!/usr/bin/env bash
# Remove what earlier emulated-home runs left behind (a SIGKILLed test, a crashed
# `make run`). Touches only our own things:
#   - run directories ${HOMELAB_RUN_ROOT:-/tmp}/homework-hwXXXXX whose owner process
#     (owner.pid) is gone, and the processes named by the pid files inside them;
#   - network namespaces named hwXXXXX-* (our run-id pattern) of such dead runs,
#     and the processes still inside those namespaces.
# A run whose owner is still alive is left alone (use --force to remove it anyway).
set -uo pipefail

ROOT=${HOMELAB_RUN_ROOT:-/tmp}
FORCE=0
[ "${1:-}" = "--force" ] && FORCE=1
ID_RE='^hw[0-9a-f]{5}$'

alive() { [ -n "${1:-}" ] && [ -d "/proc/$1" ] && ! grep -q '^[^)]*) Z' "/proc/$1/stat" 2>/dev/null; }

kill_pid() {  # pid [must-mention]: TERM, then KILL; only if its command line mentions $2
  local pid=$1 mention=${2:-}
  alive "$pid" || return 0
  if [ -n "$mention" ] && ! tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$mention"; then
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 50); do alive "$pid" || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

removed=0
declare -A live_ids=()

# 1. Run directories.
for dir in "$ROOT"/homework-hw?????; do
  [ -d "$dir" ] || continue
  id=${dir##*/homework-}
  [[ "$id" =~ $ID_RE ]] || continue
  owner=$(cat "$dir/owner.pid" 2>/dev/null || true)
  if [ $FORCE = 0 ] && alive "$owner"; then
    live_ids[$id]=1
    echo "teardown-stale: $id is in use by pid $owner, leaving it"
    continue
  fi
  # Daemons we started with pid files (OVS), only if they still run from this dir.
  for pidfile in "$dir"/ovs/run/*.pid "$dir"/*.pid; do
    [ -f "$pidfile" ] || continue
    [ "$pidfile" = "$dir/owner.pid" ] && continue
    kill_pid "$(cat "$pidfile" 2>/dev/null)" "$dir"
  done
done

# 2. Namespaces of dead runs: processes inside them, then the namespaces.
for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
  [[ "$ns" =~ ^(hw[0-9a-f]{5})-(r|i|d[0-9]+|[a-z][a-z0-9]{0,6})$ ]] || continue
  id=${BASH_REMATCH[1]}
  [ -n "${live_ids[$id]:-}" ] && continue
  for pid in $(ip netns pids "$ns" 2>/dev/null); do kill_pid "$pid"; done
  ip netns del "$ns" 2>/dev/null && { echo "teardown-stale: removed namespace $ns"; removed=$((removed + 1)); }
done

# 3. The run directories themselves.
for dir in "$ROOT"/homework-hw?????; do
  [ -d "$dir" ] || continue
  id=${dir##*/homework-}
  [[ "$id" =~ $ID_RE ]] || continue
  [ -n "${live_ids[$id]:-}" ] && continue
  rm -rf "$dir" && { echo "teardown-stale: removed $dir"; removed=$((removed + 1)); }
done
echo "teardown-stale: done ($removed removed)"
