"""Charades-STA (temporal grounding): its loader and the official time extraction (lmms-eval ``extract_time``)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from avi.errors import InputError
from avi.eval.readers import (
    BadRecord,
    VideoFolder,
    as_number,
    json_items,
    jsonl_items,
    read_text,
    record_at,
    required,
    unique_questions,
)
from avi.jobs.spec import JobQuestion

CHARADES_QUESTION = "When does this happen in the video: '{sentence}'? Answer with the start and end time in seconds."


def _charades_question(qid: str, vid: str, video: Path, sentence: str, start: Any, end: Any,
                       duration: float | None, line: int | str) -> JobQuestion:
    sentence = str(sentence).strip()
    if not sentence:
        raise BadRecord("empty sentence")
    s, e = float(start), float(end)
    return JobQuestion(qid=qid, video=video, question=CHARADES_QUESTION.format(sentence=sentence),
                       answer_type="interval", gt=[s, e],
                       meta={"benchmark": "charades", "video_id": vid, "sentence": sentence, "duration": duration,
                             "line": line})


def _timestamp(v: Any) -> tuple[float, float]:
    if isinstance(v, str):
        v = ast.literal_eval(v.strip())
    if not isinstance(v, (list, tuple)) or len(v) != 2:
        raise BadRecord(f"timestamp {v!r} is not [start, end]")
    return float(v[0]), float(v[1])


def read_durations(path: Path) -> dict[str, float]:
    """Video lengths in seconds by video id, from Charades' ``Charades_v1_test.csv`` (columns ``id`` and
    ``length``, the file 2D-TAN-style Charades-STA loaders read) or a JSON object ``{vid: seconds}``.

    Raises:
        InputError: missing file, or neither form.
    """
    import csv

    path = Path(path)
    text = read_text(path)
    if path.suffix.lower() == ".csv":
        rows = list(csv.DictReader(text.splitlines()))
        if rows and not {"id", "length"} <= set(rows[0]):
            raise InputError(f"{path}: line 1: expected the columns 'id' and 'length' (Charades_v1_*.csv)")
        out = {}
        for n, row in enumerate(rows, 2):
            value = as_number(row.get("length"))
            if value is None:
                raise InputError(f"{path}: line {n}: length {row.get('length')!r} is not a number")
            out[str(row["id"]).strip()] = value
        return out
    data = json_items(path, text)
    if not isinstance(data, dict) or any(as_number(v) is None for v in data.values()):
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
    text = read_text(path)
    videos = VideoFolder(videos_dir)
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
                    raise BadRecord("expected 'VID start end##sentence'")
                head, sentence = raw.split("##", 1)
                parts = head.split()
                if len(parts) != 3:
                    raise BadRecord("expected 'VID start end##sentence'")
                vid = parts[0]
                return _charades_question(next_qid(vid), vid, videos.find(vid), sentence, parts[1], parts[2],
                                          as_number(durations.get(vid)), n)

            out.append(record_at(path, n, row))
            lines.append(n)
    else:
        if path.suffix.lower() == ".jsonl":
            data: Any = jsonl_items(path, text)
        elif first == "[":
            data = json_items(path, text)
        else:
            try:
                data = json.loads(text)
            except json.JSONDecodeError:
                data = jsonl_items(path, text)  # JSON lines without the .jsonl suffix
        if isinstance(data, dict) and not {"video", "caption"} <= set(data):  # MMN: {vid: {...}}
            for vid, anno in data.items():
                def per_video(vid=vid, anno=anno):
                    stamps, sentences = required(anno, "timestamps"), required(anno, "sentences")
                    if len(stamps) != len(sentences):
                        raise BadRecord(f"{len(stamps)} timestamps but {len(sentences)} sentences")
                    dur = as_number(anno.get("duration")) or as_number(durations.get(vid))
                    return [_charades_question(next_qid(vid), vid, videos.find(vid), sent, *_timestamp(ts), dur,
                                               f"video {vid!r}") for ts, sent in zip(stamps, sentences)]

                qs = record_at(path, f"video {vid!r}", per_video)
                out += qs
                lines += [f"video {vid!r}"] * len(qs)
        else:
            rows = data if isinstance(data, list) else [(1, data)]
            for n, rec in rows:
                def lmms_row(rec=rec, n=n):
                    name = str(required(rec, "video"))
                    vid = Path(name).stem
                    video = Path(videos_dir) / name if Path(name).suffix else videos.find(vid)
                    explicit = rec.get("id", rec.get("question_id"))
                    qid = str(explicit) if explicit is not None else next_qid(vid)
                    dur = as_number(rec.get("duration")) or as_number(durations.get(vid))
                    start, end = _timestamp(required(rec, "timestamp"))
                    return _charades_question(qid, vid, video, required(rec, "caption"), start, end, dur, n)

                out.append(record_at(path, n, lmms_row))
                lines.append(n)
    if not out:
        raise InputError(f"{path}: no Charades-STA queries in the file")
    return unique_questions(path, out, lines)


_SPAN_CLOCK = re.compile(r"\b(\d{1,2}:\d{2}(?::\d{2})?)\s*[–-]\s*(\d{1,2}:\d{2}(?::\d{2})?)\b")
_SPAN_NUMBER = re.compile(r"(\d+(?:\.\d+)?)\s*[–-]\s*(\d+(?:\.\d+)?)")
_NUMBER = re.compile(r"\b(\d+(?:\.\d+)?)\b")
_CLOCK = re.compile(r"\b(\d{1,2}:\d{2}(?::\d{2})?)\b")
_SPAN_FALLBACK = re.compile(r"(\d+(?:\.\d+)?)\s*s?\s*[–-]\s*(\d+(?:\.\d+)?)\s*s?")
_TIME_KEYWORDS = ("starts", "ends", "happens in", "start time", "end time", "start", "end", "happen")


def _clock_seconds(stamp: str) -> float:
    parts = [float(p) for p in stamp.split(":")]
    return parts[0] * 3600 + parts[1] * 60 + parts[2] if len(parts) == 3 else parts[0] * 60 + parts[1]


def _pairs(times: list[float]) -> list[list[float]]:
    times = times[: len(times) // 2 * 2]
    return [[times[i], times[i + 1]] for i in range(0, len(times), 2)]


def extract_time(paragraph: str) -> list[list[float]]:
    """Charades-STA's span reader (lmms-eval ``lmms_eval/tasks/charades_sta/utils.py:extract_time``), same
    behaviour: ``[[start_s, end_s]]`` (ordered) or ``[]``.

    The text is lower-cased, the prompt's example removed and every ``"to"`` replaced by ``"-"`` (so
    "towel" becomes "-wel"); sentences split at ``! ? \\n``; those with a time keyword are the candidates
    (all sentences if none). Tried in order, first hit wins: a clock range ``m:ss - m:ss``, a number range
    ``a - b``, the clock times of all candidates paired, the first number of each candidate paired, a
    range with ``s`` units. Only the first span is kept.
    """
    text = paragraph.lower().replace("a specific example is : 20.8 - 30.0 seconds", "").replace("to", "-")
    sentences = re.split(r"[!?\n]", text)
    candidates = [s for s in sentences if any(k in s for k in _TIME_KEYWORDS)] or sentences
    spans: list[list[float]] = []
    for sentence in candidates:
        found = _SPAN_CLOCK.findall(sentence)
        if found:
            spans = [[_clock_seconds(a), _clock_seconds(b)] for a, b in found]
            break
    if not spans:
        for sentence in candidates:
            found = _SPAN_NUMBER.findall(sentence)
            if found:
                spans = [[float(a), float(b)] for a, b in found]
                break
    if not spans:
        spans = _pairs([_clock_seconds(t) for sentence in candidates for t in _CLOCK.findall(sentence)])
    if not spans:
        firsts = [_NUMBER.findall(sentence) for sentence in candidates]
        spans = _pairs([float(f[0]) for f in firsts if f])
    if not spans:
        for sentence in candidates:
            found = _SPAN_FALLBACK.findall(sentence)
            if found:
                spans = [[float(a), float(b)] for a, b in found]
                break
    return [[a, b] if b > a else [b, a] for a, b in spans[:1]]
