"""Job input of ``avi batch``: a manifest (JSONL or CSV) of videos and questions, or a folder of videos
with one question list applied to every video.

JSONL manifest, one object per line, either one question::

    {"video": "talks/a.mp4", "question": "Who speaks first?", "qid": "a-1",
     "answer_type": "choice", "options": ["the host", "the guest"], "subtitles": "talks/a.srt"}

or one question over several videos (issue 21; the tools then take a ``video`` argument)::

    {"videos": ["cams/north.mp4", "cams/south.mp4"], "question": "Which video shows a red car?"}

or one video (or one set of ``videos``) with its questions (strings or objects with the fields above)::

    {"video": "talks/b.mp4", "questions": ["How many people?", {"question": "When does it rain?",
     "answer_type": "interval"}]}

CSV manifest: a header with ``video`` and ``question`` and optionally ``qid``, ``answer_type``,
``options`` (separated by ``|``) and ``subtitles``.

Relative paths are resolved against the manifest's folder. A question without ``qid`` gets
``<video as written>#<n>`` (n-th question of that video, from 1): stable as long as the manifest
is, which is what resuming needs.

Question list for a folder (``--questions FILE``): a text file with one question per line
(blank lines and ``#`` comments skipped), or a JSONL file of question objects.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from pydantic import ValidationError

from avi.errors import InputError
from avi.jobs.spec import JobQuestion, format_choice_question
from avi.questions import clean_question

_FIELDS = {"qid", "video", "question", "answer_type", "options", "subtitles", "meta"}


def _question(base: Path, video: str, item: dict, n: int, where: str, videos: list[str] | None = None) -> JobQuestion:
    unknown = set(item) - _FIELDS - {"questions"}
    if unknown:
        raise InputError(f"{where}: unknown field(s) {', '.join(sorted(unknown))} "
                         f"(known: {', '.join(sorted(_FIELDS))})")
    text = item.get("question")
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{where}: no question text")
    text = clean_question(text, what=f"{where}: the question")
    options = item.get("options")
    if isinstance(options, str):
        options = [o.strip() for o in options.split("|") if o.strip()]
    answer_type = item.get("answer_type") or ("choice" if options else "auto")
    if options:
        text = format_choice_question(text, options)
    subtitles = item.get("subtitles") or None
    try:
        return JobQuestion(qid=str(item.get("qid") or f"{video}#{n}"), video=base / video, question=text,
                           answer_type=answer_type, options=options or None,
                           subtitles=(base / subtitles) if subtitles else None, meta=item.get("meta") or {},
                           videos=[base / v for v in videos] if videos else None)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(f"{where}: {'.'.join(str(x) for x in err['loc'])}: {err['msg']}") from None


def _expand(base: Path, obj: dict, counts: dict[str, int], where: str) -> list[JobQuestion]:
    videos = obj.get("videos")
    if videos is not None:
        if "video" in obj:
            raise InputError(f"{where}: give \"video\" (one) or \"videos\" (several), not both")
        if not isinstance(videos, list) or len(videos) < 2 or not all(isinstance(v, str) and v.strip()
                                                                      for v in videos):
            raise InputError(f"{where}: \"videos\" must list at least two video paths")
        obj = {k: v for k, v in obj.items() if k != "videos"}
        obj["video"] = "+".join(videos)  # the default qid's stem
    video = obj.get("video")
    if not isinstance(video, str) or not video.strip():
        raise InputError(f"{where}: no \"video\" path")
    items = obj["questions"] if "questions" in obj else [obj]
    if not isinstance(items, list) or not items:
        raise InputError(f"{where}: \"questions\" must be a non-empty list")
    out = []
    for item in items:
        if isinstance(item, str):
            item = {"question": item}
        if not isinstance(item, dict):
            raise InputError(f"{where}: a question must be a string or an object")
        item = {k: v for k, v in item.items() if k != "questions"}
        if "questions" in obj:
            item = {**{k: v for k, v in obj.items() if k in {"subtitles"}}, **item}
        item.pop("video", None)
        counts[video] = counts.get(video, 0) + 1
        q = _question(base, videos[0] if videos else video, item, counts[video], where, videos)
        out.append(q.model_copy(update={"qid": str(item.get("qid") or f"{video}#{counts[video]}")}) if videos else q)
    return out


def read_text(path: Path) -> str:
    """The UTF-8 text of a manifest or questions file.

    Raises:
        InputError: unreadable, or not valid UTF-8 (the message names the line and the byte).
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise InputError(f"{path} line {line} is not valid UTF-8 (byte 0x{data[exc.start]:02x}); "
                         f"save the file as UTF-8") from None


def load_manifest(path: Path) -> list[JobQuestion]:
    """Questions of a JSONL (``.jsonl``/``.json``) or CSV (``.csv``) manifest.

    Raises:
        InputError: unreadable file, a line that is not a JSON object, a missing field (names the line).
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"no manifest file {path}")
    base = path.parent
    counts: dict[str, int] = {}
    questions: list[JobQuestion] = []
    if path.suffix.lower() == ".csv":
        with io.StringIO(read_text(path), newline="") as f:
            reader = csv.DictReader(f)
            missing = {"video", "question"} - set(reader.fieldnames or [])
            if missing:
                raise InputError(f"{path}: the CSV header lacks {', '.join(sorted(missing))}")
            for n, row in enumerate(reader, 2):
                row = {k: v for k, v in row.items() if k and v not in (None, "")}
                video = row.pop("video", "")
                questions += _expand(base, {"video": video, **row}, counts, f"{path} line {n}")
    else:
        for n, line in enumerate(read_text(path).splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path} line {n} is not JSON ({exc.msg})") from None
            except RecursionError:
                raise InputError(f"{path} line {n} is nested too deeply to read") from None
            if not isinstance(obj, dict):
                raise InputError(f"{path} line {n} is not a JSON object")
            questions += _expand(base, obj, counts, f"{path} line {n}")
    if not questions:
        raise InputError(f"{path} has no questions")
    return questions


def load_question_list(path: Path) -> list[dict]:
    """Questions of a ``--questions`` file: text (one per line) or JSONL (objects with ``question`` …)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"no questions file {path}")
    items = []
    for n, line in enumerate(read_text(path).splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if s.startswith("{"):
            try:
                obj = json.loads(s)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path} line {n} is not JSON ({exc.msg})") from None
            except RecursionError:
                raise InputError(f"{path} line {n} is nested too deeply to read") from None
            if not isinstance(obj, dict) or "video" in obj:
                raise InputError(f"{path} line {n}: a question object without \"video\" (it applies to all videos)")
            items.append(obj)
        else:
            items.append({"question": s})
    if not items:
        raise InputError(f"{path} has no questions")
    return items


def folder_job(folder: Path, questions_file: Path) -> list[JobQuestion]:
    """Every video directly in ``folder`` (sorted by name) × every question of ``questions_file``.

    qids are ``<video file name>#<n>``; a sidecar subtitle file is found by the index as usual.
    """
    from avi.index.build import video_files

    folder = Path(folder)
    videos = video_files(folder)
    if not videos:
        raise InputError(f"no video files in folder {folder}")
    items = load_question_list(questions_file)
    out = []
    for video in videos:
        for n, item in enumerate(items, 1):
            out.append(_question(folder, video.name, dict(item), n, f"{questions_file} question {n}"))
    return out
