"""``avi eval jsonl``: a benchmark anyone can write, one JSON question per line (format: ``bench/README.md``).

Each line is ``{"qid", "video", "question", "type", "answer", "options", "tags", "source", "how"}``
(``qid``, ``video`` and ``question`` required). The question goes to the agent as a user would type it
(``answer_type`` ``auto``: the agent infers choice / interval / text from the text); the truth stays
out of the agent's sight, in :attr:`JobQuestion.gt`. A line without ``type`` or without ``answer``
(except ``cannot_tell``, whose truth may be unknown) is answered but not scored.

Scoring rules (one per ``type``; a failed or missing record is wrong, IoU 0). Two modes are scored side by
side. **strict** (the default, ``correct``; issue 34) reads the answer's *leading statement* (its text up to
the first sentence end, line break or semicolon, parenthesised asides removed: :func:`leading_statement`) and
takes an answer that *hedges* (:func:`hedges`: avi's ``cannot_tell`` flag, "cannot tell" and the like, "a
guess", "best guess", "not measured") as no answer for ``text``, ``number``, ``yesno`` and ``interval``.
**lenient** (``lenient``; the rules before issue 34) reads the whole answer and accepts hedged answers.

=============== ========================================================================================
``choice``      both: ``record["choice"]`` (the letter avi delivered) equals the truth letter (a letter the
                answer flags as a guess counts; the report counts those apart, ``guessed``).
``text``        strict: one accepted string occurs in the leading statement as whole words (lower-cased,
                punctuation turned into spaces on both sides: :func:`text_match`), the statement offers no
                alternatives ("red or blue", "either ... or") and names no second member of the accepted
                string's closed class (colours, sides, weekdays, months: "red and blue" for a red car).
                lenient: one accepted string anywhere in the answer.
``number``      strict: the leading statement states exactly one count (:func:`stated_number`: clock times
                and numbers with a time unit are not counts; "3 or 4" states none). lenient: the first
                number anywhere, digits or a number word zero–twenty (:func:`first_number`).
``yesno``       strict: the leading statement holds ``yes`` or ``no`` and not both (:func:`stated_yes_no`).
                lenient: the first word ``yes`` or ``no`` anywhere (:func:`first_yes_no`); a cannot-tell
                answer is no answer in both modes.
``interval``    IoU of ``record["interval"]`` with the truth ``[start_s, end_s]``; right when IoU ≥ 0.5 (and,
                strict, the answer does not hedge); the report adds mIoU, R@0.3 and R@0.5 (strict: a hedged
                answer's IoU is 0).
``cannot_tell`` right when ``record["cannot_tell"]`` is true, or the answer text says the profile cannot
                tell (:func:`says_cannot_tell`), or — when ``answer`` gives the true answer — the answer is
                right by the rule of that answer's kind (:func:`truth_kind`) in the same mode. The report
                states beside it what answering "cannot tell" to every question would score.
=============== ========================================================================================

A line's optional ``split`` (``tune`` or ``report`` in avi's own benchmark) selects it with ``--split``.

The report (:func:`score_jsonl`, :func:`format_jsonl_report`) gives accuracy overall, per type, per
source and per tag with 95 % CIs clustered by video (the :class:`~avi.eval.scoring.Score` machinery
of the other benchmarks), the histogram of delivered letters beside the truth's, the interval
metrics, and seconds / steps / frames per answered question.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from avi.errors import InputError
from avi.eval.answer_reading import (
    first_number,
    first_yes_no,
    hedges,
    normalize_text,
    says_cannot_tell,
    stated_number,
    stated_yes_no,
    strict_text,
    text_match,
)
from avi.eval.jsonl_videos import VIDEO_TYPES, judge_videos, video_list, video_truth
from avi.eval.readers import BadRecord, jsonl_items, read_text, record_at, required
from avi.eval.stats import record_status
from avi.jobs.spec import JobQuestion
from avi.video.spans import temporal_iou

BENCHMARK = "jsonl"
TYPES = ("choice", "text", "number", "yesno", "interval", "cannot_tell", *VIDEO_TYPES)
"""The question types, in the order the report lists them."""

LETTERS = "ABCDEFGHIJ"

SCORING_NOTE = ("strict rules (issue 34): choice = delivered letter; text = an accepted string in the answer's "
                "leading statement, no alternatives, no second colour/side/weekday/month; number = the one count "
                "the leading statement states (clock times and seconds are not counts); yesno = the yes or no of "
                "the leading statement; interval = IoU >= 0.5; a hedged answer (cannot tell, a guess, not "
                "measured) is wrong for text, number, yesno and interval; cannot_tell = avi's cannot_tell flag, a "
                "'cannot tell' phrase, or right by the true answer's rule; failed or missing = wrong (IoU 0). "
                "lenient = the rules before issue 34: the first match anywhere in the answer, hedges accepted")
TIMING_NOTE = ("per answered question: seconds = the agent's time (record seconds.agent; the video's index build "
               "is not in it), p50/p90 linearly interpolated; steps = agent iterations; frames = frames looked at")


# ------------------------------------------------------------------------------------------------- loading


def jsonl_files(annotations: Path) -> list[Path]:
    """The question files of ``annotations``: the file itself, or a folder's ``*.jsonl`` files sorted by name.

    Raises:
        InputError: the path does not exist, or the folder has no ``.jsonl`` file.
    """
    path = Path(annotations)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() == ".jsonl")
        if not files:
            raise InputError(f"no .jsonl files in folder {path}")
        return files
    if not path.is_file():
        raise InputError(f"annotation file not found: {path}")
    return [path]


def truth_kind(answer: Any) -> str | None:
    """The rule a ``cannot_tell`` question's known true answer is judged by.

    Returns:
        ``choice`` (one letter A–J), ``yesno`` (``"yes"``/``"no"``), ``text`` (any other string, or a
        non-empty list of strings), ``number`` (an int or float, not a bool), ``interval`` (a list of two
        numbers), or None (anything else).
    """
    if isinstance(answer, bool):
        return None
    if isinstance(answer, (int, float)):
        return "number" if math.isfinite(answer) else None
    if isinstance(answer, str):
        s = answer.strip()
        if len(s) == 1 and s.upper() in LETTERS:
            return "choice"
        if s.lower() in ("yes", "no"):
            return "yesno"
        return "text" if normalize_text(s) else None
    if isinstance(answer, list) and answer:
        if all(isinstance(a, str) for a in answer):
            return "text" if all(normalize_text(a) for a in answer) else None
        if len(answer) == 2 and all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in answer):
            return "interval"
    return None


def _truth(kind: str, answer: Any, options: list[str] | None) -> Any:
    """``answer`` checked and normalised for ``kind`` (raises BadRecord when it does not fit)."""
    if kind == "choice":
        letter = str(answer).strip().upper() if isinstance(answer, str) else ""
        n = len(options) if options else len(LETTERS)
        if len(letter) != 1 or letter not in LETTERS[:n]:
            raise BadRecord(f"answer {answer!r} is not an option letter (A-{LETTERS[n - 1]})")
        return letter
    if kind == "text":
        accepted = [answer] if isinstance(answer, str) else answer
        if not isinstance(accepted, list) or not accepted or not all(
                isinstance(a, str) and normalize_text(a) for a in accepted):
            raise BadRecord(f"answer {answer!r} is not a list of accepted strings (type text)")
        return accepted
    if kind == "number":
        if isinstance(answer, bool):
            raise BadRecord(f"answer {answer!r} is not a number (type number)")
        try:
            value = float(answer)
        except (TypeError, ValueError):
            raise BadRecord(f"answer {answer!r} is not a number (type number)") from None
        if not math.isfinite(value):
            raise BadRecord(f"answer {answer!r} is not a finite number")
        return int(value) if value.is_integer() else value
    if kind == "yesno":
        word = str(answer).strip().lower() if isinstance(answer, str) else ""
        if word not in ("yes", "no"):
            raise BadRecord(f"answer {answer!r} is not \"yes\" or \"no\" (type yesno)")
        return word
    if kind == "interval":
        try:
            ok = len(answer) == 2 and not any(isinstance(a, bool) for a in answer)
            start, end = (float(answer[0]), float(answer[1])) if ok else (0.0, -1.0)
        except (TypeError, ValueError):
            start, end = 0.0, -1.0
        if not (math.isfinite(start) and math.isfinite(end)) or end < start:
            raise BadRecord(f"answer {answer!r} is not [start_s, end_s] with start <= end (type interval)")
        return [start, end]
    if kind == "cannot_tell":
        if answer is None:
            return None
        inner = truth_kind(answer)
        if inner is None:
            raise BadRecord(f"answer {answer!r} of a cannot_tell question is not a letter, yes/no, a string, a list "
                       f"of strings, a number or [start_s, end_s] (or null)")
        return _truth(inner, answer, options)
    raise BadRecord(f"type {kind!r} is not one of {', '.join(TYPES)}")


def _str_list(value: Any, key: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool)
                                       for v in value):
        return [str(v) for v in value]
    raise BadRecord(f"{key} {value!r} is not a list of strings")


def _question(path: Path, line: int, rec: Any, videos_dir: Path) -> JobQuestion:
    if not isinstance(rec, dict):
        raise BadRecord(f"expected a JSON object, got {type(rec).__name__}")
    qid = required(rec, "qid")
    if isinstance(qid, bool) or not isinstance(qid, (str, int)) or not str(qid).strip():
        raise BadRecord(f"qid {qid!r} is not a non-empty string")
    video = required(rec, "video")
    files = video_list(video)  # several videos (issue 21): avi/eval/jsonl_videos.py
    video = files[0] if files else video
    if not isinstance(video, str) or not video.strip():
        raise BadRecord(f"video {video!r} is not a file name")
    question = required(rec, "question")
    if not isinstance(question, str) or not question.strip():
        raise BadRecord("the question is empty")
    kind = rec.get("type")
    if kind is not None and kind not in TYPES:
        raise BadRecord(f"type {kind!r} is not one of {', '.join(TYPES)}")
    options = _str_list(rec.get("options"), "options") or None
    if options and len(options) > len(LETTERS):
        raise BadRecord(f"at most {len(LETTERS)} options, got {len(options)}")
    answer = rec.get("answer")
    if kind is None:
        gt = answer  # kept for the record; not scored without a type
    elif answer is None and kind != "cannot_tell":
        gt = None
    elif kind in VIDEO_TYPES:
        gt = video_truth(kind, answer, files)
    else:
        gt = _truth(kind, answer, options)
    source = rec.get("source")
    if source is not None and not isinstance(source, str):
        raise BadRecord(f"source {source!r} is not a string")
    split = rec.get("split")
    if split is not None and (not isinstance(split, str) or not split.strip()):
        raise BadRecord(f"split {split!r} is not a non-empty string")
    meta = {"benchmark": BENCHMARK, "video_id": "+".join(files) if files else video.strip(), "type": kind,
            "tags": _str_list(rec.get("tags"), "tags"), "source": source, "file": path.name, "line": line}
    if split is not None:
        meta["split"] = split.strip()
    if files:
        meta["videos"] = files
    if rec.get("how") is not None:
        meta["how"] = str(rec["how"])
    paths = [Path(f).expanduser() for f in files or [video.strip()]]
    paths = [f if f.is_absolute() else Path(videos_dir) / f for f in paths]
    return JobQuestion(qid=str(qid).strip(), video=paths[0], question=question, answer_type="auto", options=options,
                       gt=gt, meta=meta, videos=paths if files else None)


def load_jsonl(annotations: Path, videos_dir: Path) -> list[JobQuestion]:
    """The questions of a JSONL benchmark (format: ``bench/README.md``).

    Args:
        annotations: a ``.jsonl`` file, or a folder whose ``*.jsonl`` files are read in sorted name order.
        videos_dir: folder a relative ``video`` is resolved against (files need not exist: the runner
            records a missing video as a failed question).

    Returns:
        One question per non-blank line, in file order: ``answer_type`` ``auto``; ``gt`` = the truth
        normalised for its type (letter upper-case; text a list of strings; number int or float; yes/no
        lower-case; interval ``[start_s, end_s]`` floats; cannot_tell the true answer by its own kind, or
        None); ``options`` as given; ``meta`` = ``benchmark`` (``"jsonl"``), ``video_id`` (the ``video``
        value: the confidence intervals' cluster), ``type`` (None = not scored), ``tags`` (list), ``source``,
        ``file`` and ``line`` (where the question is), ``how`` and ``split`` when given.

    Raises:
        InputError: missing path or a folder without .jsonl files; a line that is not JSON, lacks qid /
            video / question, has an unknown type or an answer that does not fit its type (file and line
            named); a qid used twice (both places named); no questions at all.
    """
    out: list[JobQuestion] = []
    seen: dict[str, str] = {}
    files = jsonl_files(annotations)
    for path in files:
        for line, rec in jsonl_items(path, read_text(path)):
            q = record_at(path, line, lambda rec=rec, line=line, path=path: _question(path, line, rec, videos_dir))
            where = f"{path.name} line {line}" if len(files) > 1 else f"line {line}"
            if q.qid in seen:
                raise InputError(f"{path}: line {line}: question id {q.qid!r} appears twice (first at "
                                 f"{seen[q.qid]})")
            seen[q.qid] = where
            out.append(q)
    if not out:
        raise InputError(f"{annotations}: no questions in {'the folder' if len(files) > 1 else 'the file'}")
    return out


def select_split(questions: list[JobQuestion], split: str) -> list[JobQuestion]:
    """The questions whose ``split`` key is ``split`` (avi's benchmark: ``tune`` or ``report``), in file order.

    Raises:
        InputError: no question has that split (the splits the questions do have are named).
    """
    picked = [q for q in questions if q.meta.get("split") == split]
    if not picked:
        have = sorted({str(q.meta["split"]) for q in questions if q.meta.get("split")})
        raise InputError(f"no question has split {split!r} (the questions have: "
                         f"{', '.join(have) if have else 'no split key'})")
    return picked


def stratified_subset(questions: list[JobQuestion], n: int) -> list[JobQuestion]:
    """A deterministic pick of ``n`` questions spread over the types, for a quick look.

    The questions are grouped by ``meta["type"]`` (untyped ones form one group), groups in the order their
    first question appears; within a group the videos take turns (each video's first question of that type,
    then each video's second, …), the sources (``meta["source"]``) alternating and, within a source, videos
    with more questions first. The pick takes each group's first question in turn, then each group's
    second, … (round-robin) until ``n`` are taken. Returned in file order; all of them when ``n`` ≥ their
    number.

    Raises:
        InputError: ``n`` < 1.
    """
    if n < 1:
        raise InputError("--subset must be at least 1")
    groups: dict[str, list[int]] = {}
    for i, q in enumerate(questions):
        groups.setdefault(str(q.meta.get("type") or ""), []).append(i)
    # within a type, take the videos in turn (first question of each video, then the second, ...): the sources
    # (real, synthetic) alternate, and within a source the videos with the most questions come first (ties in
    # file order), so a small subset spans real and synthetic footage
    counts: dict[str, int] = {}
    source_of: dict[str, str] = {}
    for q in questions:
        counts[str(q.video)] = counts.get(str(q.video), 0) + 1
        source_of.setdefault(str(q.video), str(q.meta.get("source") or ""))
    by_source: dict[str, list[str]] = {}
    for v in sorted(counts, key=lambda v: -counts[v]):  # stable: file order among equals
        by_source.setdefault(source_of[v], []).append(v)
    lists = sorted(by_source.values(), key=lambda vs: -sum(counts[v] for v in vs))
    interleaved = [vs[k] for k in range(max(map(len, lists), default=0)) for vs in lists if k < len(vs)]
    video_order = {v: k for k, v in enumerate(interleaved)}
    for key, members in groups.items():
        nth: dict[str, int] = {}
        ranked = []
        for i in members:
            v = str(questions[i].video)
            ranked.append((nth.get(v, 0), video_order[v], i))
            nth[v] = nth.get(v, 0) + 1
        groups[key] = [i for _, _, i in sorted(ranked)]
    picked: list[int] = []
    rank = 0
    while len(picked) < min(n, len(questions)):
        for members in groups.values():
            if rank < len(members) and len(picked) < n:
                picked.append(members[rank])
        rank += 1
    return [questions[i] for i in sorted(picked)]


def _span(v: Any) -> list[float] | None:
    try:
        if v is not None and len(v) == 2:
            a, b = float(v[0]), float(v[1])
            return [min(a, b), max(a, b)] if math.isfinite(a) and math.isfinite(b) else None
    except (TypeError, ValueError):
        pass
    return None


def _judge(kind: str, gt: Any, record: dict, text: str, files: list[str] | None = None, *,
           strict: bool = True) -> tuple[bool, Any, float | None]:
    """(right, what was read, IoU or None) of an answered record by ``kind``'s rule in one mode."""
    hedged = strict and kind in ("text", "number", "yesno", "interval") and hedges(record, text)
    if kind == "choice":
        c = record.get("choice")
        pred = str(c).strip().upper() if c not in (None, "") else None
        return pred is not None and pred == gt, pred, None
    if kind == "text":
        found = None if hedged else strict_text(text, gt) if strict else text_match(text, gt)
        return found is not None, found, None
    if kind == "number":
        value = None if hedged else stated_number(text) if strict else first_number(text)
        return value is not None and abs(value - float(gt)) < 1e-9, value, None
    if kind == "yesno":  # "cannot tell ... no text or ..." is no answer, not the word no
        if hedged or record.get("cannot_tell") or says_cannot_tell(text):
            word = None
        else:
            word = stated_yes_no(text) if strict else first_yes_no(text)
        return word is not None and word == gt, word, None
    if kind == "interval":
        pred = _span(record.get("interval"))
        iou = temporal_iou(gt, pred) if pred and not hedged else 0.0
        return iou >= 0.5, pred, iou
    if kind in VIDEO_TYPES:
        return judge_videos(kind, gt, record, files)
    raise ValueError(f"unknown rule {kind!r}")


def is_scored(q: JobQuestion) -> bool:
    """Whether ``q`` counts in the score: it has a known type and a truth (``cannot_tell`` needs none)."""
    kind = q.meta.get("type")
    return kind in TYPES and (kind == "cannot_tell" or q.gt is not None)


def grade_jsonl(question: JobQuestion, record: dict | None) -> dict:
    """One question's score fields (what ``avi eval jsonl`` writes as the record's ``score``).

    Args:
        question: from :func:`load_jsonl`.
        record: its results record (``status``, ``answer``, ``choice``, ``interval``, ``cannot_tell``), or
            None (missing).

    Returns:
        ``status`` (ok / failed / missing), ``type``, ``gt``, ``scored`` (in the score), ``correct`` (strict
        rules, bool; None when not scored), ``pred`` (what the strict rule read: letter, matched string,
        number, yes/no word, ``[start_s, end_s]``; None when nothing), ``iou`` (interval rule, strict: 0 for a
        hedged answer; else None), ``lenient`` and ``lenient_iou`` (the same by the lenient rules), ``hedged``
        (the answer hedges: :func:`hedges`) and, for cannot_tell, ``by`` (``flag``, ``phrase`` or ``answer``:
        what made it right, strict; None when wrong).
    """
    kind, status = question.meta.get("type"), record_status(record)
    ok = status == "ok"
    rec = record if ok else {}
    text = rec.get("answer") if isinstance(rec.get("answer"), str) else ""
    out: dict[str, Any] = {"status": status, "type": kind, "gt": question.gt, "scored": is_scored(question),
                           "correct": None, "pred": None, "iou": None, "lenient": None, "lenient_iou": None,
                           "hedged": bool(ok and hedges(rec, text))}
    if not out["scored"]:
        return out
    if kind != "cannot_tell":
        files = question.meta.get("videos")
        if ok:
            out["correct"], out["pred"], out["iou"] = _judge(kind, question.gt, rec, text, files)
            out["lenient"], _, out["lenient_iou"] = _judge(kind, question.gt, rec, text, files, strict=False)
        else:
            out["correct"] = out["lenient"] = False
            out["iou"] = out["lenient_iou"] = 0.0 if kind == "interval" else None
        return out
    by = None
    if ok and rec.get("cannot_tell") is True:
        by = "flag"
    elif ok and says_cannot_tell(text):
        by = "phrase"
    lenient = by is not None
    if ok and question.gt is not None:
        kind_of_truth = truth_kind(question.gt)
        right, out["pred"], out["iou"] = _judge(kind_of_truth, question.gt, rec, text)
        lenient = lenient or _judge(kind_of_truth, question.gt, rec, text, strict=False)[0]
        if right and by is None:
            by = "answer"
    out["correct"], out["by"], out["lenient"] = by is not None, by, lenient
    return out
