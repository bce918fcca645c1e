#!/bin/sh
# Debian's Chromium inside the namespace of the household's laptop (a LAN device of the
# emulated home, tests/ui/home_driver.py), for lib.mjs's launch(): playwright talks to it
# over a pipe, which the exec keeps.
exec ip netns exec "$HOMEWORK_VIEW_NS" "${CHROMIUM:-/usr/bin/chromium}" "$@"
