"""Where people stand: the ground beside each person's feet, measured in frames (issue 14, answers read from
measurements).

"During which time span is the woman walking on the lawn in the foreground?", "is anyone on the grass at 1:00?":
the cpu profile's detector finds people but knows no lawn, and the 1.5B orchestrator answers such questions with
the first clip its search returns (real-vtest-12: a clip 15 s before she steps onto the grass). The ground a person
stands on is the colour right beside the feet (the bottom of the person's box, left and right of it): a lawn is
green there, snow white, a road or paving gray. Sampled over the range the question names (else the whole video),
the frames with a person on that ground give the span, or the yes/no, directly.

Times are seconds, boxes pixel xyxy, colours the measured names of :func:`avi.video.analysis.pixel_colour_names`.
"""

from __future__ import annotations

import re

import numpy as np

from avi.backends.coco_detector import coco_classes_for
from avi.video.analysis import pixel_colour_names

#: Ground words and the measured colours they show in daylight footage (as
#: :data:`avi.agent.measured_looks.SCENE_COLOURS`: assumed, not measured; with the words for paths and pitches).
GROUND_COLOURS = {
    **dict.fromkeys("grass grassy lawn meadow pitch field".split(), {"green"}),
    **dict.fromkeys("snow snowy ice".split(), {"white"}),
    **dict.fromkeys("sand sandy beach".split(), {"yellow", "orange"}),
    **dict.fromkeys("asphalt tarmac concrete pavement paving sidewalk path footpath road street".split(), {"gray"}),
}

_GROUND = re.compile(r"\b(?:on|onto|across|over|along|in)\s+(?:to\s+)?the\s+(?:[a-z]+\s+){0,2}?(" +
                     "|".join(sorted(GROUND_COLOURS, key=len, reverse=True)) + r")\b", re.I)
_PEOPLE_WORDS = frozenset("anyone anybody someone somebody everyone everybody nobody".split())


def ground_question(question: str) -> tuple[str, set[str], str | None] | None:
    """``(ground word, its colours, part of the frame)`` for a question about a person on some ground ("the
    woman walking on the big lawn in the foreground" -> ``("lawn", {"green"}, "foreground")``), else None.

    The part is ``"foreground"`` (feet in the lower half of the frame), ``"background"`` (upper half) or None.
    A question that names no person (a detector word for the person class, or "anyone", "someone") gives None.
    """
    q = question or ""
    m = _GROUND.search(q)
    if m is None:
        return None
    words = set(re.findall(r"[a-z]+", q.lower()))
    if not (words & _PEOPLE_WORDS or any(coco_classes_for(w) == ("person",) for w in words)):
        return None
    part = "foreground" if re.search(r"\b(?:foreground|front|nearest|near side)\b", q, re.I) else \
        "background" if re.search(r"\b(?:background|far side|in the distance)\b", q, re.I) else None
    word = m.group(1).lower()
    return word, set(GROUND_COLOURS[word]), part


def ground_colours(image: np.ndarray, box, top: int = 2) -> list[tuple[str, float]]:
    """The colours right beside a person's feet: strips half the box's width wide to the left and right of the
    bottom eighth of the box (the legs themselves left out), ``[(name, share)]`` largest first; empty when
    both strips are outside the frame."""
    h_img, w_img = image.shape[:2]
    x1, y1, x2, y2 = (float(v) for v in box)
    w, h = x2 - x1, y2 - y1
    ya, yb = int(max(0.0, y2 - 0.12 * h)), int(min(h_img, y2 + 0.04 * h))
    left = image[ya:yb, int(max(0.0, x1 - 0.5 * w)):int(max(0.0, x1))]
    right = image[ya:yb, int(min(w_img, x2)):int(min(w_img, x2 + 0.5 * w))]
    pixels = np.concatenate([left.reshape(-1, 3), right.reshape(-1, 3)])
    return pixel_colour_names(pixels[:, None, :], top=top, min_share=0.1) if len(pixels) else []


def on_ground(image: np.ndarray, boxes, colours: set[str], part: str | None, min_share: float = 0.5) -> bool:
    """Whether any person box stands on ground of one of ``colours`` (its largest colour beside the feet, with at
    least ``min_share`` of the pixels) in the part of the frame asked about."""
    half = image.shape[0] / 2
    for box in boxes:
        if part == "foreground" and box[3] < half or part == "background" and box[3] >= half:
            continue
        got = ground_colours(image, box)
        if got and got[0][0] in colours and got[0][1] >= min_share:
            return True
    return False


def ground_runs(times: list[float], on: list[bool], min_frames: int = 2) -> list[list[float]]:
    """Runs of sampled frames with someone on the ground, as ``[start_s, end_s]`` padded by half a sampling
    step; one missing frame inside a run is bridged, and runs shorter than ``min_frames`` frames are dropped
    (a single frame is a detector's or a colour's accident more often than a person on the grass)."""
    if not times:
        return []
    step = float(np.median(np.diff(times))) if len(times) > 1 else 1.0
    runs: list[list[float]] = []
    current: list[float] = []
    for t, yes in zip(times, on):
        if not yes:
            continue
        if current and t - current[-1] > 2.5 * step:
            runs.append(current)
            current = []
        current.append(t)
    if current:
        runs.append(current)
    return [[max(0.0, r[0] - step / 2), r[-1] + step / 2] for r in runs if len(r) >= min_frames]
