"""One question about one video, end to end: probe, index (built or reused), agent, trace.

Shared by ``avi-run``/``avi ask`` and the benchmark scripts, so that a
benchmark measures exactly what a user runs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from avi.agent.loop import Agent, AgentResult
from avi.backends import Backends
from avi.config import Settings
from avi.index.build import ensure_index_for
from avi.index.store import VideoIndex
from avi.prompts import PromptLibrary
from avi.questions import clean_question
from avi.tools import ToolContext
from avi.trace import Trace
from avi.video.decode import VideoInfo, VideoReader, probe


@dataclass
class QuestionTrace(Trace):
    """The trace of one question, with the fallbacks avi took while answering it.

    Attributes:
        fallbacks: ``index_problems`` (part of the index that could not be used -> cause; the
            agent went on without it, e.g. graph_retrieve not offered when graph.json is unreadable),
            ``index_pending`` (LLM stages of the index still not built when the question ended: a tool that
            needed one built it first, avi/index/lazy.py), ``undecodable_packets`` (packets skipped while
            decoding frames for the perceive tools) and ``first_decode_error``.
    """

    fallbacks: dict = field(default_factory=dict)


def question_fallbacks(index: VideoIndex, video: VideoReader) -> dict:
    """What :attr:`QuestionTrace.fallbacks` holds for a question on ``index`` whose frames came from ``video``."""
    return {"index_problems": dict(getattr(index, "problems", {}) or {}),
            "index_pending": list(getattr(index, "pending", []) or []), **video.stats.to_dict()}


@dataclass
class PreparedVideo:
    """A video ready for questions: its probe and its open index.

    Attributes:
        info: the probe (duration in seconds, fps, size in pixels).
        index: the video's complete index.
        seconds: time spent probing and building or opening the index.
    """

    info: VideoInfo
    index: VideoIndex
    seconds: float


def prepare(video: Path, settings: Settings, backends: Backends, *, rebuild_index: bool = False,
            progress: bool = True, stages: str = "all") -> PreparedVideo:
    """Probe ``video`` and build (or reuse, or resume) its index (``stages``: see
    :func:`avi.index.build.ensure_index_for`; ``"search"`` leaves the LLM stages for later).

    Raises:
        InputError: unreadable or zero-length video.
        LLMUnavailableError: a configured orchestrator endpoint cannot be reached (checked before indexing).
    """
    t0 = time.perf_counter()
    info = probe(video)
    if settings.llm_base_url:
        backends.llm  # noqa: B018 - fail fast on an unreachable endpoint, before any indexing
    index = ensure_index_for(info, settings, backends, rebuild=rebuild_index, progress=progress, stages=stages)
    return PreparedVideo(info=info, index=index, seconds=time.perf_counter() - t0)


def answer(prepared: PreparedVideo, question: str, settings: Settings, backends: Backends) -> AgentResult:
    """Run the agent for ``question`` on a prepared video (see :func:`ask`).

    ``result.trace.seconds`` gets ``index`` (= ``prepared.seconds``), ``agent`` and ``total``.

    Raises:
        InputError: empty question, not valid UTF-8, or longer than ``question_max_chars``
            (:func:`avi.questions.clean_question`; control characters are removed, not refused).
        LLMUnavailableError: the orchestrator cannot be reached or started.
    """
    return _answer(prepared, clean_question(question or "", settings.question_max_chars), settings, backends)


def _answer(prepared: PreparedVideo, question: str, settings: Settings, backends: Backends) -> AgentResult:
    """:func:`answer` of a question already cleaned (:func:`avi.questions.clean_question`, once per question)."""
    t0 = time.perf_counter()
    info, index = prepared.info, prepared.index
    llm = orchestrator(backends)
    prompts = PromptLibrary(settings.prompts_dir)
    ctx = ToolContext(settings=settings, index=index, video=VideoReader(info, settings.max_side), backends=backends)
    trace = QuestionTrace(
        question=question, video=str(info.path), video_sha256=index.manifest["video"]["sha256"],
        index_dir=str(index.path), profile=settings.resolved_profile(),
        llm=trace_llm(settings, llm), settings=trace_settings(settings, ctx), prompts_sha256=prompts.fingerprint())
    result = Agent(llm, ctx, prompts, settings).run(question, trace)
    trace.fallbacks = question_fallbacks(index, ctx.video)
    trace.seconds["index"] = round(prepared.seconds, 3)
    trace.seconds["total"] = round(prepared.seconds + time.perf_counter() - t0, 3)
    return result


def orchestrator(backends: Backends):
    """``backends.llm``, with the embedded server's start overlapped with loading the query embedder.

    On the cpu profile each ``avi-run`` starts its own llama.cpp server (about 2 s of model loading in that
    process) and loads the query embedder for the host's opening search (0.4 s as ONNX, about 5 s through
    sentence-transformers); launched first (here, or already by :func:`ask`), the server loads on the second
    core meanwhile (issue 38).

    Raises:
        LLMUnavailableError: the orchestrator cannot be reached or started.
    """
    backends.launch_llm()
    if backends.llm_pending:
        try:
            backends.embedder  # noqa: B018 - load it while the server loads its model
        except Exception:  # noqa: BLE001 - only a head start: the tool that needs it meets the error and reports it
            pass
    return backends.llm


def trace_llm(settings: Settings, llm) -> dict:
    """The trace's record of the orchestrator: its base URL and model (the embedded server's GGUF)."""
    return {"base_url": llm.base_url if settings.llm_base_url else "embedded llama.cpp (127.0.0.1)",
            "model": llm.model if settings.llm_base_url else settings.llm_gguf}


def trace_settings(settings: Settings, ctx) -> dict:
    """The settings a trace records (one video or several): iterations, sampling, frame budget, strategy, the
    answer rules in effect (``answer_rules`` on the profile and ``grounded_answers``) and the host steps that are
    off (``host_steps_off``: :data:`avi.config_agent.HOST_STEPS`; all of them under ``--preset paper``)."""
    from avi.config_agent import HOST_STEPS

    return {"max_iterations": settings.max_iterations, "answer_rules": list(settings.answer_rule_names()),
            "host_steps_off": [k for k, (off, _) in HOST_STEPS.items() if getattr(settings, k, None) == off],
            "grounded_answers": settings.grounded_answers, "fps": settings.fps, "clip_seconds": settings.clip_seconds,
            "perceive_max_frames": settings.perceive_max_frames, "frame_budget": ctx.frame_budget or 0,
            "frame_alpha": ctx.alpha, "perceive_strategy": settings.perceive_strategy, "max_side": settings.max_side,
            "temperature": settings.llm_temperature, "llm_ctx": settings.llm_ctx}


def ask(video: Path, question: str, settings: Settings, backends: Backends, *, rebuild_index: bool = False,
        progress: bool = True, stages: str = "all") -> AgentResult:
    """Answer ``question`` about ``video``.

    The index is built on first use and reused afterwards; the orchestrator is
    ``backends.llm`` (started on first use and kept for later questions; the
    caller closes ``backends``). Timings go to ``result.trace.seconds``:
    ``index`` (probe + index build or reuse), ``agent`` and ``total``.

    Raises:
        InputError: a bad question (:func:`avi.questions.clean_question`), unreadable or zero-length video.
        LLMUnavailableError: the orchestrator cannot be reached or started.
    """
    question = clean_question(question or "", settings.question_max_chars)
    backends.launch_llm()  # the embedded server loads its model while the video is probed and its index opened
    prepared = prepare(video, settings, backends, rebuild_index=rebuild_index, progress=progress, stages=stages)
    return _answer(prepared, question, settings, backends)


def default_trace_path(settings: Settings, trace: Trace) -> Path:
    """``<traces dir>/<UTC time>-<video sha[:8]>.json``."""
    return settings.traces_dir() / f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{trace.video_sha256[:8]}.json"
