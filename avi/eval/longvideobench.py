"""LongVideoBench: its loader and its official answer parsing (``parse_multi_choice_response``)."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

from avi.errors import InputError
from avi.eval.readers import BadRecord, as_number, record_at, records_of, required, selection, unique_questions
from avi.jobs.spec import JobQuestion, format_choice_question

LONGVIDEOBENCH_GROUPS = (15, 60, 600, 3600)


def load_longvideobench(annotations: Path, videos_dir: Path, *, duration_groups: Any = (3600,),
                        with_subtitles: bool = True, subtitles_dir: Path | None = None) -> list[JobQuestion]:
    """LongVideoBench questions (``lvb_val.json``; the 3600 s duration group, "long", by default).

    Args:
        annotations: ``lvb_val.json`` or ``lvb_test_wo_gt.json`` (a JSON list; JSONL accepted). Rows in the
            HF parquet layout (``option0`` … ``option4`` padded with ``"N/A"``) are accepted as well.
        videos_dir: the dataset's ``videos/`` folder (``video_path`` is relative to it).
        duration_groups: groups to keep, from 15, 60, 600, 3600 (seconds; ``"600,3600"``, a list, or ``"all"``).
        with_subtitles: point ``subtitles`` at ``<subtitles_dir>/<subtitle_path>`` when that file exists
            (JSON subtitles, read by :func:`avi.index.subtitles.load_subtitles`).
        subtitles_dir: default ``<videos_dir>/../subtitles`` (the dataset's layout).

    Returns:
        ``choice`` questions: ``qid`` = ``id``; ``gt`` = ``"ABCDE"[correct_choice]``, or None for test rows
        (no ``correct_choice``, or ``"@"``); ``meta`` = ``benchmark``, ``video_id``, ``duration``
        (seconds), ``duration_group``, ``question_category``, ``topic_category``, ``level``,
        ``subtitle_offset_s`` (``starting_timestamp_for_subtitles``: pass it as ``offset_s`` to
        ``load_subtitles``), ``position``.

    Raises:
        InputError: missing or malformed file (file and line named); an unknown duration group.
    """
    path = Path(annotations)
    wanted = selection(duration_groups, LONGVIDEOBENCH_GROUPS, "LongVideoBench duration group",
                        cast=lambda v: int(float(v)))
    videos_dir = Path(videos_dir)
    sub_dir = Path(subtitles_dir) if subtitles_dir else videos_dir.parent / "subtitles"

    def build(rec: Any) -> list[JobQuestion]:
        qid = str(required(rec, "id"))
        group = rec.get("duration_group")
        group = int(float(group)) if as_number(group) is not None else group
        if wanted is not None and group not in wanted:
            return []
        if "candidates" in rec:
            options = [str(c) for c in required(rec, "candidates")]
        else:
            options = [str(rec[f"option{i}"]) for i in range(10) if rec.get(f"option{i}") not in (None, "N/A")]
        if len(options) < 2:
            raise BadRecord("missing field 'candidates' (a list of at least two options)")
        choice = rec.get("correct_choice")
        if choice in (None, "@", -1, "-1", ""):
            gt = None
        else:
            idx = int(choice)
            if not 0 <= idx < len(options):
                raise BadRecord(f"correct_choice {choice!r} is not an index into the {len(options)} candidates")
            gt = chr(ord("A") + idx)
        video_path = str(required(rec, "video_path"))
        video_id = str(rec.get("video_id") or Path(video_path).stem)
        subs = None
        if with_subtitles and rec.get("subtitle_path"):
            candidate = sub_dir / str(rec["subtitle_path"])
            subs = candidate if candidate.is_file() else None
        return [JobQuestion(
            qid=qid, video=videos_dir / video_path, question=format_choice_question(str(required(rec, "question")), options),
            answer_type="choice", options=options, subtitles=subs, gt=gt,
            meta={"benchmark": "longvideobench", "video_id": video_id, "duration": as_number(rec.get("duration")),
                  "duration_group": group, "question_category": rec.get("question_category"),
                  "topic_category": rec.get("topic_category"), "level": rec.get("level"),
                  "subtitle_offset_s": as_number(rec.get("starting_timestamp_for_subtitles")) or 0.0,
                  "position": rec.get("position")})]

    out: list[JobQuestion] = []
    lines: list[int | str] = []
    for line, rec in records_of(path):
        qs = record_at(path, line, lambda rec=rec: build(rec))
        out += qs
        lines += [line] * len(qs)
    if not out:
        raise InputError(f"{path}: no LongVideoBench questions in duration groups {duration_groups!r}")
    return unique_questions(path, out, lines)


_LVB_PREFIXES = ("The best answer is", "The correct answer is", "The answer is", "The answer", "The best option is",
                 "The correct option is", "Best answer:", "Best option:")


def lvb_parse(response: str) -> str | None:
    s = response.strip()
    for prefix in _LVB_PREFIXES:
        s = s.replace(prefix, "")
    if len(s.split()) > 10 and not re.search("[ABCDE]", s):
        return None
    m = re.search(r"[ABCDE]", s)
    return None if m is None else m[0]


def parse_multi_choice_response(response: str, all_choices: list[str], rng: random.Random | None = None) -> str:
    """LongVideoBench's answer letter (lmms-eval ``lmms_eval/tasks/longvideobench/utils.py``), same behaviour.

    Removes the answer prefixes; more than 10 words without any of A–E, or no A–E at all → a random
    element of ``all_choices`` (drawn from ``rng``; the module ``random`` when None); else the first
    capital A–E.
    """
    letter = lvb_parse(response)
    if letter is None:
        return (rng or random).choice(all_choices)
    return letter
