"""One frame budget per question, scaled by the factor α (VideoSeek, arXiv 2603.20185, §4.1 and App. A.2).

VideoSeek scales every tool's sample with one factor α: ``overview`` looks at 16α frames spread over the whole
video, ``skim`` at 4α frames inside one range, ``focus`` at up to 4α frames of a short clip; α = 4 on LVBench
(videos of about an hour and more) and α = 2 on VideoMME, LongVideoBench and Video-Holmes (videos up to an
hour). avi takes the same factor for its question budget: a question may look at :data:`FRAMES_PER_ALPHA` × α
frames in all (256 for videos up to an hour, avi's fixed budget before α; 512 beyond), unless ``frame_budget``
sets a number (0 = no budget). The frames are counted per tool in the trace (``totals.frames_per_tool``) and in
``avi-run --json`` (``frames``).
"""

from __future__ import annotations

#: VideoSeek's bases (its repository's defaults: overview_base 16, skim_base 4, focus_base 4)
OVERVIEW_BASE = 16
SKIM_BASE = 4
#: frames per question per unit of α (avi's choice: at α = 2 the 256 frames avi allowed before α, room for an
#: overview (16α), one boundary_detect minute at 2 fps (60α) and a dozen skim or focus calls of 4α)
FRAMES_PER_ALPHA = 128
#: videos longer than this get α = 4 (VideoSeek: 4 on LVBench, mean length 68 min; 2 on benchmarks up to 1 h)
LONG_VIDEO_S = 3600.0


def frame_budget_value(value: object) -> int | str:
    """The ``frame_budget`` setting from what a user wrote: ``"auto"``, or a whole number of frames in
    [0, 1000000] (0 = no budget).

    Raises:
        ValueError: anything else (pydantic reports it with the setting's name).
    """
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    try:
        n = int(str(value).strip()) if not isinstance(value, bool) else None
    except ValueError:
        n = None
    if n is None or not 0 <= n <= 1_000_000:
        raise ValueError("must be auto or a whole number of frames from 0 (no budget) to 1000000")
    return n


def frame_alpha(duration_s: float, setting: float = 0.0) -> float:
    """The frame-budget factor α for a video of ``duration_s`` seconds.

    Args:
        duration_s: video length in seconds.
        setting: ``Settings.frame_alpha``; 0 = by length (2 up to :data:`LONG_VIDEO_S`, 4 beyond).
    """
    if setting and setting > 0:
        return float(setting)
    return 4.0 if duration_s > LONG_VIDEO_S else 2.0


def question_budget(duration_s: float, settings) -> int | None:
    """Frames the perceive tools may look at for one question; ``None`` = no budget.

    ``settings.frame_budget`` is a number of frames (0 = no budget) or ``"auto"``: :data:`FRAMES_PER_ALPHA` × α
    (:func:`frame_alpha`). Settings without the field (test doubles) have no budget.
    """
    budget = getattr(settings, "frame_budget", None)
    if budget is None:
        return None
    if budget == "auto":
        return int(round(FRAMES_PER_ALPHA * frame_alpha(duration_s, getattr(settings, "frame_alpha", 0.0) or 0.0)))
    return int(budget) or None


def overview_frames(alpha: float) -> int:
    """Frames one ``overview`` call samples: 16α (VideoSeek's overview_base)."""
    return max(2, int(round(OVERVIEW_BASE * alpha)))


def skim_frames(alpha: float) -> int:
    """Frames one ``skim`` call samples: 4α (VideoSeek's skim_base)."""
    return max(2, int(round(SKIM_BASE * alpha)))
