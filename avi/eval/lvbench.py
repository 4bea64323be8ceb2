"""LVBench (THUDM/LVBench): its loader and its official answer cleaning."""

from __future__ import annotations

import re
from pathlib import Path

from avi.errors import InputError
from avi.eval.readers import (
    BadRecord,
    VideoFolder,
    answer_letter,
    as_number,
    jsonl_items,
    read_text,
    record_at,
    required,
    unique_questions,
)
from avi.jobs.spec import JobQuestion, format_choice_question

LVBENCH_CATEGORIES = {
    "entity recognition": "ER", "event understanding": "EU", "key information retrieval": "KIR",
    "temporal grounding": "TG", "reasoning": "Rea", "summarization": "Sum",
}
"""LVBench ``question_type`` names → the leaderboard's short names (THUDM/LVBench ``scripts/test_acc.py``)."""

LVBENCH_ORDER = ("ER", "EU", "KIR", "TG", "Rea", "Sum")


_LV_OPT_LINE = re.compile(r"(?:^|\n)[ \t]*\(([A-J])\)[ \t]*")
_LV_OPT_INLINE = re.compile(r"\(([A-J])\)\s*")


def split_lvbench_question(text: str) -> tuple[str, list[str]]:
    """LVBench's question field (``"stem\\n(A) …\\n(B) …"``) as ``(stem, [option texts])``.

    Options are the last run of ``(A)``, ``(B)``, … markers at line starts (inline markers if there are
    none); each option's text runs to the next marker.

    Raises:
        ValueError: fewer than two options in sequence from (A).
    """
    for pattern in (_LV_OPT_LINE, _LV_OPT_INLINE):
        marks = list(pattern.finditer(text))
        starts = [i for i, m in enumerate(marks) if m.group(1) == "A"]
        for i0 in reversed(starts):
            run = marks[i0:]
            letters = [m.group(1) for m in run]
            if len(run) >= 2 and letters == [chr(ord("A") + k) for k in range(len(run))]:
                stem = text[:run[0].start()].strip()
                options = [text[m.end():(run[k + 1].start() if k + 1 < len(run) else len(text))].strip()
                           for k, m in enumerate(run)]
                if stem and all(options):
                    return stem, options
    raise ValueError("no '(A) …' options found in the question")


def load_lvbench(annotations: Path, videos_dir: Path) -> list[JobQuestion]:
    """LVBench ``video_info.meta.jsonl`` as questions (all 1,549 for the full file).

    Args:
        annotations: the JSON-lines file, one video per line (THUDM/LVBench; fields as in the module docstring).
        videos_dir: folder of ``<key>.<ext>`` video files (``key`` = the YouTube id).

    Returns:
        One ``choice`` question per ``qa`` entry: ``qid`` = ``str(uid)``; ``gt`` = the answer letter;
        ``meta`` = ``benchmark``, ``video_id`` (the key), ``question_type`` (as in the file),
        ``categories`` (short names ER/EU/KIR/TG/Rea/Sum), ``time_reference``, ``duration`` (seconds, from
        ``video_info.duration_minutes`` when present, else None).

    Raises:
        InputError: missing file, a line that is not JSON, a record without key/qa/uid/question/answer, a
            question without ``(A) …`` options, a repeated uid.
    """
    path = Path(annotations)
    videos = VideoFolder(videos_dir)
    out: list[JobQuestion] = []
    lines: list[int | str] = []
    for line, rec in jsonl_items(path, read_text(path)):
        def video(rec=rec):
            key = str(required(rec, "key"))
            info = rec.get("video_info") or {}
            minutes = as_number(info.get("duration_minutes")) if isinstance(info, dict) else None
            qs = []
            for qa in required(rec, "qa"):
                uid = required(qa, "uid")
                try:
                    stem, options = split_lvbench_question(str(required(qa, "question")))
                except ValueError as exc:
                    raise BadRecord(f"uid {uid}: {exc}") from None
                types = qa.get("question_type") or []
                types = [types] if isinstance(types, str) else [str(t) for t in types]
                qs.append(JobQuestion(
                    qid=str(uid), video=videos.find(key), question=format_choice_question(stem, options),
                    answer_type="choice", options=options, gt=answer_letter(required(qa, "answer"), len(options)),
                    meta={"benchmark": "lvbench", "video_id": key, "uid": uid, "question_type": types,
                          "categories": [LVBENCH_CATEGORIES.get(t.strip().lower(), t) for t in types],
                          "time_reference": qa.get("time_reference"),
                          "duration": minutes * 60 if minutes is not None else None}))
            return qs

        qs = record_at(path, line, video)
        out += qs
        lines += [line] * len(qs)
    if not out:
        raise InputError(f"{path}: no questions in the file")
    return unique_questions(path, out, lines)


def polish_answer(answer: str) -> str:
    """LVBench's answer cleanup (THUDM/LVBench ``lvbench/utils/answer_util.py:polish_answer``), same behaviour.

    Strip; keep the text before the first ``)``; if it has ``(``, keep what follows it; keep the first
    space-separated token; return its first character (``""`` for empty text).
    ``"(B) 1366"`` → ``"B"``; ``"B. Apples"`` → ``"B"``; ``"The answer is B"`` → ``"T"``.
    """
    answer = answer.strip().split(")")[0].strip()
    if "(" in answer:
        answer = answer.split("(")[1].strip()
    answer = answer.split(" ")[0]
    return answer[0] if answer else answer
