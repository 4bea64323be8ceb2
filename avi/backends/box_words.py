"""Where a box is in the frame, in words a language model can use ("left, bottom, large").

Used by the ``object_detect`` observation (both profiles) and the cpu perception captions, so an orchestrator can
answer "is the car on the left?" or "which is bigger?" without reading pixel coordinates.
"""

from __future__ import annotations

from typing import Sequence


def box_words(box: Sequence[float], frame_size: tuple[int, int]) -> str:
    """Position and size of a pixel xyxy box in a frame of ``(width, height)`` pixels.

    The frame is cut into thirds each way: horizontal ``left | centre | right``, vertical ``top | middle |
    bottom`` by the box centre. Size is the box's share of the frame area: ``small`` (< 2 %), ``medium``
    (< 15 %), ``large`` (< 50 %), ``very large``.

    Returns:
        e.g. ``"left, bottom, small"``; ``"centre"`` alone when both thirds are the middle one.

    Raises:
        ValueError: a frame size that is not positive.
    """
    w, h = frame_size
    if w <= 0 or h <= 0:
        raise ValueError(f"frame size must be positive, got {frame_size}")
    x1, y1, x2, y2 = (float(v) for v in box)
    cx, cy = (x1 + x2) / 2 / w, (y1 + y2) / 2 / h
    horiz = "left" if cx < 1 / 3 else ("right" if cx > 2 / 3 else "centre")
    vert = "top" if cy < 1 / 3 else ("bottom" if cy > 2 / 3 else "middle")
    area = max(0.0, x2 - x1) * max(0.0, y2 - y1) / (w * h)
    size = "small" if area < 0.02 else "medium" if area < 0.15 else "large" if area < 0.5 else "very large"
    where = "centre" if (horiz, vert) == ("centre", "middle") else f"{horiz}, {vert}"
    return f"{where}, {size}"


def shot_scale(detections, frame_height: int) -> str:
    """The shot scale (film terms) a frame's person and face boxes suggest, from the tallest box of each.

    * face at least half the frame high: ``close-up`` (a face fills most of the frame);
    * face a quarter of the frame high, or a person over 60 % of it: ``medium shot``;
    * people smaller than that: ``wide shot``; no person or face: empty.

    Args:
        detections: one frame's :class:`~avi.backends.types.Detection` s (``cls`` or ``label`` names the class).
        frame_height: pixels.
    """
    if frame_height <= 0:
        raise ValueError(f"frame height must be positive, got {frame_height}")

    def tallest(kind: str) -> float:
        hs = [(d.box[3] - d.box[1]) / frame_height for d in detections if (d.cls or d.label) == kind]
        return max(hs, default=0.0)

    face, person = tallest("face"), tallest("person")
    if face >= 0.5:
        return "close-up (a face fills most of the frame)"
    if face >= 0.25 or person >= 0.6:
        return "medium shot (people from the chest or waist up)"
    if face > 0 or person > 0:
        return "wide shot (whole people, small in the frame)"
    return ""
