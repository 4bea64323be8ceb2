#!/usr/bin/env bash
# Set up (with test extras) and run the whole test suite, slow tests included.
# The suite runs in a network namespace with only loopback when the machine allows it
# (unshare -rn); in any case conftest.py refuses non-loopback connections in-process.
# Extra arguments go to pytest, e.g. scripts/test.sh -m "not slow". The slowest tests are listed at the end (CI's log
# shows where its minutes go).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test --gpu-paths --vllm
export AVI_REQUIRE_SAMPLES=1
export AVI_REQUIRE_VLLM=1  # tests/test_vllm_real.py (in the .venv run below) fails instead of skipping without .venv-vllm

offline() {  # run a command with only loopback networking when the machine allows it
  if command -v unshare >/dev/null && command -v ip >/dev/null && unshare -rn true 2>/dev/null; then
    unshare -rn sh -c 'ip link set lo up && exec "$@"' sh "$@"
  else
    echo "[test] unshare not available: the in-process network guard only" >&2
    "$@"
  fi
}

echo "[test] ruff check avi tests (pyproject.toml's settings)" >&2
.venv/bin/ruff check avi tests
echo "[test] cpu profile and everything else (.venv), network unshared" >&2
offline .venv/bin/python -m pytest -m "not gpu_paths" --durations=25 "$@"
echo "[test] gpu-profile code paths on tiny random-weight models (.venv-gpu), network unshared" >&2
offline .venv-gpu/bin/python -m pytest -m gpu_paths --durations=10 "$@"
