"""Requests from several threads run together (issue 37, item 5): the in-process VLM decodes several clips in one
``generate`` instead of one clip at a time, with no change to its callers.

The index build captions ``concurrency`` clips at once with threads (:func:`avi.index.stages._stage_captions`); each
thread calls ``generate`` and blocks. :class:`MicroBatcher` gathers the requests that arrive together: the first
caller to find no batch running leads, waits up to ``wait_s`` for more (or until ``max_batch`` are queued), runs
them all in one call and hands every caller its own result (or the batch's exception). One batch runs at a time.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import Any, Callable, Sequence


class MicroBatcher:
    """Runs ``run_batch`` over requests submitted from several threads, up to ``max_batch`` at a time.

    Args:
        run_batch: ``requests -> results`` (same length, same order); an exception fails every request of that
            batch.
        max_batch: most requests in one call (>= 1; 1 = one at a time, in arrival order).
        wait_s: how long a leader waits for more requests before it runs a batch that is not full (seconds).

    Attributes:
        max_batch: most requests in one call, read as each batch is gathered: ``run_batch`` may lower it (the
            in-process VLM does when a batch runs out of GPU memory) and the next batches are no larger.
        batches: sizes of the batches run so far, in order (for stats and tests).
    """

    def __init__(self, run_batch: Callable[[Sequence[Any]], Sequence[Any]], max_batch: int, wait_s: float = 0.02):
        self.run_batch = run_batch
        self.max_batch = max(1, int(max_batch))
        self.wait_s = max(0.0, float(wait_s))
        self.batches: list[int] = []
        self._pending: list[tuple[Any, Future]] = []
        self._running = False
        self._cond = threading.Condition()

    def submit(self, request: Any) -> Any:
        """The result of ``request``, run in a batch with whatever other requests are waiting (blocks).

        Raises:
            whatever ``run_batch`` raised for the batch this request was in.
        """
        fut: Future = Future()
        with self._cond:
            self._pending.append((request, fut))
            self._cond.notify_all()
        while not fut.done():
            with self._cond:
                if fut.done():
                    break
                if self._running:
                    self._cond.wait(0.05)
                    continue
                self._running = True  # this thread leads the next batch
                deadline = time.monotonic() + self.wait_s
                while len(self._pending) < self.max_batch and (left := deadline - time.monotonic()) > 0:
                    self._cond.wait(left)
                batch, self._pending = self._pending[:self.max_batch], self._pending[self.max_batch:]
            try:
                self._run(batch)
            finally:
                with self._cond:
                    self._running = False
                    self._cond.notify_all()
        return fut.result()

    def _run(self, batch: list[tuple[Any, Future]]) -> None:
        self.batches.append(len(batch))
        try:
            results = list(self.run_batch([r for r, _ in batch]))
            if len(results) != len(batch):
                raise RuntimeError(f"a batch of {len(batch)} requests gave {len(results)} results")
        except BaseException as exc:  # noqa: BLE001 - handed to every caller of the batch
            for _, fut in batch:
                fut.set_exception(exc)
            return
        for (_, fut), res in zip(batch, results):
            fut.set_result(res)
