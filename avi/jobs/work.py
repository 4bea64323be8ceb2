"""The two units of work of a job, shared by every executor: index one video, answer one question.

Both return plain dicts (JSON-ready, picklable for Ray) and never raise for a problem
of the input: a video that cannot be indexed or a question the agent fails on becomes a
record with ``status: "failed"`` and its ``error``. Only *transient* failures (the
model server unreachable or timing out) raise :class:`TransientError`, so that an
executor can retry them.
"""

from __future__ import annotations

import re
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from avi.backends import Backends
from avi.config import Settings
from avi.errors import AviError, InputError, LLMUnavailableError
from avi.jobs.spec import JobQuestion
from avi.pipeline import PreparedVideo, answer, prepare


class TransientError(Exception):
    """A failure worth retrying: the model server went away or timed out."""


@dataclass
class VideoJob:
    """One video and the questions about it.

    Attributes:
        video: path of the video file.
        subtitles: its subtitle file, or None.
        questions: the questions still to answer.
        subtitles_offset_s: seconds to subtract from the subtitle cues (``meta["subtitle_offset_s"]``).
    """

    video: Path
    subtitles: Path | None = None
    questions: list[JobQuestion] = field(default_factory=list)
    subtitles_offset_s: float = 0.0


def group_by_video(questions: list[JobQuestion]) -> list[VideoJob]:
    """Questions grouped per (video, subtitles), in first-seen order."""
    groups: dict[tuple[str, str, float], VideoJob] = {}
    for q in questions:
        offset = subtitle_offset(q)
        key = (str(q.video), str(q.subtitles or ""), offset)
        if key not in groups:
            groups[key] = VideoJob(video=q.video, subtitles=q.subtitles, subtitles_offset_s=offset)
        groups[key].questions.append(q)
    return list(groups.values())


def subtitle_offset(q: JobQuestion) -> float:
    """The question's subtitle offset in seconds (``meta["subtitle_offset_s"]``; 0 without subtitles)."""
    try:
        return float(q.meta.get("subtitle_offset_s") or 0.0) if q.subtitles else 0.0
    except (TypeError, ValueError):
        return 0.0


def video_settings(settings: Settings, subtitles: Path | None, offset_s: float = 0.0) -> Settings:
    """``settings`` with the video's subtitle file (and its offset in seconds), when it has one."""
    if not subtitles:
        return settings
    return settings.model_copy(update={"subtitles": subtitles, "subtitles_offset_s": float(offset_s or 0.0)})


def _is_transient(exc: BaseException) -> bool:
    if isinstance(exc, (LLMUnavailableError, TransientError)):
        return True
    try:
        import openai

        return isinstance(exc, (openai.APIConnectionError, openai.APITimeoutError))
    except ImportError:  # pragma: no cover
        return False


def _one_line(exc: BaseException) -> str:
    text = str(exc) if isinstance(exc, AviError) else f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())[:600]


def index_video(job: VideoJob, settings: Settings, backends: Backends, *,
                progress: bool = False, stages: str = "all") -> tuple[PreparedVideo | None, dict]:
    """Build (or reuse, or resume) the index of ``job.video``.

    ``stages``: ``"all"`` (``avi eval``) builds every stage; ``"search"`` (``avi batch``) leaves the LLM stages
    pending, built by the first question whose tool needs one (:mod:`avi.index.lazy`).

    Returns:
        (the prepared video or None, an event dict: ``video``, ``status`` ok/failed, ``error``,
        ``index_dir``, ``seconds``, ``duration_s``).

    Raises:
        TransientError: the orchestrator (used by the graph and summary stages) is unreachable.
    """
    t0 = time.perf_counter()
    event = {"video": str(job.video), "status": "ok", "error": None, "index_dir": None, "duration_s": None}
    try:
        prepared = prepare(job.video, video_settings(settings, job.subtitles, job.subtitles_offset_s), backends,
                           progress=progress, stages=stages)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # noqa: BLE001 - recorded, the batch goes on
        if _is_transient(exc):
            raise TransientError(_one_line(exc)) from None
        event.update(status="failed", error=_one_line(exc), seconds=round(time.perf_counter() - t0, 3))
        if not isinstance(exc, AviError):
            event["traceback"] = traceback.format_exc(limit=6)
        return None, event
    event.update(index_dir=str(prepared.index.path), duration_s=prepared.info.duration_s,
                 seconds=round(time.perf_counter() - t0, 3))
    return prepared, event


def trace_file(traces_dir: Path, qid: str) -> Path:
    """``<traces_dir>/<qid made file-safe>.json`` (stable: a retried question overwrites its trace)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", qid).strip("._") or "q"
    return traces_dir / f"{safe[:120]}.json"


def failed_record(q: JobQuestion, error: str, stage: str) -> dict:
    """The record of a question that could not be answered (``stage``: index or question)."""
    return {"qid": q.qid, "video": str(q.video), "question": q.question, "status": "failed",
            "stage": stage, "error": error, "answer": None, "choice": None, "choices": None, "interval": None,
            "order": None, "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def answer_job_question(q: JobQuestion, prepared: PreparedVideo, settings: Settings, backends: Backends,
                        traces_dir: Path, stages: str = "all") -> dict:
    """Answer one question on its prepared video; write its trace; return its record. ``stages``: what the
    index builds of a question's other videos cover (:func:`index_video`).

    Raises:
        TransientError: the orchestrator is unreachable or timed out (the executor may retry).
    """
    s = video_settings(settings, q.subtitles, subtitle_offset(q))
    if q.answer_type != "auto":
        s = s.model_copy(update={"answer_type": q.answer_type})
    try:
        result = answer_many(q, prepared, s, backends, stages=stages) if q.videos \
            else answer(prepared, q.question, s, backends)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # noqa: BLE001 - recorded, the batch goes on
        if _is_transient(exc):
            raise TransientError(_one_line(exc)) from None
        rec = failed_record(q, _one_line(exc), "question")
        if not isinstance(exc, AviError):
            rec["traceback"] = traceback.format_exc(limit=6)
        return rec
    trace = result.trace
    path = trace.write(trace_file(traces_dir, q.qid))
    totals = trace.totals()
    return {"qid": q.qid, "video": str(q.video), "question": q.question, "status": "ok", "error": None,
            "answer": result.answer, "choice": result.choice, "choices": result.choices,
            "interval": result.interval, "order": result.order, "answer_type": result.answer_type,
            "note": result.note, "cannot_tell": result.cannot_tell, "choice_method": result.choice_method,
            "rules": result.rules, "route": (getattr(trace, "memory", None) or {}).get("route"),
            "evidence": result.evidence,
            "trace": str(path), "index_dir": str(prepared.index.path),
            "duration_s": prepared.info.duration_s,
            "iterations": trace.iterations, "forced": trace.forced, "seconds": trace.seconds,
            "frames": totals.get("frames_spent"), "tokens": totals.get("prompt_tokens", 0)
            + totals.get("completion_tokens", 0), "telemetry": totals,
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **({"videos": [str(v) for v in q.videos], "answer_videos": getattr(trace, "answer_videos", None)}
               if q.videos else {})}


def answer_many(q: JobQuestion, prepared: PreparedVideo, settings: Settings, backends: Backends, *,
                stages: str = "all"):
    """Answer a question over several videos (``q.videos``; issue 21): the first is ``prepared`` (the runner's
    video), the others are prepared here (their indexes built, reused or resumed as for one video, ``stages``
    as :func:`index_video`).

    Raises:
        InputError: fewer than two videos, one unreadable.
        LLMUnavailableError: the orchestrator cannot be reached.
    """
    from avi.videos.naming import video_names
    from avi.videos.pipeline import answer_many as run_many

    paths = list(q.videos or [])
    first = Path(prepared.info.path).resolve()
    ready = {name: prepared if Path(p).resolve() == first else prepare(p, settings, backends, progress=False,
                                                                       stages=stages)
             for name, p in zip(video_names(paths), paths)}
    if len(ready) < 2:
        raise InputError("a question over several videos needs at least two")
    return run_many(ready, q.question, settings, backends)
