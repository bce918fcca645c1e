# shellcheck shell=bash
# Sourced by the scripts that run our Python from a checkout: go to the repository root,
# put the controller, the hwdb client and the emulated home on PYTHONPATH, pick the venv.
cd "$(dirname "${BASH_SOURCE[0]}")/.." || return 1
REPO=$PWD
export PYTHONPATH="$REPO/nox-modules:$REPO/hwdb/python:$REPO/tests:$REPO/ispedge${PYTHONPATH:+:$PYTHONPATH}"
PY=$REPO/.venv/bin/python
[ -x "$PY" ] || PY=/usr/bin/python3
