#!/usr/bin/env bash
# Set up (with test extras) and run the whole test suite, slow tests included.
# The suite runs in a network namespace with only loopback when the machine allows it
# (unshare -rn); in any case conftest.py refuses non-loopback connections in-process.
# Extra arguments go to pytest, e.g. scripts/test.sh -m "not slow".
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
export AVI_REQUIRE_SAMPLES=1
PYTEST=(.venv/bin/python -m pytest "$@")
if command -v unshare >/dev/null && command -v ip >/dev/null && unshare -rn true 2>/dev/null; then
  echo "[test] running pytest with the network unshared (loopback only)" >&2
  exec unshare -rn sh -c 'ip link set lo up && exec "$@"' sh "${PYTEST[@]}"
fi
echo "[test] unshare not available: running pytest with the in-process network guard only" >&2
exec "${PYTEST[@]}"
