"""Run a job (many questions over many videos) with resume, one writer and a summary.

The runner is what ``avi batch`` and ``avi eval`` share: it writes the job file, skips
questions the results file already has, hands the rest, grouped per video, to an
executor (local threads or Ray), appends each record as it arrives (after an optional
``grade`` hook adds correctness), shows progress with an ETA, and returns a summary.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable

from avi.errors import InputError
from avi.jobs.keys import answer_keys
from avi.jobs.results import ResultsFile, write_job
from avi.jobs.spec import JobQuestion
from avi.jobs.work import group_by_video


def traces_dir_for(results: Path) -> Path:
    """Traces of a job live next to its results: ``results.jsonl`` -> ``results.traces/``."""
    return results.with_name(results.name.rsplit(".", 1)[0] + ".traces")


def check_unique(questions: list[JobQuestion]) -> None:
    """Raises InputError when two questions share a qid (the resume key)."""
    seen: set[str] = set()
    for q in questions:
        if q.qid in seen:
            raise InputError(f"two questions have the id {q.qid!r}: ids must be unique (they are the resume key)")
        seen.add(q.qid)


def summarize(records: dict[str, dict], questions: list[JobQuestion], *, seconds: float | None = None,
              index_events: list[dict] | None = None) -> dict:
    """Counts and per-question averages over the job's records.

    Returns:
        ``questions`` (in the job), ``done`` (status ok), ``failed``, ``missing`` (no record),
        ``frames_per_question`` / ``tokens_per_question`` / ``agent_seconds_per_question`` (means
        over done ones), and, when given, ``seconds`` (wall time of this run), ``questions_per_hour``
        (answered in this run) and ``index_minutes_per_video_minute`` (index builds of this run).
    """
    ids = {q.qid for q in questions}
    recs = [r for q, r in records.items() if q in ids]
    ok = [r for r in recs if r.get("status") == "ok"]
    out = {"questions": len(ids), "done": len(ok), "failed": sum(1 for r in recs if r.get("status") != "ok"),
           "missing": len(ids) - len(recs)}
    if ok:
        out["frames_per_question"] = round(sum(r.get("frames") or 0 for r in ok) / len(ok), 1)
        out["tokens_per_question"] = round(sum(r.get("tokens") or 0 for r in ok) / len(ok), 1)
        out["agent_seconds_per_question"] = round(
            sum((r.get("seconds") or {}).get("agent", 0.0) for r in ok) / len(ok), 2)
    if seconds is not None:
        out["seconds"] = round(seconds, 1)
    if index_events:
        built = [e for e in index_events if e.get("status") == "ok" and e.get("duration_s")]
        video_min = sum(e["duration_s"] for e in built) / 60
        if video_min > 0:
            out["index_minutes_per_video_minute"] = round(sum(e.get("seconds", 0) for e in built) / 60 / video_min, 3)
        out["videos_failed"] = sum(1 for e in index_events if e.get("status") != "ok")
    return out


def run_job(questions: list[JobQuestion], out: Path, executor, *, kind: str, source: dict,
            grade: Callable[[JobQuestion, dict], dict] | None = None, retry_failed: bool = False,
            progress: bool = True, settings=None) -> dict:
    """Answer every question of the job not yet in ``out``; append one line per question.

    Args:
        questions: the job (qids unique).
        out: the results ``.jsonl`` (its job file and traces folder go next to it).
        executor: a :class:`~avi.jobs.local.LocalExecutor` or :class:`~avi.jobs.ray_executor.RayExecutor`.
        kind: ``batch`` or ``eval:<benchmark>`` (stored in the job file; a resume must match).
        source: where the job came from (manifest path, options), stored in the job file.
        grade: adds fields (e.g. ``correct``) to each record before it is written.
        retry_failed: also redo questions whose last record failed.
        settings: the settings the questions are answered with (default: ``executor.settings``); part of each
            record's answer key, so a question answered under other settings that change answers, or whose
            text, options, answer type or video changed, is asked again (:mod:`avi.jobs.keys`).

    Returns:
        :func:`summarize` of the whole results file, plus ``skipped`` (already finished before
        this run) and ``answered`` (this run).

    Raises:
        InputError: duplicate qids, or ``out`` belongs to another job.
    """
    from tqdm import tqdm

    if not questions:
        raise InputError("the job has no questions")
    check_unique(questions)
    out = Path(out)
    write_job(out, kind, source, questions)
    results = ResultsFile(out)
    if results.dropped_partial:
        print(f"avi: note: {out} ended in a line torn by a kill; it was moved to {out.name}.partial",
              file=sys.stderr)
    keys = answer_keys(questions, settings if settings is not None else getattr(executor, "settings", None))
    finished = results.finished(retry_failed=retry_failed, keys=keys,
                                questions={q.qid: q.question for q in questions})
    todo = [q for q in questions if q.qid not in finished]
    stale = len(results.finished(retry_failed=retry_failed) - finished)
    if stale and progress:
        print(f"avi: note: {stale} question(s) in {out.name} were answered before with another question text, "
              f"video or settings; asking them again", file=sys.stderr)
    jobs = group_by_video(todo)
    by_qid = {q.qid: q for q in questions}
    index_events: list[dict] = []
    answered = 0
    disable = not progress
    vbar = tqdm(total=len(jobs), desc="index", unit="video", file=sys.stderr, disable=disable, position=0,
                dynamic_ncols=True)
    qbar = tqdm(total=len(todo), desc="questions", unit="q", file=sys.stderr, disable=disable, position=1,
                dynamic_ncols=True)

    def on_index(event: dict) -> None:
        index_events.append(event)
        vbar.update(1)
        if event.get("status") != "ok":
            vbar.write(f"avi: video failed: {event['video']}: {event.get('error')}")

    def emit(record: dict) -> None:
        nonlocal answered
        q = by_qid[str(record["qid"])]
        record["key"] = keys[q.qid]
        if grade is not None:
            record.update(grade(q, record))
        results.append(record)
        answered += 1
        qbar.update(1)
        qbar.set_postfix(failed=sum(1 for r in results.records.values() if r.get("status") != "ok"))

    t0 = time.perf_counter()
    try:
        if jobs:
            executor.run(jobs, traces_dir_for(out), emit, on_index)
    finally:
        vbar.close()
        qbar.close()
    summary = summarize(results.records, questions, seconds=time.perf_counter() - t0, index_events=index_events)
    summary["skipped"] = len(questions) - len(todo)
    summary["answered"] = answered
    if answered and summary["seconds"] > 0:
        summary["questions_per_hour"] = round(answered / summary["seconds"] * 3600, 1)
    return summary
