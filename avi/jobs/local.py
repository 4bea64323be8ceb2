"""The local executor: index builds and questions in two bounded thread pools of one process.

Index builds and questions are separate stages (issue 9): a video's questions are
queued as soon as its index is ready, so agent turns on one video overlap the
captioning of the next. ``concurrency`` bounds the questions in flight against the
configured endpoints (vLLM batches concurrent requests; the embedded llama.cpp server
answers one at a time, so on the cpu profile concurrency only overlaps tool and
index work with model time). Records are handed to ``emit`` by the calling thread only.
"""

from __future__ import annotations

import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Callable

from avi.backends import Backends
from avi.config import Settings
from avi.jobs.work import TransientError, VideoJob, answer_job_question, failed_record, index_video


def with_retries(fn: Callable, retries: int, backoff_s: float = 2.0):
    """Call ``fn()``; on :class:`TransientError` retry up to ``retries`` more times (backoff 2 s, 4 s, …).

    Returns:
        (result, attempts) — or raises the last TransientError.
    """
    for attempt in range(retries + 1):
        try:
            return fn(), attempt + 1
        except TransientError:
            if attempt == retries:
                raise
            time.sleep(backoff_s * (attempt + 1))
    raise AssertionError("unreachable")  # pragma: no cover


class LocalExecutor:
    """Run a job in this process.

    Args:
        settings: the job's settings (endpoints, paths).
        concurrency: questions answered at once (>= 1).
        index_workers: index builds at once (>= 1).
        retries: extra attempts for a transient failure (server unreachable or timing out).
        stages: what an index build covers: ``"all"`` (``avi eval``) or ``"search"`` (``avi batch``: the LLM
            stages are built by the first question whose tool needs one; :func:`avi.jobs.work.index_video`).
    """

    name = "local"

    def __init__(self, settings: Settings, *, concurrency: int = 1, index_workers: int = 1, retries: int = 2,
                 stages: str = "all"):
        self.settings = settings
        self.stages = stages
        self.concurrency = max(1, concurrency)
        self.index_workers = max(1, index_workers)
        self.retries = max(0, retries)

    def run(self, jobs: list[VideoJob], traces_dir: Path, emit: Callable[[dict], None],
            on_index: Callable[[dict], None]) -> None:
        """Index every video of ``jobs`` and answer its questions; ``emit`` gets one record per question,
        ``on_index`` one event per video."""
        backends = Backends(self.settings)
        index_pool = ThreadPoolExecutor(self.index_workers, thread_name_prefix="avi-index")
        question_pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="avi-question")
        pending: dict[Future, tuple[str, object]] = {}
        try:
            if any(j.questions for j in jobs):
                backends.llm  # noqa: B018 - start or reach the orchestrator once, before any thread needs it
            for job in jobs:
                pending[index_pool.submit(self._index, job, backends)] = ("index", job)
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    kind, item = pending.pop(fut)
                    if kind == "index":
                        prepared, event = fut.result()
                        on_index(event)
                        for q in item.questions:
                            if prepared is None:
                                emit(failed_record(q, f"index: {event['error']}", "index"))
                            else:
                                pending[question_pool.submit(self._answer, q, prepared, backends, traces_dir)] = \
                                    ("question", q)
                    else:
                        emit(fut.result())
        finally:
            index_pool.shutdown(wait=False, cancel_futures=True)
            question_pool.shutdown(wait=False, cancel_futures=True)
            backends.close()

    def _index(self, job: VideoJob, backends: Backends):
        try:
            (prepared, event), attempts = with_retries(
                lambda: index_video(job, self.settings, backends, stages=self.stages), self.retries)
            event["attempts"] = attempts
            return prepared, event
        except TransientError as exc:
            return None, {"video": str(job.video), "status": "failed", "error": f"transient, after "
                          f"{self.retries + 1} attempts: {exc}", "index_dir": None, "attempts": self.retries + 1}

    def _answer(self, q, prepared, backends: Backends, traces_dir: Path) -> dict:
        try:
            rec, attempts = with_retries(
                lambda: answer_job_question(q, prepared, self.settings, backends, traces_dir, self.stages),
                self.retries)
            rec["attempts"] = attempts
            rec["executor"] = self.name
            return rec
        except TransientError as exc:
            rec = failed_record(q, f"transient, after {self.retries + 1} attempts: {exc}", "question")
            rec["attempts"] = self.retries + 1
            rec["executor"] = self.name
            return rec
