"""Cheap pixel statistics of sampled frames: shot changes, motion, dominant colours.

These feed the cpu profile's perception captions and frame descriptions, where
no VLM can run. All functions take RGB uint8 arrays of shape (H, W, 3).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

_SMALL = 160  # long side in pixels for the statistics below

# Hue ranges on OpenCV's 0..179 scale, checked in order.
_HUES = [(0, 8, "red"), (8, 20, "orange"), (20, 33, "yellow"), (33, 78, "green"),
         (78, 100, "cyan"), (100, 130, "blue"), (130, 150, "purple"), (150, 170, "pink"), (170, 180, "red")]


def _small(image: np.ndarray) -> np.ndarray:
    h, w = image.shape[:2]
    s = _SMALL / max(h, w)
    if s >= 1:
        return image
    return cv2.resize(image, (max(1, int(w * s)), max(1, int(h * s))), interpolation=cv2.INTER_AREA)


MEASURED_COLOURS = ("black", "white", "gray", "red", "orange", "yellow", "green", "cyan", "blue", "purple", "pink")
"""The colour names :func:`colour_names` measures."""

COLOUR_SYNONYMS = {"grey": "gray", "silver": "gray", "navy": "blue", "maroon": "red", "crimson": "red",
                   "scarlet": "red", "violet": "purple", "magenta": "pink", "turquoise": "cyan", "teal": "cyan",
                   "gold": "yellow", "amber": "orange"}
"""Colour words mapped onto the measured names (brown and beige have no measured name and stay unsupported)."""

COLOUR_NAMES = {**{c: c for c in MEASURED_COLOURS}, **COLOUR_SYNONYMS}
"""Every colour word this module understands -> its measured name."""


def pixel_colour_names(pixels: np.ndarray, top: int = 3, min_share: float = 0.08) -> list[tuple[str, float]]:
    """Name the dominant colours of RGB pixels of any layout (an image, or ``(N, 1, 3)`` pixels of a region).

    Pixels are binned in HSV: dark pixels are ``black``, unsaturated ones ``white`` or ``gray``, the rest by
    hue (red, orange, ..., pink).

    Returns:
        up to ``top`` ``(name, share)`` pairs with share in (0, 1], largest first, each at least ``min_share``
        of the pixels; empty for no pixels.
    """
    if pixels.size == 0:
        return []
    hsv = cv2.cvtColor(np.ascontiguousarray(pixels, dtype=np.uint8), cv2.COLOR_RGB2HSV).reshape(-1, 3)
    hsv = hsv.astype(np.int32)
    h, s, v = hsv[:, 0], hsv[:, 1], hsv[:, 2]
    names = np.empty(len(hsv), dtype=object)
    dark = v < 50
    grey = (~dark) & (s < 40)
    names[dark] = "black"
    names[grey & (v >= 200)] = "white"
    names[grey & (v < 200)] = "gray"
    chroma = ~(dark | grey)
    for lo, hi, name in _HUES:
        names[chroma & (h >= lo) & (h < hi)] = name
    labels, counts = np.unique(names.astype(str), return_counts=True)
    order = np.argsort(-counts)
    total = counts.sum()
    out = [(str(labels[i]), float(counts[i] / total)) for i in order if counts[i] / total >= min_share]
    return out[:top]


def colour_names(image: np.ndarray, top: int = 3, min_share: float = 0.08) -> list[tuple[str, float]]:
    """Name the dominant colours of a frame (:func:`pixel_colour_names` of the frame shrunk to a long side of
    160 pixels).

    Returns:
        up to ``top`` ``(name, share)`` pairs with share in (0, 1], largest first,
        each at least ``min_share`` of the pixels.
    """
    return pixel_colour_names(_small(image), top=top, min_share=min_share)


def box_colours(image: np.ndarray, box, min_share: float = 0.2, top: int = 2) -> list[str]:
    """The dominant colour names (:func:`colour_names`) of the middle of a pixel xyxy box: the box shrunk by a
    fifth of its size on every side, so the background around an object weighs little.

    Returns:
        up to ``top`` names, largest share first; empty for a box with no pixels inside the frame.
    """
    h, w = image.shape[:2]
    x1, y1, x2, y2 = (float(v) for v in box)
    bw, bh = x2 - x1, y2 - y1
    xa, xb = int(round(max(0.0, x1 + bw / 5))), int(round(min(float(w), x2 - bw / 5)))
    ya, yb = int(round(max(0.0, y1 + bh / 5))), int(round(min(float(h), y2 - bh / 5)))
    if xb <= xa or yb <= ya:
        return []
    return [name for name, _ in colour_names(image[ya:yb, xa:xb], top=top, min_share=min_share)]


def _hist(image: np.ndarray) -> np.ndarray:
    hsv = cv2.cvtColor(_small(image), cv2.COLOR_RGB2HSV)
    hist = cv2.calcHist([hsv], [0, 1, 2], None, [16, 4, 4], [0, 180, 0, 256, 0, 256])
    return cv2.normalize(hist, hist).flatten()


def histogram_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Bhattacharyya distance in [0, 1] between the HSV histograms of two frames."""
    return float(cv2.compareHist(_hist(a), _hist(b), cv2.HISTCMP_BHATTACHARYYA))


def motion_energy(a: np.ndarray, b: np.ndarray) -> float:
    """Mean absolute grey-level difference of two frames, in [0, 1]."""
    ga = cv2.cvtColor(_small(a), cv2.COLOR_RGB2GRAY).astype(np.float32)
    gb = cv2.cvtColor(_small(b), cv2.COLOR_RGB2GRAY).astype(np.float32)
    if ga.shape != gb.shape:
        gb = cv2.resize(gb, (ga.shape[1], ga.shape[0]))
    return float(np.mean(np.abs(ga - gb)) / 255.0)


def motion_level(energy: float) -> str:
    """A word for a motion energy: static, low, moderate or high."""
    if energy < 0.01:
        return "static"
    if energy < 0.035:
        return "low"
    if energy < 0.09:
        return "moderate"
    return "high"


@dataclass(frozen=True)
class FrameStats:
    """Statistics of a run of consecutive sampled frames.

    Attributes:
        shot_changes_s: times (s) of frames that start a new shot.
        motion: mean motion energy between consecutive frames of the same shot.
        colours: dominant colours over all frames, as ``(name, share)``.
    """

    shot_changes_s: list[float]
    motion: float
    colours: list[tuple[str, float]]


def frame_stats(times_s: list[float], images: list[np.ndarray], cut_threshold: float = 0.45,
                previous: np.ndarray | None = None) -> FrameStats:
    """Shot changes, motion and colours of consecutive frames.

    A shot change is declared where the HSV-histogram Bhattacharyya distance
    between neighbouring sampled frames exceeds ``cut_threshold``.

    Args:
        times_s: time of each frame in seconds (same length as ``images``).
        images: RGB frames in time order.
        previous: the frame just before the first one (e.g. the last frame of
            the previous clip), so a cut on the clip boundary is found too.
    """
    cuts: list[float] = []
    energies: list[float] = []
    prev = previous
    for t, img in zip(times_s, images):
        if prev is not None:
            if histogram_distance(prev, img) > cut_threshold:
                cuts.append(t)
            else:
                energies.append(motion_energy(prev, img))
        prev = img
    if images:
        mosaic = np.concatenate([_small(i) for i in images[:: max(1, len(images) // 4)]], axis=0) \
            if all(_small(i).shape == _small(images[0]).shape for i in images) else _small(images[0])
        colours = colour_names(mosaic)
    else:
        colours = []
    return FrameStats(cuts, float(np.mean(energies)) if energies else 0.0, colours)
