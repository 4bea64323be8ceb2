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
"""

from __future__ import annotations

import json
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


def load_subtitles(path: Path, *, offset_s: float = 0.0) -> list[TranscriptSegment]:
    """Cues of an .srt, .vtt or LongVideoBench .json file as segments in time order
    (``source = "subtitles:<name>"``).

    Args:
        offset_s: seconds subtracted from every cue (LongVideoBench's ``starting_timestamp_for_subtitles``:
            the video starts that far into the subtitle timeline); cues that end before 0 are dropped,
            a start before 0 becomes 0.

    Raises:
        InputError: the file is missing, of another type, or cannot be parsed.
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

            cues = [(c.start.total_seconds(), c.end.total_seconds(), c.content) for c in srt.parse(text)]
        elif suffix == ".vtt":
            import webvtt

            cues = [(_vtt_seconds(c.start), _vtt_seconds(c.end), c.text) for c in webvtt.from_string(text)]
        elif suffix == ".json":
            cues = _json_cues(json.loads(text))
        else:
            raise InputError(f"unsupported subtitle format {suffix!r} (use .srt, .vtt or .json): {path}")
    except InputError:
        raise
    except Exception as exc:  # the parsers raise their own error types
        raise InputError(f"cannot parse subtitles {path.name}: {type(exc).__name__}: {exc}") from None
    if offset_s:
        cues = [(max(0.0, s - offset_s), e - offset_s, t) for s, e, t in cues if e - offset_s > 0]
    segments = [TranscriptSegment(round(s, 3), round(e, 3), _clean(t), source) for s, e, t in cues if _clean(t)]
    segments.sort(key=lambda seg: seg.start_s)
    return segments


def _json_cues(data) -> list[tuple[float, float, str]]:
    """``(start_s, end_s, text)`` of LongVideoBench subtitle entries (see the module docstring).

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
        cues.append((start, max(start, end), text))
    return cues


def _vtt_seconds(stamp: str) -> float:
    """``hh:mm:ss.mmm`` or ``mm:ss.mmm`` to seconds."""
    parts = [float(p) for p in stamp.replace(",", ".").split(":")]
    while len(parts) < 3:
        parts.insert(0, 0.0)
    h, m, s = parts
    return h * 3600 + m * 60 + s
