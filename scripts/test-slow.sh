#!/usr/bin/env bash
# `make test` once deps are in place. The image boot test (QEMU under TCG, about 47 minutes beside the rest,
# most of it the guest booting and writing slots) is the longest part, so it starts first
# and runs beside everything else: lint, the cargo and unit tests, then the end-to-end tests
# (two modules at a time) and the browser tests, mostly waiting on timers, DHCP and
# namespaces. They share nothing: the boot test's namespaces, links and taps are its own
# (hwbt-*), each home's are per run, and the browser runs in a namespace of its own whose
# network holds still. The few e2e tests that load the whole machine on purpose
# (@pytest.mark.machine) run last, once the boot test is done. The boot test's output goes
# to a file and is printed at the end. Exit status: non-zero if any part failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
export PYTHONPATH="${PYTHONPATH:-$PWD/nox-modules:$PWD/hwdb/python:$PWD/tests:$PWD/ispedge}"
mkdir -p test-artifacts
LOG=test-artifacts/image-test.log
# At the lowest CPU priority (and best-effort IO, lowest level): the end-to-end tests that
# measure (the controller never stalls under a DNS burst, latency under load) get the
# machine as if alone; QEMU takes what they leave, and its timeouts allow for that.
# The hardware part (other NIC models, a screen with the Guest Board's kiosk, a card
# hot-plugged: image/boot-test-hardware.sh) boots the same image in a VM of its own; it
# starts once the end-to-end tests are done, beside the browser tests and the main part's
# last phases.
HWLOG=test-artifacts/image-test-hardware.log
boot_test() {  # boot_test LOG: make image-test, minus deps (done), in the background
  nice -n 19 ionice -c 2 -n 7 bash image/boot-test.sh >"$1" 2>&1 &
}
boot_test "$LOG"
BOOT=$!
HWBOOT=""
# Ctrl-C or a CI timeout: each boot test's own trap removes its QEMU, namespaces and links.
trap 'kill -TERM $BOOT $HWBOOT 2>/dev/null; wait; exit 130' INT TERM
echo "image boot test started beside the tests below (output: $LOG)"

# Lint, hwdb, dnsd, dhcpd and the controller's unit tests: a failure here ends the run, as
# nothing after them is worth the time when one of them is red.
if ! make --no-print-directory lint test-hwdb test-dnsd test-dhcpd test-unit; then
  kill -TERM "$BOOT" 2>/dev/null; wait "$BOOT"
  echo "make test: lint or unit tests failed (the image boot test was stopped)"
  exit 1
fi

# The end-to-end tests on two workers, a module (and its home) on one of them: most of a
# test's time is waiting on DHCP, timers and daemons starting (the suite alone keeps 0.4 of
# a core busy), so two at a time leave the boot test its core.
echo "[make test +${SECONDS}s] end-to-end tests"
.venv/bin/pytest -q -n 2 --dist loadfile --durations=15 -m "not machine" tests/e2e; E2E=$?
# The hardware part reuses the image the main part built (it waits for that build).
while kill -0 "$BOOT" 2>/dev/null && ! grep -q "accelerator:" "$LOG"; do sleep 5; done
HOMEWORK_BOOT_TEST_ONLY=hardware boot_test "$HWLOG"
HWBOOT=$!
echo "[make test +${SECONDS}s] browser tests (the boot test's hardware part started beside them)"
make --no-print-directory test-ui; UI=$?
echo "[make test +${SECONDS}s] browser tests done; waiting for the image boot test"
wait "$BOOT"; MAIN=$?
wait "$HWBOOT"; HW=$?
IMAGE=$(( MAIN != 0 || HW != 0 ))
trap - INT TERM
echo "[make test +${SECONDS}s] image boot test done"
# The tests that load the whole machine on purpose (@pytest.mark.machine), once it is theirs.
echo "end-to-end tests that need the machine to themselves:"
.venv/bin/pytest -q -m machine tests/e2e; MACHINE=$?
echo "== image boot test (ran beside the tests above) =="
cat "$LOG"
echo "== image boot test, hardware part (beside the main part's last phases) =="
cat "$HWLOG" 2>/dev/null
# CI shows a run's last lines: the boot tests' failed checks go there, whatever their position.
if [ "$IMAGE" -ne 0 ]; then
  echo "image boot test, failed checks:"
  grep -h '^  FAIL' "$LOG" "$HWLOG" 2>/dev/null | sort -u
fi
echo "[make test +${SECONDS}s] make test: e2e exit $E2E, ui exit $UI, image boot test exit $IMAGE, e2e needing the machine exit $MACHINE"
[ "$E2E" -eq 0 ] && [ "$UI" -eq 0 ] && [ "$IMAGE" -eq 0 ] && [ "$MACHINE" -eq 0 ]
