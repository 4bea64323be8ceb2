"""Benchmark annotation files in their published formats, as :class:`~avi.jobs.spec.JobQuestion` lists.

One loader per benchmark (formats as documented in ``research/anchors.md`` §3 and the cited files):

========================  =====================================================================================
``lvbench``               THUDM/LVBench ``video_info.meta.jsonl``: one JSON object per video per line
                          (``key``, ``video_info``, ``qa`` = [{``uid``, ``question`` with the options inline as
                          ``(A) …`` lines, ``answer``, ``question_type`` (a list), ``time_reference``}]).
``videomme``              Video-MME, either the flat rows of the HF copy read by lmms-eval
                          (``lmms_eval/tasks/videomme/utils.py``: ``video_id, duration, domain, sub_category, url,
                          videoID, question_id, task_type, question, options ["A. …"], answer``) as a JSON list
                          or JSONL, or the nested per-video form of BradyFU/Video-MME
                          ``evaluation/output_test_template.json`` (not valid JSON: trailing commas are accepted).
``longvideobench``        longvideobench/LongVideoBench ``lvb_val.json`` / ``lvb_test_wo_gt.json``
                          (``longvideobench/longvideobench_dataset.py``): a JSON list of ``id, video_path,
                          subtitle_path, question, candidates, correct_choice, duration, duration_group,
                          question_category, starting_timestamp_for_subtitles``; test rows have no ground truth.
``charades``              Charades-STA ``charades_sta_test.txt`` (jiyanggao/TALL: ``VID start end##sentence``),
                          the lmms-eval JSON rows (``lmms_eval/tasks/charades_sta``: ``video``, ``caption``,
                          ``timestamp``) or the dict-of-videos JSON of MCG-NJU/MMN
                          (``mmn/data/datasets/charades.py``: ``{vid: {duration, timestamps, sentences}}``).
========================  =====================================================================================

Every question's ``meta`` has ``benchmark`` and ``video_id`` (the benchmark's id of the video: the
cluster key of the confidence intervals) plus the fields the scorers and reports use. A bad file
(missing, not the format, a line that is not JSON, a record without a needed field) raises
:class:`~avi.errors.InputError` naming the file and the line; a missing *video* file is not an error
here (the runner records such questions as failed).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from avi.errors import InputError
from avi.jobs.spec import JobQuestion, format_choice_question

VIDEO_EXTS = (".mp4", ".mkv", ".webm", ".avi", ".mov", ".m4v", ".mpg", ".mpeg", ".wmv", ".flv", ".ts", ".3gp")

LVBENCH_CATEGORIES = {
    "entity recognition": "ER", "event understanding": "EU", "key information retrieval": "KIR",
    "temporal grounding": "TG", "reasoning": "Rea", "summarization": "Sum",
}
"""LVBench ``question_type`` names → the leaderboard's short names (THUDM/LVBench ``scripts/test_acc.py``)."""

VIDEOMME_DURATIONS = ("short", "medium", "long")
LONGVIDEOBENCH_GROUPS = (15, 60, 600, 3600)
CHARADES_QUESTION = "When does this happen in the video: '{sentence}'? Answer with the start and end time in seconds."


class _Bad(Exception):
    """A record that does not fit the format (wrapped into InputError with the file and line)."""


# ---------------------------------------------------------------------------------------------- file reading


def _read_text(path: Path) -> str:
    path = Path(path)
    if not path.is_file():
        raise InputError(f"annotation file not found: {path}")
    try:
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read annotation file {path}: {type(exc).__name__}: {exc}") from None


def _strip_trailing_commas(text: str) -> str:
    """``text`` without commas that directly precede ``]`` or ``}`` outside strings (line breaks kept,
    so JSON error line numbers still point into the original file)."""
    out: list[str] = []
    i, n, in_str = 0, len(text), False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            out.append(c)
        elif c == ",":
            j = i + 1
            while j < n and text[j] in " \t\r\n":
                j += 1
            if j >= n or text[j] not in "]}":
                out.append(c)
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _json_items(path: Path, text: str, *, tolerant: bool = False) -> Any:
    """The JSON document in ``text``; for a top-level list, ``[(line, item), …]`` (1-based line of each item).

    Args:
        tolerant: accept trailing commas (the Video-MME template).

    Raises:
        InputError: not JSON (file and line named).
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        if tolerant:
            text = _strip_trailing_commas(text)
            try:
                data = json.loads(text)
            except json.JSONDecodeError:
                raise InputError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
        else:
            raise InputError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, list):
        return data
    decoder, items, idx = json.JSONDecoder(), [], text.index("[") + 1
    ws = re.compile(r"[\s,]*")
    line, counted = 1, 0
    for item in data:  # re-scan the items only to learn where each one starts
        idx = ws.match(text, idx).end()
        _, end = decoder.raw_decode(text, idx)
        line += text.count("\n", counted, idx)
        counted = idx
        items.append((line, item))
        idx = end
    return items


def _jsonl_items(path: Path, text: str) -> list[tuple[int, Any]]:
    """``[(line, object), …]`` of a JSON-lines file (blank lines skipped).

    Raises:
        InputError: a line is not JSON (file and line named).
    """
    items = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            items.append((n, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: line {n}: not JSON ({exc.msg})") from None
    return items


def _records(path: Path, *, tolerant: bool = False) -> list[tuple[int, Any]]:
    """``[(line, record), …]`` of a JSON list or JSON-lines file (chosen by content: a ``.jsonl`` suffix or a
    first line that is a whole JSON object means JSON lines)."""
    text = _read_text(path)
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    jsonl = Path(path).suffix.lower() == ".jsonl"
    if not jsonl and first.lstrip().startswith("{"):
        try:
            jsonl = isinstance(json.loads(first), dict)
        except json.JSONDecodeError:
            jsonl = False
    if jsonl:
        return _jsonl_items(path, text)
    data = _json_items(path, text, tolerant=tolerant)
    if not isinstance(data, list):
        raise InputError(f"{path}: line 1: expected a JSON list of records, got a JSON {type(data).__name__}")
    return data


def _wrap(path: Path, line: int | str, fn: Callable[[], Any]) -> Any:
    """``fn()``, with a record's format problems raised as one-line InputErrors naming ``path`` and ``line``."""
    try:
        return fn()
    except InputError:
        raise
    except (_Bad, KeyError, TypeError, ValueError, AttributeError) as exc:
        msg = str(exc) if isinstance(exc, _Bad) else (
            f"missing field {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}")
        where = f"line {line}" if isinstance(line, int) else line
        raise InputError(f"{path}: {where}: {msg}") from None


def _req(d: Any, key: str) -> Any:
    if not isinstance(d, dict):
        raise _Bad(f"expected a JSON object, got {type(d).__name__}")
    if key not in d or d[key] is None:
        raise _Bad(f"missing field {key!r}")
    return d[key]


class _Videos:
    """Video files of a folder by stem (``<videos_dir>/<stem>.<ext>``); listed once.

    A stem without a file maps to ``<videos_dir>/<stem>.mp4`` (the runner reports it as missing).
    """

    def __init__(self, videos_dir: Path):
        self.dir = Path(videos_dir)
        self.by_stem: dict[str, Path] = {}
        if self.dir.is_dir():
            rank = {e: i for i, e in enumerate(VIDEO_EXTS)}
            for p in self.dir.iterdir():
                ext = p.suffix.lower()
                if ext in rank:
                    old = self.by_stem.get(p.stem)
                    if old is None or rank[ext] < rank[old.suffix.lower()]:
                        self.by_stem[p.stem] = p

    def find(self, stem: str) -> Path:
        return self.by_stem.get(stem, self.dir / f"{stem}.mp4")


def _unique(path: Path, questions: list[JobQuestion], lines: list[int | str]) -> list[JobQuestion]:
    seen: dict[str, int | str] = {}
    for q, line in zip(questions, lines):
        if q.qid in seen:
            where = f"line {line}" if isinstance(line, int) else line
            raise InputError(f"{path}: {where}: question id {q.qid!r} appears twice (first at {seen[q.qid]})")
        seen[q.qid] = line
    return questions


_LETTER_PREFIX = re.compile(r"^\s*\(?([A-J])\s*[.):：]\s*")


def _strip_letter(option: Any, index: int) -> str:
    """``"A. Apples."`` → ``"Apples."`` when the letter is the option's own (index 0 → A); else unchanged."""
    text = str(option).strip()
    m = _LETTER_PREFIX.match(text)
    if m and m.group(1) == "ABCDEFGHIJ"[index]:
        return text[m.end():].strip()
    return text


def _letter(answer: Any, n_options: int) -> str:
    letter = str(answer).strip().upper()
    if len(letter) != 1 or not ("A" <= letter < chr(ord("A") + n_options)):
        raise _Bad(f"answer {answer!r} is not one of the {n_options} option letters")
    return letter


def _number(v: Any) -> float | None:
    try:
        return float(v) if v is not None and v != "" else None
    except (TypeError, ValueError):
        return None


# ------------------------------------------------------------------------------------------------- LVBench

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
    videos = _Videos(videos_dir)
    out: list[JobQuestion] = []
    lines: list[int | str] = []
    for line, rec in _jsonl_items(path, _read_text(path)):
        def video(rec=rec):
            key = str(_req(rec, "key"))
            info = rec.get("video_info") or {}
            minutes = _number(info.get("duration_minutes")) if isinstance(info, dict) else None
            qs = []
            for qa in _req(rec, "qa"):
                uid = _req(qa, "uid")
                try:
                    stem, options = split_lvbench_question(str(_req(qa, "question")))
                except ValueError as exc:
                    raise _Bad(f"uid {uid}: {exc}") from None
                types = qa.get("question_type") or []
                types = [types] if isinstance(types, str) else [str(t) for t in types]
                qs.append(JobQuestion(
                    qid=str(uid), video=videos.find(key), question=format_choice_question(stem, options),
                    answer_type="choice", options=options, gt=_letter(_req(qa, "answer"), len(options)),
                    meta={"benchmark": "lvbench", "video_id": key, "uid": uid, "question_type": types,
                          "categories": [LVBENCH_CATEGORIES.get(t.strip().lower(), t) for t in types],
                          "time_reference": qa.get("time_reference"),
                          "duration": minutes * 60 if minutes is not None else None}))
            return qs

        qs = _wrap(path, line, video)
        out += qs
        lines += [line] * len(qs)
    if not out:
        raise InputError(f"{path}: no questions in the file")
    return _unique(path, out, lines)


# ----------------------------------------------------------------------------------------------- Video-MME


def _selection(value: Any, allowed: Iterable, what: str, *, cast: Callable = str) -> set | None:
    """A subset choice (``"all"``/None → None = everything; ``"a,b"`` or a list → a set, each checked)."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "all"):
        return None
    items = value.split(",") if isinstance(value, str) else (value if isinstance(value, Iterable) else [value])
    allowed = list(allowed)
    chosen = set()
    for item in items:
        try:
            v = cast(item.strip() if isinstance(item, str) else item)
        except (TypeError, ValueError):
            v = None
        if v not in allowed:
            raise InputError(f"unknown {what} {item!r} (choose from {', '.join(map(str, allowed))} or all)")
        chosen.add(v)
    return chosen


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
    wanted = _selection(duration, VIDEOMME_DURATIONS, "Video-MME duration")
    videos = _Videos(videos_dir)
    sub_dir = Path(subtitles_dir) if subtitles_dir else Path(videos_dir).parent / "subtitle"
    if with_subtitles and not sub_dir.is_dir():
        raise InputError(f"Video-MME subtitles folder not found: {sub_dir} (pass subtitles_dir)")

    def question(video: dict, q: dict) -> JobQuestion:
        vid_number = str(video.get("video_id", "")).strip()
        vid = str(video.get("videoID") or vid_number).strip()
        if not vid:
            raise _Bad("missing field 'videoID' (and 'video_id')")
        raw_opts = q.get("options", q.get("choices"))
        if not isinstance(raw_opts, list) or len(raw_opts) < 2:
            raise _Bad("missing field 'options' (a list of 'A. …' strings)")
        options = [_strip_letter(o, i) for i, o in enumerate(raw_opts)]
        answer = q.get("answer")
        subs = sub_dir / f"{vid}.srt" if with_subtitles else None
        return JobQuestion(
            qid=str(_req(q, "question_id")), video=videos.find(vid),
            question=format_choice_question(str(_req(q, "question")), options), answer_type="choice",
            options=options, subtitles=subs if subs is not None and subs.is_file() else None,
            gt=_letter(answer, len(options)) if answer not in (None, "") else None,
            meta={"benchmark": "videomme", "video_id": vid, "video_number": vid_number or None,
                  "duration_group": video.get("duration", video.get("duration_category")),
                  "domain": video.get("domain", video.get("video_category")),
                  "sub_category": video.get("sub_category", video.get("video_subcategory")),
                  "task_type": q.get("task_type"), "url": video.get("url"),
                  "subtitles": bool(subs is not None and subs.is_file())})

    out: list[JobQuestion] = []
    lines: list[int | str] = []
    for line, rec in _records(path, tolerant=True):
        def build(rec=rec):
            if not isinstance(rec, dict):
                raise _Bad(f"expected a JSON object, got {type(rec).__name__}")
            group = rec.get("duration", rec.get("duration_category"))
            if group is None:
                raise _Bad("missing field 'duration'")
            if wanted is not None and str(group) not in wanted:
                return []
            if "questions" in rec:  # the nested template: one record per video
                return [question(rec, q) for q in _req(rec, "questions")]
            return [question(rec, rec)]

        qs = _wrap(path, line, build)
        out += qs
        lines += [line] * len(qs)
    if not out:
        raise InputError(f"{path}: no Video-MME questions of duration {duration!r} in the file")
    return _unique(path, out, lines)


# ------------------------------------------------------------------------------------------ LongVideoBench


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
    wanted = _selection(duration_groups, LONGVIDEOBENCH_GROUPS, "LongVideoBench duration group",
                        cast=lambda v: int(float(v)))
    videos_dir = Path(videos_dir)
    sub_dir = Path(subtitles_dir) if subtitles_dir else videos_dir.parent / "subtitles"

    def build(rec: Any) -> list[JobQuestion]:
        qid = str(_req(rec, "id"))
        group = rec.get("duration_group")
        group = int(float(group)) if _number(group) is not None else group
        if wanted is not None and group not in wanted:
            return []
        if "candidates" in rec:
            options = [str(c) for c in _req(rec, "candidates")]
        else:
            options = [str(rec[f"option{i}"]) for i in range(10) if rec.get(f"option{i}") not in (None, "N/A")]
        if len(options) < 2:
            raise _Bad("missing field 'candidates' (a list of at least two options)")
        choice = rec.get("correct_choice")
        if choice in (None, "@", -1, "-1", ""):
            gt = None
        else:
            idx = int(choice)
            if not 0 <= idx < len(options):
                raise _Bad(f"correct_choice {choice!r} is not an index into the {len(options)} candidates")
            gt = chr(ord("A") + idx)
        video_path = str(_req(rec, "video_path"))
        video_id = str(rec.get("video_id") or Path(video_path).stem)
        subs = None
        if with_subtitles and rec.get("subtitle_path"):
            candidate = sub_dir / str(rec["subtitle_path"])
            subs = candidate if candidate.is_file() else None
        return [JobQuestion(
            qid=qid, video=videos_dir / video_path, question=format_choice_question(str(_req(rec, "question")), options),
            answer_type="choice", options=options, subtitles=subs, gt=gt,
            meta={"benchmark": "longvideobench", "video_id": video_id, "duration": _number(rec.get("duration")),
                  "duration_group": group, "question_category": rec.get("question_category"),
                  "topic_category": rec.get("topic_category"), "level": rec.get("level"),
                  "subtitle_offset_s": _number(rec.get("starting_timestamp_for_subtitles")) or 0.0,
                  "position": rec.get("position")})]

    out: list[JobQuestion] = []
    lines: list[int | str] = []
    for line, rec in _records(path):
        qs = _wrap(path, line, lambda rec=rec: build(rec))
        out += qs
        lines += [line] * len(qs)
    if not out:
        raise InputError(f"{path}: no LongVideoBench questions in duration groups {duration_groups!r}")
    return _unique(path, out, lines)


# ------------------------------------------------------------------------------------------- Charades-STA


def _charades_question(qid: str, vid: str, video: Path, sentence: str, start: Any, end: Any,
                       duration: float | None, line: int | str) -> JobQuestion:
    sentence = str(sentence).strip()
    if not sentence:
        raise _Bad("empty sentence")
    s, e = float(start), float(end)
    return JobQuestion(qid=qid, video=video, question=CHARADES_QUESTION.format(sentence=sentence),
                       answer_type="interval", gt=[s, e],
                       meta={"benchmark": "charades", "video_id": vid, "sentence": sentence, "duration": duration,
                             "line": line})


def _timestamp(v: Any) -> tuple[float, float]:
    if isinstance(v, str):
        v = ast.literal_eval(v.strip())
    if not isinstance(v, (list, tuple)) or len(v) != 2:
        raise _Bad(f"timestamp {v!r} is not [start, end]")
    return float(v[0]), float(v[1])


def read_durations(path: Path) -> dict[str, float]:
    """Video lengths in seconds by video id, from Charades' ``Charades_v1_test.csv`` (columns ``id`` and
    ``length``, the file 2D-TAN-style Charades-STA loaders read) or a JSON object ``{vid: seconds}``.

    Raises:
        InputError: missing file, or neither form.
    """
    import csv

    path = Path(path)
    text = _read_text(path)
    if path.suffix.lower() == ".csv":
        rows = list(csv.DictReader(text.splitlines()))
        if rows and not {"id", "length"} <= set(rows[0]):
            raise InputError(f"{path}: line 1: expected the columns 'id' and 'length' (Charades_v1_*.csv)")
        out = {}
        for n, row in enumerate(rows, 2):
            value = _number(row.get("length"))
            if value is None:
                raise InputError(f"{path}: line {n}: length {row.get('length')!r} is not a number")
            out[str(row["id"]).strip()] = value
        return out
    data = _json_items(path, text)
    if not isinstance(data, dict) or any(_number(v) is None for v in data.values()):
        raise InputError(f"{path}: line 1: expected a JSON object {{video id: seconds}}")
    return {str(k): float(v) for k, v in data.items()}


def load_charades(annotations: Path, videos_dir: Path, *,
                  durations: dict[str, float] | Path | str | None = None) -> list[JobQuestion]:
    """Charades-STA queries as ``interval`` questions.

    Args:
        annotations: ``charades_sta_test.txt`` (``VID start end##sentence`` per line), the lmms-eval JSON
            list/JSONL (``video`` file name, ``caption``, ``timestamp`` [s, e]; an optional ``duration``), or the
            MMN dict ``{vid: {"duration": s, "timestamps": [[s, e], …], "sentences": […]}}``.
        videos_dir: folder of ``<vid>.<ext>`` files (``Charades_v1_480``).
        durations: video id → length in seconds (the txt form has none), or a file of them
            (:func:`read_durations`: ``Charades_v1_test.csv`` or JSON); used to clip ground truth and
            predictions to ``[0, duration]`` when scoring.

    Returns:
        Questions "When does this happen in the video: '<sentence>'? …" with ``gt`` = ``[start_s, end_s]``
        as annotated (not clipped); ``qid`` = ``<vid>_<k>`` (k = 0-based order of the video's queries in the
        file; an explicit ``id``/``question_id`` field wins); ``meta`` = ``benchmark``, ``video_id``,
        ``sentence``, ``duration`` (seconds or None), ``line``.

    Raises:
        InputError: missing or malformed file (file and line named).
    """
    path = Path(annotations)
    text = _read_text(path)
    videos = _Videos(videos_dir)
    durations = read_durations(Path(durations)) if isinstance(durations, (str, Path)) else dict(durations or {})
    counter: dict[str, int] = {}
    out: list[JobQuestion] = []
    lines: list[int | str] = []

    def next_qid(vid: str) -> str:
        k = counter.get(vid, 0)
        counter[vid] = k + 1
        return f"{vid}_{k}"

    first = text.lstrip()[:1]
    if path.suffix.lower() == ".txt" or first not in ("[", "{"):
        for n, raw in enumerate(text.splitlines(), 1):
            if not raw.strip():
                continue

            def row(raw=raw, n=n):
                if "##" not in raw:
                    raise _Bad("expected 'VID start end##sentence'")
                head, sentence = raw.split("##", 1)
                parts = head.split()
                if len(parts) != 3:
                    raise _Bad("expected 'VID start end##sentence'")
                vid = parts[0]
                return _charades_question(next_qid(vid), vid, videos.find(vid), sentence, parts[1], parts[2],
                                          _number(durations.get(vid)), n)

            out.append(_wrap(path, n, row))
            lines.append(n)
    else:
        if path.suffix.lower() == ".jsonl":
            data: Any = _jsonl_items(path, text)
        elif first == "[":
            data = _json_items(path, text)
        else:
            try:
                data = json.loads(text)
            except json.JSONDecodeError:
                data = _jsonl_items(path, text)  # JSON lines without the .jsonl suffix
        if isinstance(data, dict) and not {"video", "caption"} <= set(data):  # MMN: {vid: {...}}
            for vid, anno in data.items():
                def per_video(vid=vid, anno=anno):
                    stamps, sentences = _req(anno, "timestamps"), _req(anno, "sentences")
                    if len(stamps) != len(sentences):
                        raise _Bad(f"{len(stamps)} timestamps but {len(sentences)} sentences")
                    dur = _number(anno.get("duration")) or _number(durations.get(vid))
                    return [_charades_question(next_qid(vid), vid, videos.find(vid), sent, *_timestamp(ts), dur,
                                               f"video {vid!r}") for ts, sent in zip(stamps, sentences)]

                qs = _wrap(path, f"video {vid!r}", per_video)
                out += qs
                lines += [f"video {vid!r}"] * len(qs)
        else:
            rows = data if isinstance(data, list) else [(1, data)]
            for n, rec in rows:
                def lmms_row(rec=rec, n=n):
                    name = str(_req(rec, "video"))
                    vid = Path(name).stem
                    video = Path(videos_dir) / name if Path(name).suffix else videos.find(vid)
                    explicit = rec.get("id", rec.get("question_id"))
                    qid = str(explicit) if explicit is not None else next_qid(vid)
                    dur = _number(rec.get("duration")) or _number(durations.get(vid))
                    return _charades_question(qid, vid, video, _req(rec, "caption"), *_timestamp(_req(rec, "timestamp")),
                                              dur, n)

                out.append(_wrap(path, n, lmms_row))
                lines.append(n)
    if not out:
        raise InputError(f"{path}: no Charades-STA queries in the file")
    return _unique(path, out, lines)


# ------------------------------------------------------------------------------------------------ registry


@dataclass(frozen=True)
class Benchmark:
    """A benchmark ``avi eval`` knows.

    Attributes:
        name: registry key (``lvbench``, ``videomme``, ``longvideobench``, ``charades``).
        title: display name.
        loader: ``loader(annotations, videos_dir, **options) -> list[JobQuestion]``.
        answer_type: ``"choice"`` or ``"interval"``.
        options: keyword options the loader accepts.
        annotation_file: the published annotation file the loader reads.
    """

    name: str
    title: str
    loader: Callable[..., list[JobQuestion]]
    answer_type: str
    options: tuple[str, ...]
    annotation_file: str


BENCHMARKS: dict[str, Benchmark] = {
    "lvbench": Benchmark("lvbench", "LVBench", load_lvbench, "choice", (), "video_info.meta.jsonl"),
    "videomme": Benchmark("videomme", "Video-MME", load_videomme, "choice",
                          ("duration", "with_subtitles", "subtitles_dir"), "videomme.json / output_test_template.json"),
    "longvideobench": Benchmark("longvideobench", "LongVideoBench", load_longvideobench, "choice",
                                ("duration_groups", "with_subtitles", "subtitles_dir"), "lvb_val.json"),
    "charades": Benchmark("charades", "Charades-STA", load_charades, "interval", ("durations",),
                          "charades_sta_test.txt"),
}


def load_benchmark(name: str, annotations: Path, videos_dir: Path, **options: Any) -> list[JobQuestion]:
    """The questions of benchmark ``name`` (a key of :data:`BENCHMARKS`) from its annotation file.

    Args:
        name: ``lvbench``, ``videomme``, ``longvideobench`` or ``charades``.
        annotations: the annotation file in the benchmark's published format.
        videos_dir: the folder of the benchmark's videos (files need not exist yet).
        **options: the benchmark's loader options (``Benchmark.options``); None values are left out.

    Raises:
        InputError: unknown benchmark or option; a bad annotation file.
    """
    bench = BENCHMARKS.get(str(name).strip().lower())
    if bench is None:
        raise InputError(f"unknown benchmark {name!r} (choose from {', '.join(BENCHMARKS)})")
    options = {k: v for k, v in options.items() if v is not None}
    unknown = sorted(set(options) - set(bench.options))
    if unknown:
        accepted = ", ".join(bench.options) or "none"
        raise InputError(f"{bench.title} has no option {', '.join(unknown)} (options: {accepted})")
    return bench.loader(Path(annotations), Path(videos_dir), **options)
