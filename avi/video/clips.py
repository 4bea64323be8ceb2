"""Fixed-length clip segmentation (AVI §3.2.1: clips of Δt = 5 s)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Clip:
    """A contiguous time span of the video.

    Attributes:
        index: 0-based position in the video.
        start_s, end_s: bounds in seconds, ``start_s < end_s``.
    """

    index: int
    start_s: float
    end_s: float

    @property
    def id(self) -> str:
        return f"clip-{self.index:05d}"

    def contains(self, t_s: float) -> bool:
        return self.start_s <= t_s < self.end_s


def segment(duration_s: float, clip_seconds: float = 5.0, min_tail_s: float = 0.5) -> list[Clip]:
    """Cut ``[0, duration_s)`` into clips of ``clip_seconds``.

    The last clip is shorter; a tail under ``min_tail_s`` is merged into the
    previous clip instead of forming a clip of its own.

    Raises:
        ValueError: ``duration_s`` or ``clip_seconds`` is not positive.
    """
    if duration_s <= 0 or clip_seconds <= 0:
        raise ValueError("duration_s and clip_seconds must be > 0")
    clips: list[Clip] = []
    start = 0.0
    while start < duration_s - 1e-9:
        end = min(start + clip_seconds, duration_s)
        if clips and end - start < min_tail_s:
            last = clips.pop()
            clips.append(Clip(last.index, last.start_s, round(end, 3)))
            break
        clips.append(Clip(len(clips), round(start, 3), round(end, 3)))
        start = end
    return clips
