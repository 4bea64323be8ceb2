"""One question over several videos, end to end: each video probed and indexed (built, reused or resumed) as
for one video, then :class:`avi.videos.agent.MultiAgent`, then the trace (issue 21)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from avi.agent.loop import AgentResult
from avi.backends import Backends
from avi.config import Settings
from avi.errors import InputError
from avi.pipeline import PreparedVideo, QuestionTrace, orchestrator, prepare, question_fallbacks, trace_llm, trace_settings
from avi.prompts import PromptLibrary
from avi.questions import clean_question
from avi.video.decode import VideoReader, probe
from avi.videos.context import multi_context
from avi.videos.naming import video_names


@dataclass
class MultiTrace(QuestionTrace):
    """The trace of a question over several videos.

    ``video`` holds the paths joined by ``" | "``; every evidence range is ``[start_s, end_s, video name]``;
    each tool step names its video in ``arguments["video"]`` or, for a search over all videos, in every row of
    ``observation_data`` (and ``observation_data["per_video"]``).

    Attributes:
        videos: one entry per video, in the listed order: ``name``, ``path``, ``sha256``, ``index_dir``,
            ``duration_s``, ``fallbacks``.
        answer_videos: the video name(s) of a ``video`` / ``videos`` / ``video_order`` answer, else None.
        shared_people: the people whose faces match across the videos (:func:`avi.videos.people.shared_people`:
            each ``{"people": [{"video", "subject", "spans"}], "face_cosine"}``), as the question message told them.
    """

    videos: list[dict] = field(default_factory=list)
    answer_videos: list[str] | None = None
    shared_people: list[dict] = field(default_factory=list)


def prepare_many(paths: list[Path], settings: Settings, backends: Backends, *, rebuild_index: bool = False,
                 progress: bool = True, stages: str = "all") -> dict[str, PreparedVideo]:
    """Probe and index every video (:func:`avi.pipeline.prepare`, one after the other); name -> prepared video,
    names by :func:`avi.videos.naming.video_names`. ``stages="search"`` leaves every video's LLM stages for
    later (:func:`avi.index.build.ensure_index`).

    Raises:
        InputError: fewer than two videos, or one is unreadable (the message names it).
        LLMUnavailableError: a configured orchestrator endpoint cannot be reached.
    """
    if len(paths) < 2:
        raise InputError("a question over several videos needs at least two videos")
    if settings.subtitles:
        raise InputError("--subtitles names one video's subtitles; with several videos put a sidecar .srt/.vtt "
                         "with each video's name beside it")
    for path in paths:  # every video readable before any is indexed (a bad last one must not cost a build)
        probe(path)
    out: dict[str, PreparedVideo] = {}
    for name, path in zip(video_names(paths), paths):
        out[name] = prepare(path, settings, backends, rebuild_index=rebuild_index, progress=progress, stages=stages)
    return out


def answer_many(prepared: dict[str, PreparedVideo], question: str, settings: Settings,
                backends: Backends) -> AgentResult:
    """Run :class:`avi.videos.agent.MultiAgent` for ``question`` over the prepared videos.

    ``result.trace`` is a :class:`MultiTrace`; its ``seconds`` get ``index`` (sum over the videos), ``agent``
    and ``total``.

    Raises:
        InputError: a bad question (:func:`avi.questions.clean_question`).
        LLMUnavailableError: the orchestrator cannot be reached or started.
    """
    from avi.videos.agent import MultiAgent

    question = clean_question(question or "", settings.question_max_chars)
    t0 = time.perf_counter()
    llm = orchestrator(backends)
    prompts = PromptLibrary(settings.prompts_dir)
    ctx = multi_context(settings, backends, {n: (p.index, VideoReader(p.info, settings.max_side))
                                             for n, p in prepared.items()})
    trace = MultiTrace(
        question=question, video=" | ".join(str(p.info.path) for p in prepared.values()),
        video_sha256=prepared[ctx.names[0]].index.manifest["video"]["sha256"], index_dir="",
        profile=settings.resolved_profile(),
        llm=trace_llm(settings, llm), settings=trace_settings(settings, ctx), prompts_sha256=prompts.fingerprint())
    agent = MultiAgent(llm, ctx, prompts, settings)
    result = agent.run(question, trace)
    trace.videos = [{"name": n, "path": str(p.info.path), "sha256": p.index.manifest["video"]["sha256"],
                     "index_dir": str(p.index.path), "duration_s": round(float(p.info.duration_s), 3),
                     "fallbacks": question_fallbacks(p.index, ctx.contexts[n].video)} for n, p in prepared.items()]
    trace.fallbacks = {n: v["fallbacks"] for n, v in zip(prepared, trace.videos)}
    trace.shared_people = agent.shared_people()  # what its question message told
    index_s = sum(p.seconds for p in prepared.values())
    trace.seconds["index"] = round(index_s, 3)
    trace.seconds["total"] = round(index_s + time.perf_counter() - t0, 3)
    return result


def ask_many(paths: list[Path], question: str, settings: Settings, backends: Backends, *,
             rebuild_index: bool = False, progress: bool = True, stages: str = "all") -> AgentResult:
    """Answer ``question`` over the videos at ``paths`` (:func:`prepare_many` with ``stages``, then
    :func:`answer_many`).

    Raises:
        InputError: a bad question, fewer than two videos, an unreadable video.
        LLMUnavailableError: the orchestrator cannot be reached or started.
    """
    question = clean_question(question or "", settings.question_max_chars)
    backends.launch_llm()  # the embedded server loads its model while the videos are probed and opened
    prepared = prepare_many(paths, settings, backends, rebuild_index=rebuild_index, progress=progress, stages=stages)
    return answer_many(prepared, question, settings, backends)
