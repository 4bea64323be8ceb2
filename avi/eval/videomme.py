"""Video-MME: its loader and its official answer extraction (``extract_characters_regex``)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from avi.errors import InputError
from avi.eval.readers import (
    BadRecord,
    VideoFolder,
    answer_letter,
    option_text,
    record_at,
    records_of,
    required,
    selection,
    unique_questions,
)
from avi.jobs.spec import JobQuestion, format_choice_question

VIDEOMME_DURATIONS = ("short", "medium", "long")

VIDEOMME_DOMAINS = ("Knowledge", "Film & Television", "Sports Competition", "Artistic Performance", "Life Record",
                    "Multilingual")
VIDEOMME_TASKS = ("Temporal Perception", "Spatial Perception", "Attribute Perception", "Action Recognition",
                  "Object Recognition", "OCR Problems", "Counting Problem", "Temporal Reasoning", "Spatial Reasoning",
                  "Action Reasoning", "Object Reasoning", "Information Synopsis")


def load_videomme(annotations: Path, videos_dir: Path, *, duration: str | Iterable[str] | None = "long",
                  with_subtitles: bool = False, subtitles_dir: Path | None = None) -> list[JobQuestion]:
    """Video-MME questions (the long split by default: 300 videos, 900 questions).

    Args:
        annotations: flat rows (JSON list or JSONL; the lmms-eval / HF fields) or the nested per-video
            template (BradyFU/Video-MME ``evaluation/output_test_template.json``, trailing commas allowed;
            its keys ``duration``/``domain``/``sub_category``/``options`` or the older
            ``duration_category``/``video_category``/``video_subcategory``/``choices``).
        videos_dir: folder of ``<videoID>.<ext>`` files (``video_id`` such as ``001`` when a row has no
            ``videoID``, as in the nested template).
        duration: ``"short"``, ``"medium"``, ``"long"``, several (list or ``"short,long"``), or ``"all"``.
        with_subtitles: set each question's ``subtitles`` to ``<subtitles_dir>/<videoID>.srt`` when that
            file exists (744 of the 900 videos have one; the others get None).
        subtitles_dir: default ``<videos_dir>/../subtitle`` (the dataset's layout).

    Returns:
        ``choice`` questions: ``qid`` = ``question_id`` (``"001-1"``); ``gt`` = the answer letter;
        ``meta`` = ``benchmark``, ``video_id`` (``videoID``, else ``video_id``), ``video_number``
        (``video_id``), ``duration_group``, ``domain``, ``sub_category``, ``task_type``, ``url``.

    Raises:
        InputError: missing or malformed file (file and line named); an unknown duration; a missing
            subtitles folder with ``with_subtitles``.
    """
    path = Path(annotations)
    wanted = selection(duration, VIDEOMME_DURATIONS, "Video-MME duration")
    videos = VideoFolder(videos_dir)
    sub_dir = Path(subtitles_dir) if subtitles_dir else Path(videos_dir).parent / "subtitle"
    if with_subtitles and not sub_dir.is_dir():
        raise InputError(f"Video-MME subtitles folder not found: {sub_dir} (pass subtitles_dir)")

    def question(video: dict, q: dict) -> JobQuestion:
        vid_number = str(video.get("video_id", "")).strip()
        vid = str(video.get("videoID") or vid_number).strip()
        if not vid:
            raise BadRecord("missing field 'videoID' (and 'video_id')")
        raw_opts = q.get("options", q.get("choices"))
        if not isinstance(raw_opts, list) or len(raw_opts) < 2:
            raise BadRecord("missing field 'options' (a list of 'A. …' strings)")
        options = [option_text(o, i) for i, o in enumerate(raw_opts)]
        answer = q.get("answer")
        subs = sub_dir / f"{vid}.srt" if with_subtitles else None
        return JobQuestion(
            qid=str(required(q, "question_id")), video=videos.find(vid),
            question=format_choice_question(str(required(q, "question")), options), answer_type="choice",
            options=options, subtitles=subs if subs is not None and subs.is_file() else None,
            gt=answer_letter(answer, len(options)) if answer not in (None, "") else None,
            meta={"benchmark": "videomme", "video_id": vid, "video_number": vid_number or None,
                  "duration_group": video.get("duration", video.get("duration_category")),
                  "domain": video.get("domain", video.get("video_category")),
                  "sub_category": video.get("sub_category", video.get("video_subcategory")),
                  "task_type": q.get("task_type"), "url": video.get("url"),
                  "subtitles": bool(subs is not None and subs.is_file())})

    out: list[JobQuestion] = []
    lines: list[int | str] = []
    for line, rec in records_of(path, tolerant=True):
        def build(rec=rec):
            if not isinstance(rec, dict):
                raise BadRecord(f"expected a JSON object, got {type(rec).__name__}")
            group = rec.get("duration", rec.get("duration_category"))
            if group is None:
                raise BadRecord("missing field 'duration'")
            if wanted is not None and str(group) not in wanted:
                return []
            if "questions" in rec:  # the nested template: one record per video
                return [question(rec, q) for q in required(rec, "questions")]
            return [question(rec, rec)]

        qs = record_at(path, line, build)
        out += qs
        lines += [line] * len(qs)
    if not out:
        raise InputError(f"{path}: no Video-MME questions of duration {duration!r} in the file")
    return unique_questions(path, out, lines)


_VIDEOMME_PREFIXES = (  # as in the official script: two missing commas join neighbouring strings
    "The best answer is", "The correct answer is", "The answer is", "The answer",
    "The best option is" "The correct option is", "Best answer:" "Best option:",
)


def extract_characters_regex(s: str) -> str:
    """Video-MME's answer letter (BradyFU/Video-MME ``evaluation/eval_your_results.py`` at 4e7566d), same behaviour.

    Removes the answer prefixes (with the official list's two missing commas: ``"The best option isThe
    correct option is"`` and ``"Best answer:Best option:"`` are single strings), returns ``""`` when more
    than 10 words remain and none of A–D appears, else the *first* capital A–D anywhere (``""`` if none).
    ``"Based on the video, C"`` → ``"B"``.
    """
    s = s.strip()
    for prefix in _VIDEOMME_PREFIXES:
        s = s.replace(prefix, "")
    if len(s.split()) > 10 and not re.search("[ABCD]", s):
        return ""
    m = re.search(r"[ABCD]", s)
    return "" if m is None else m[0]
