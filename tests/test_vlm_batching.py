"""MicroBatcher (avi/backends/vlm/batching.py, issue 37): requests made at once from threads run in one call, each
caller gets its own result, a failing batch fails each of its callers, and max_batch 1 is one at a time."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from avi.backends.vlm.batching import MicroBatcher


def _slow_double(calls):
    def run(reqs):
        calls.append(list(reqs))
        time.sleep(0.05)
        return [2 * r for r in reqs]
    return run


def test_requests_made_together_run_together_and_get_their_own_results():
    calls = []
    b = MicroBatcher(_slow_double(calls), max_batch=4, wait_s=0.05)
    with ThreadPoolExecutor(10) as pool:
        out = list(pool.map(b.submit, range(10)))
    assert out == [2 * i for i in range(10)]
    assert sorted(r for c in calls for r in c) == list(range(10))
    assert all(len(c) <= 4 for c in calls) and max(len(c) for c in calls) >= 2 and b.batches == [len(c) for c in calls]


def test_one_at_a_time_with_max_batch_one():
    calls = []
    b = MicroBatcher(_slow_double(calls), max_batch=1, wait_s=0.0)
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(b.submit, range(4))) == [0, 2, 4, 6]
    assert b.batches == [1, 1, 1, 1]
    assert b.submit(5) == 10  # one caller alone does not wait for company beyond wait_s


def test_a_failing_batch_fails_each_of_its_callers_and_the_next_batch_runs():
    failed = threading.Event()

    def run(reqs):
        if not failed.is_set():
            failed.set()
            time.sleep(0.05)
            raise RuntimeError("out of memory")
        return list(reqs)

    b = MicroBatcher(run, max_batch=8, wait_s=0.05)
    with ThreadPoolExecutor(3) as pool:
        futs = [pool.submit(b.submit, i) for i in range(3)]
        errors = [f.exception() for f in futs]
    assert all(isinstance(e, RuntimeError) for e in errors[:b.batches[0]])
    assert b.submit(7) == 7
    with pytest.raises(RuntimeError, match="gave 0 results"):
        MicroBatcher(lambda reqs: [], max_batch=2).submit(1)
