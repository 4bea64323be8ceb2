"""Subtitle files (.srt, .vtt) as transcript segments.

A sidecar next to the video (``talk.mp4`` → ``talk.srt``, ``talk.en.vtt``) or a
file given with ``--subtitles`` is used instead of, or beside, speech
recognition (Settings.transcript). Parsing uses the ``srt`` and ``webvtt-py``
libraries; markup such as ``<i>`` is removed and cue lines are joined.
"""

from __future__ import annotations

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


def load_subtitles(path: Path) -> list[TranscriptSegment]:
    """Cues of an .srt or .vtt file as segments in time order (``source = "subtitles:<name>"``).

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
        else:
            raise InputError(f"unsupported subtitle format {suffix!r} (use .srt or .vtt): {path}")
    except InputError:
        raise
    except Exception as exc:  # the parsers raise their own error types
        raise InputError(f"cannot parse subtitles {path.name}: {type(exc).__name__}: {exc}") from None
    segments = [TranscriptSegment(round(s, 3), round(e, 3), _clean(t), source) for s, e, t in cues if _clean(t)]
    segments.sort(key=lambda seg: seg.start_s)
    return segments


def _vtt_seconds(stamp: str) -> float:
    """``hh:mm:ss.mmm`` or ``mm:ss.mmm`` to seconds."""
    parts = [float(p) for p in stamp.replace(",", ".").split(":")]
    while len(parts) < 3:
        parts.insert(0, 0.0)
    h, m, s = parts
    return h * 3600 + m * 60 + s
