"""Subtitle files (.srt, .vtt, LongVideoBench .json) as transcript segments.

A sidecar next to the video (``talk.mp4`` → ``talk.srt``, ``talk.en.vtt``) or a
file given with ``--subtitles`` is used instead of, or beside, speech
recognition (Settings.transcript). Parsing uses the ``srt`` and ``webvtt-py``
libraries; markup such as ``<i>`` is removed and cue lines are joined.

A ``.json`` file is read in the LongVideoBench subtitle form (a list of entries,
either ``{"timestamp": [start_s, end_s], "text": ...}`` or
``{"start": "HH:MM:SS.xx", "end": "HH:MM:SS.xx", "line": ...}``; both read by
``insert_subtitles_into_frames`` in longvideobench/LongVideoBench
``longvideobench/longvideobench_dataset.py``). Sidecar detection stays with
.srt/.vtt (a .json beside a video is too often something else).

Every cue is checked before it is used (issue 55, :func:`check_cues`): finite times, no end before its start,
no start long after the video's end; the first bad cue is named in one line (exit 2).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from avi.backends.asr import TranscriptSegment
from avi.errors import InputError

SUFFIXES = (".srt", ".vtt")
_TAG = re.compile(r"<[^>]+>|\{\\[^}]*\}")


def find_sidecar(video: Path) -> Path | None:
    """A subtitle file beside ``video`` with the same stem (``x.srt``, ``x.vtt``, ``x.en.srt`` ...), or None."""
    video = Path(video)
    for suffix in SUFFIXES:
        exact = video.with_suffix(suffix)
        if exact.is_file():
            return exact
    candidates = sorted(p for p in video.parent.glob(f"{video.stem}.*") if p.suffix.lower() in SUFFIXES)
    return candidates[0] if candidates else None


def _clean(text: str) -> str:
    return " ".join(_TAG.sub("", text).split())


SUBTITLE_MARGIN_S = 30.0
"""How far past the video's end a cue may start (seconds) before the file is taken for another video's."""


def load_subtitles(path: Path, *, offset_s: float = 0.0, duration_s: float | None = None) -> list[TranscriptSegment]:
    """Cues of an .srt, .vtt or LongVideoBench .json file as segments in time order
    (``source = "subtitles:<name>"``).

    Every cue is checked (:func:`check_cues`): its times are finite, it does not end before it starts and, when
    ``duration_s`` is given, it starts no later than :data:`SUBTITLE_MARGIN_S` after the video's end. The first
    cue that fails is named in the error.

    Args:
        offset_s: seconds subtracted from every cue (LongVideoBench's ``starting_timestamp_for_subtitles``:
            the video starts that far into the subtitle timeline); cues that end before 0 are dropped,
            a start before 0 becomes 0 (with or without an offset).
        duration_s: the video's duration in seconds (None: not checked against it).

    Raises:
        InputError: the file is missing, of another type, cannot be parsed, or holds a bad cue (one line naming
            the file and the cue).
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"subtitle file not found: {path}")
    source = f"subtitles:{path.name}"
    suffix = path.suffix.lower()
    try:
        text = path.read_text(encoding="utf-8-sig", errors="replace")
        if suffix == ".srt":
            import srt

            cues = [(f"cue {c.index}", c.start.total_seconds(), c.end.total_seconds(), c.content)
                    for c in srt.parse(text)]
        elif suffix == ".vtt":
            import webvtt

            cues = [(f"cue {i}", _vtt_seconds(c.start), _vtt_seconds(c.end), c.text)
                    for i, c in enumerate(webvtt.from_string(text), 1)]
        elif suffix == ".json":
            cues = _json_cues(json.loads(text))
        else:
            raise InputError(f"unsupported subtitle format {suffix!r} (use .srt, .vtt or .json): {path}")
    except InputError:
        raise
    except Exception as exc:  # the parsers raise their own error types
        raise InputError(f"cannot parse subtitles {path.name}: {type(exc).__name__}: {exc}") from None
    problem = check_cues(cues, duration_s, offset_s)
    if problem:
        raise InputError(f"subtitles {path}: {problem}")
    cues = [(n, max(0.0, s - offset_s), e - offset_s, t) for n, s, e, t in cues if e - offset_s > 0]
    segments = [TranscriptSegment(round(s, 3), round(e, 3), _clean(t), source) for _, s, e, t in cues if _clean(t)]
    segments.sort(key=lambda seg: seg.start_s)
    return segments


def check_cues(cues: list[tuple[str, float, float, str]], duration_s: float | None = None,
               offset_s: float = 0.0) -> str | None:
    """Why the first bad cue of ``cues`` (``(name, start_s, end_s, text)`` in file order) cannot be used, or None.

    A cue is bad when a time is not finite (NaN, Infinity), it ends before it starts, or (with ``duration_s``)
    it starts more than :data:`SUBTITLE_MARGIN_S` seconds after the video's end (after ``offset_s`` is
    subtracted): such a file is of another video or broken, and its cues would be shown to the model as
    "[nans–nans]" or far outside the video.
    """
    for name, start, end, _ in cues:
        if not (math.isfinite(start) and math.isfinite(end)):
            return f"{name} has a time that is not a finite number ({start!r} --> {end!r})"
        if end < start:
            return f"{name} ends before it starts ({start:.3f} s --> {end:.3f} s)"
        if duration_s is not None and start - offset_s > duration_s + SUBTITLE_MARGIN_S:
            return (f"{name} starts at {start - offset_s:.3f} s, more than {SUBTITLE_MARGIN_S:g} s after the video's "
                    f"end ({duration_s:.3f} s): is it the subtitle file of another video?")
    return None


def _json_cues(data) -> list[tuple[str, float, float, str]]:
    """``(name, start_s, end_s, text)`` of LongVideoBench subtitle entries (see the module docstring).

    An entry whose end is missing (``[12.3, null]``, as Whisper-style chunks end) ends where the next
    entry starts, or 2 s after its start for the last one.

    Raises:
        ValueError: not a list of entries of either form.
    """
    if not isinstance(data, list):
        raise ValueError("a JSON subtitle file must be a list of entries")
    raw: list[tuple[float, float | None, str]] = []
    for i, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise ValueError(f"entry {i} is not an object")
        if "timestamp" in entry:
            start, end = entry["timestamp"]
            text = entry.get("text", "")
            start, end = float(start), (float(end) if isinstance(end, (int, float)) else None)
        elif "start" in entry:
            start, end, text = _vtt_seconds(str(entry["start"])), _vtt_seconds(str(entry["end"])), entry.get("line", "")
        else:
            raise ValueError(f"entry {i} has neither 'timestamp' nor 'start'")
        raw.append((start, end, str(text or "")))
    cues = []
    for i, (start, end, text) in enumerate(raw):
        if end is None:
            end = raw[i + 1][0] if i + 1 < len(raw) and raw[i + 1][0] > start else start + 2.0
        cues.append((f"entry {i}", start, end, text))
    return cues


def _vtt_seconds(stamp: str) -> float:
    """``hh:mm:ss.mmm`` or ``mm:ss.mmm`` to seconds."""
    parts = [float(p) for p in stamp.replace(",", ".").split(":")]
    while len(parts) < 3:
        parts.insert(0, 0.0)
    h, m, s = parts
    return h * 3600 + m * 60 + s
