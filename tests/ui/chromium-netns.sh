#!/bin/sh
# Debian's Chromium inside the emulated home's viewer namespace (tests/homelab/web.py,
# Web.add_viewer), for lib.mjs's launch(): playwright talks to it over a pipe, which the
# exec keeps.
exec ip netns exec "$HOMEWORK_VIEW_NS" "${CHROMIUM:-/usr/bin/chromium}" "$@"
