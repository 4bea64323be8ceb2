"""The answer key of a job question: what an answer in a results file was an answer *to*.

``avi batch`` and ``avi eval`` resume by qid, but a qid alone does not say whether the question behind it is
still the one that was answered: automatic qids (``<video>#<n>``) stay the same when the question text of a
questions file is edited, and nothing in a qid changes when the video file is replaced or a setting that
changes answers is changed. Each record therefore carries ``key``, a sha256 over

* the video's identity (size and the sha256 of its first and last MiB: cheap, and it changes when the file is
  replaced; :func:`video_identity`), and the subtitle file's, with its offset;
* the question text (options included, as the agent gets them), the option list and the answer type;
* the settings that change answers (:data:`ANSWER_SETTINGS`, the index fingerprint settings, the prompt files).

A record whose key differs from the question's current key is stale: the question is asked again and the
new record appended (the last record per qid counts). Endpoint URLs, paths of output folders, concurrency and
retries are not part of the key (they do not change what is answered; a server on a new port is the same model).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from avi.config import Settings
from avi.jobs.spec import JobQuestion
from avi.jobs.work import subtitle_offset

# Settings whose change changes answers (besides Settings.index_fingerprint_fields and the prompt files).
ANSWER_SETTINGS = (
    "llm_model", "llm_gguf", "llm_temperature", "llm_seed", "llm_max_tokens", "llm_enable_thinking",
    "llm_thinking_max_tokens", "llm_constrain", "llm_ctx", "max_iterations", "max_retries", "structured_answer",
    "choice_scoring", "choice_calibration", "grounded_answers", "host_retrieve", "host_retrieve_max_chars",
    "retrieve_max_chars",
    "extract_pass", "retry_temperature", "answer_type",
    "frame_analysis_last",
    "frame_budget", "frame_alpha", "perceive_strategy", "perceive_max_frames", "boundary_max_frames",
    "text_extract_frames_no_text", "ocr_question_script", "detect_tracks", "people_models",
    "frame_analysis_max_frames",
    "observation_max_chars", "iou_threshold", "coco_detector", "coco_score_threshold", "coco_query_threshold",
    "person_detector", "transcript", "asr_model", "asr_language", "embedder", "vlm_model", "detector_model_dir",
    "detector_box_threshold", "detector_text_threshold", "open_clip_model", "clip_model_dir",
)

_EDGE = 1 << 20  # bytes read from each end of a file for its identity


def video_identity(path: Path | None) -> str:
    """A cheap, stable identity of a file: ``"<size>:<sha256 of its first and last MiB>"``.

    Args:
        path: the file (a video or a subtitle file), or None.

    Returns:
        The identity; ``"none"`` for None, ``"missing"`` when the file cannot be read (a missing video
        fails its questions anyway, and the key changes once it appears).
    """
    if path is None:
        return "none"
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(0)
            h = hashlib.sha256(f.read(_EDGE))
            if size > _EDGE:
                f.seek(max(_EDGE, size - _EDGE))
                h.update(f.read(_EDGE))
    except OSError:
        return "missing"
    return f"{size}:{h.hexdigest()}"


def settings_identity(settings: Settings) -> dict:
    """The settings that change answers, as a JSON-ready dict (see :data:`ANSWER_SETTINGS`)."""
    from avi.prompts import PromptLibrary

    out = {name: getattr(settings, name, None) for name in ANSWER_SETTINGS}
    if getattr(settings, "answer_rules", "default") != "default":  # (absent by default: earlier keys stay valid)
        out["answer_rules"] = list(settings.answer_rule_names())
    out.update(settings.index_fingerprint_fields())
    out["profile"] = settings.resolved_profile()
    try:
        out["prompts"] = PromptLibrary(settings.prompts_dir).fingerprint()
    except OSError:
        out["prompts"] = "unreadable"
    return json.loads(json.dumps(out, default=str))


def answer_key(q: JobQuestion, settings: Settings | None, *, _cache: dict | None = None) -> str:
    """sha256 hex digest identifying what answering ``q`` under ``settings`` means (module docstring).

    Args:
        q: the job question.
        settings: the job's settings (None: settings left out of the key).
        _cache: file identities already computed in this job (``{path: identity}``), shared between calls.
    """
    cache = _cache if _cache is not None else {}

    def ident(path):
        key = str(path)
        if key not in cache:
            cache[key] = video_identity(path)
        return cache[key]

    payload = {
        "video": ident(q.video), "subtitles": ident(q.subtitles) if q.subtitles else None,
        "subtitle_offset_s": subtitle_offset(q), "question": q.question, "options": q.options,
        "answer_type": q.answer_type,
        "settings": cache.setdefault("\0settings", settings_identity(settings)) if settings is not None else None,
    }
    if q.videos:  # a question over several videos: every video, and the prompts only such questions use
        payload["videos"] = [ident(v) for v in q.videos]
        payload["videos_prompts"] = cache.setdefault("\0videos_prompts", _videos_prompts(settings))
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _videos_prompts(settings: Settings | None) -> str | None:
    """sha256 over ``prompts/videos/*.md`` (the prompts of questions over several videos; not in the
    fingerprint of the prompt files of one video)."""
    if settings is None:
        return None
    h = hashlib.sha256()
    for p in sorted((Path(settings.prompts_dir) / "videos").glob("*.md")):
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def answer_keys(questions: list[JobQuestion], settings: Settings | None) -> dict[str, str]:
    """``{qid: answer_key}`` for a whole job (each file's identity computed once)."""
    cache: dict = {}
    return {q.qid: answer_key(q, settings, _cache=cache) for q in questions}
