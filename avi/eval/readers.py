"""Reading annotation files for the benchmark loaders: JSON / JSONL (tolerant of the published files' quirks),
errors that name the file and the line, video paths, letters and numbers."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from avi.errors import InputError
from avi.jobs.spec import JobQuestion

VIDEO_EXTS = (".mp4", ".mkv", ".webm", ".avi", ".mov", ".m4v", ".mpg", ".mpeg", ".wmv", ".flv", ".ts", ".3gp")


class BadRecord(Exception):
    """A record that does not fit the format (wrapped into InputError with the file and line)."""




def read_text(path: Path) -> str:
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


def json_items(path: Path, text: str, *, tolerant: bool = False) -> Any:
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


def jsonl_items(path: Path, text: str) -> list[tuple[int, Any]]:
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


def records_of(path: Path, *, tolerant: bool = False) -> list[tuple[int, Any]]:
    """``[(line, record), …]`` of a JSON list or JSON-lines file (chosen by content: a ``.jsonl`` suffix or a
    first line that is a whole JSON object means JSON lines)."""
    text = read_text(path)
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    jsonl = Path(path).suffix.lower() == ".jsonl"
    if not jsonl and first.lstrip().startswith("{"):
        try:
            jsonl = isinstance(json.loads(first), dict)
        except json.JSONDecodeError:
            jsonl = False
    if jsonl:
        return jsonl_items(path, text)
    data = json_items(path, text, tolerant=tolerant)
    if not isinstance(data, list):
        raise InputError(f"{path}: line 1: expected a JSON list of records, got a JSON {type(data).__name__}")
    return data


def record_at(path: Path, line: int | str, fn: Callable[[], Any]) -> Any:
    """``fn()``, with a record's format problems raised as one-line InputErrors naming ``path`` and ``line``."""
    try:
        return fn()
    except InputError:
        raise
    except (BadRecord, KeyError, TypeError, ValueError, AttributeError) as exc:
        msg = str(exc) if isinstance(exc, BadRecord) else (
            f"missing field {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}")
        where = f"line {line}" if isinstance(line, int) else line
        raise InputError(f"{path}: {where}: {msg}") from None


def required(d: Any, key: str) -> Any:
    if not isinstance(d, dict):
        raise BadRecord(f"expected a JSON object, got {type(d).__name__}")
    if key not in d or d[key] is None:
        raise BadRecord(f"missing field {key!r}")
    return d[key]


class VideoFolder:
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


def unique_questions(path: Path, questions: list[JobQuestion], lines: list[int | str]) -> list[JobQuestion]:
    seen: dict[str, int | str] = {}
    for q, line in zip(questions, lines):
        if q.qid in seen:
            where = f"line {line}" if isinstance(line, int) else line
            raise InputError(f"{path}: {where}: question id {q.qid!r} appears twice (first at {seen[q.qid]})")
        seen[q.qid] = line
    return questions


_LETTER_PREFIX = re.compile(r"^\s*\(?([A-J])\s*[.):：]\s*")


def option_text(option: Any, index: int) -> str:
    """``"A. Apples."`` → ``"Apples."`` when the letter is the option's own (index 0 → A); else unchanged."""
    text = str(option).strip()
    m = _LETTER_PREFIX.match(text)
    if m and m.group(1) == "ABCDEFGHIJ"[index]:
        return text[m.end():].strip()
    return text


def answer_letter(answer: Any, n_options: int) -> str:
    letter = str(answer).strip().upper()
    if len(letter) != 1 or not ("A" <= letter < chr(ord("A") + n_options)):
        raise BadRecord(f"answer {answer!r} is not one of the {n_options} option letters")
    return letter


def as_number(v: Any) -> float | None:
    try:
        return float(v) if v is not None and v != "" else None
    except (TypeError, ValueError):
        return None


def selection(value: Any, allowed: Iterable, what: str, *, cast: Callable = str) -> set | None:
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
