"""Flat-coloured geometric shapes (circles, squares, rectangles, triangles) in a frame, for the cpu profile.

Grounding-DINO (gpu profile) finds "a yellow triangle" or "the red square" from the words alone; the cpu
profile's COCO detector has no class for a shape, so ``object_detect`` answered "unsupported" for every
question about the shapes of graphics, slides, signs and overlays. This module measures them with classical
image analysis (OpenCV), no model:

1. **regions**: edges of every colour channel (Canny on the blurred R, G and B planes, OR-ed, dilated once)
   cut the frame into regions; every connected region of non-edge pixels is a candidate (its holes, e.g. the
   letters printed on a sign, filled);
2. **flatness**: a shape of graphics is one colour, so a region whose pixels vary (texture, a face, foliage)
   is dropped (per-channel standard deviation above ``max_std``), as are regions touching the frame's edge
   (the background, things cut by the edge), tiny ones and ones covering most of the frame;
3. **geometry**: the region's convex hull must be nearly filled by it (solidity); the hull, simplified with
   the Douglas-Peucker algorithm (``cv2.approxPolyDP``; Douglas & Peucker 1973), with three corners is a
   triangle, with four and a filled bounding box a square (sides within 20 %) or rectangle; a round hull
   (isoperimetric ratio 4πA/P² near 1, bounding box filled to about π/4) is a circle;
4. **colour**: the region's dominant colour name (:func:`avi.video.analysis.pixel_colour_names`).

Scores say how well the region fits its kind (1.0: an exact fit); they rank boxes, they are not calibrated
probabilities. Boxes are pixel xyxy in the analysed frame.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Sequence

import cv2
import numpy as np

from avi.backends.types import Detection, DetectionResult
from avi.video.analysis import COLOUR_NAMES, pixel_colour_names
from avi.video.decode import Frame

#: the kinds this module names, and the words people use for them
SHAPE_WORDS: dict[str, str] = {
    "circle": "circle", "circles": "circle", "disc": "circle", "discs": "circle", "disk": "circle",
    "dot": "circle", "dots": "circle",
    "square": "square", "squares": "square",
    "rectangle": "rectangle", "rectangles": "rectangle",
    "triangle": "triangle", "triangles": "triangle",
    "shape": "shape", "shapes": "shape",
}
"""Word -> kind (``shape`` means any kind)."""

KINDS = ("circle", "square", "rectangle", "triangle")

_ANALYSE_SIDE = 640  # long side, pixels, at which regions are measured


@dataclass(frozen=True)
class ShapeBlob:
    """One shape found in a frame.

    Attributes:
        kind: ``circle``, ``square``, ``rectangle`` or ``triangle``.
        colour: dominant colour name of its pixels (``red``, ``white``, ...).
        box: pixel xyxy in the frame given to :func:`find_shapes`.
        area: filled area in pixels of that frame.
        score: how well it fits its kind, in [0, 1].
        std: the largest per-channel standard deviation of its pixels (0-255): about 1-3 for drawn graphics,
            more for flat surfaces of real scenes.
    """

    kind: str
    colour: str
    box: tuple[float, float, float, float]
    area: float
    score: float
    std: float = 0.0


def shape_query(label: str) -> tuple[str | None, str] | None:
    """Parse an object_detect label naming a shape, such as ``"red squares"`` or ``"triangle"``.

    Returns:
        ``(colour or None, kind)`` with kind one of :data:`KINDS` or ``"shape"`` (any), or None when the label
        names no shape. Only a colour word and a shape word are allowed ("big yellow circle" is accepted with
        the size word ignored); any other word makes it another object's name.
    """
    words = re.findall(r"[a-z]+", (label or "").lower())
    kinds = [SHAPE_WORDS[w] for w in words if w in SHAPE_WORDS]
    if len(kinds) != 1:
        return None
    colour = None
    for w in words:
        if w in SHAPE_WORDS or w in _SIZE_WORDS:
            continue
        c = COLOUR_NAMES.get(w)
        if c is None or colour is not None:
            return None
        colour = c
    return colour, kinds[0]


_SIZE_WORDS = frozenset("big small large tiny little huge the a an of coloured colored filled solid".split())


def matches(blob: ShapeBlob, colour: str | None, kind: str) -> bool:
    """Whether a found shape answers a query (:func:`shape_query`): the kind (a square is also a rectangle;
    ``shape`` matches every kind) and, when given, the colour."""
    kind_ok = kind == "shape" or blob.kind == kind or (kind == "rectangle" and blob.kind == "square")
    return kind_ok and (colour is None or blob.colour == colour)


def find_shapes(image: np.ndarray, *, max_std: float = 14.0, min_area_frac: float = 0.0008,
                max_area_frac: float = 0.35, min_solidity: float = 0.9) -> list[ShapeBlob]:
    """Flat-coloured circles, squares, rectangles and triangles in an RGB frame (module docstring).

    Args:
        image: RGB uint8, shape (H, W, 3).
        max_std: largest per-channel standard deviation (0-255) of a region's pixels.
        min_area_frac, max_area_frac: region area bounds as fractions of the frame.
        min_solidity: least filled area / convex hull area.

    Returns:
        the shapes, largest first, boxes in ``image``'s pixels.

    Raises:
        ValueError: ``image`` is not an (H, W, 3) array.
    """
    if image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"expected an RGB image (H, W, 3), got shape {image.shape}")
    h0, w0 = image.shape[:2]
    scale = min(1.0, _ANALYSE_SIDE / max(h0, w0))
    img = cv2.resize(image, (max(1, round(w0 * scale)), max(1, round(h0 * scale))),
                     interpolation=cv2.INTER_AREA) if scale < 1.0 else image
    h, w = img.shape[:2]
    blurred = cv2.GaussianBlur(img, (3, 3), 0)
    edges = np.zeros((h, w), np.uint8)
    for c in range(3):
        edges |= cv2.Canny(blurred[:, :, c], 40, 120)
    edges = cv2.dilate(edges, np.ones((3, 3), np.uint8))
    n, labels, stats, _ = cv2.connectedComponentsWithStats((edges == 0).astype(np.uint8), connectivity=4)
    total = float(h * w)
    x, y, bw, bh, area = (stats[:, k] for k in range(5))
    keep = (area >= max(60.0, min_area_frac * total)) & (area <= max_area_frac * total)
    keep &= (x > 1) & (y > 1) & (x + bw < w - 1) & (y + bh < h - 1)  # not the background, not cut by the edge
    keep &= np.maximum(bw, bh) <= 4 * np.minimum(bw, bh)  # not strokes, bars, lines of text
    keep[0] = False  # the edges
    if not keep.any():
        return []
    # per-region mean and standard deviation of each channel, all regions at once
    flat = labels.ravel()
    count = np.maximum(np.bincount(flat, minlength=n), 1).astype(np.float64)
    mean = np.stack([np.bincount(flat, blurred[:, :, c].ravel().astype(np.float64), n) / count for c in range(3)], 1)
    sq = np.stack([np.bincount(flat, blurred[:, :, c].ravel().astype(np.float64) ** 2, n) / count for c in range(3)], 1)
    std = np.sqrt(np.maximum(sq - mean * mean, 0.0)).max(axis=1)
    keep &= std <= max_std
    # the frame's most common colour (the background): a region of that colour is a hole in something drawn on it,
    # such as the inside of a letter O, not a shape
    border = np.concatenate([blurred[0], blurred[-1], blurred[:, 0], blurred[:, -1]]).astype(np.int32)
    background = np.median(border, axis=0)
    keep &= np.abs(mean - background).max(axis=1) > 24
    out: list[ShapeBlob] = []
    for i in np.flatnonzero(keep):
        x, y, bw, bh = (int(v) for v in stats[i, :4])
        sub = labels[y:y + bh, x:x + bw] == i
        pixels = blurred[y:y + bh, x:x + bw][sub]
        blob = _classify(sub.astype(np.uint8), x, y)
        if blob is None:
            continue
        kind, fill_area, fit = blob[0], blob[1], blob[2]
        colour = pixel_colour_names(pixels.reshape(-1, 1, 3), top=1, min_share=0.0)
        # the dilated edges ate about one pixel all round: give it back
        box = ((x - 1) / scale, (y - 1) / scale, (x + bw + 1) / scale, (y + bh + 1) / scale)
        out.append(ShapeBlob(kind, colour[0][0] if colour else "unknown",
                             tuple(round(v, 1) for v in box), fill_area / (scale * scale), round(fit, 3),
                             round(float(std[i]), 2)))
    out.sort(key=lambda b: -b.area)
    return out


def _classify(mask: np.ndarray, x0: int, y0: int) -> tuple[str, float, float] | None:
    """``(kind, filled area, fit)`` of one region mask, or None when it is no simple shape."""
    contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    if not contours:
        return None
    contour = max(contours, key=cv2.contourArea)
    filled = float(cv2.contourArea(contour)) + 0.5 * cv2.arcLength(contour, True)  # pixel area, not centre line
    hull = cv2.convexHull(contour)
    hull_area = float(cv2.contourArea(hull)) + 0.5 * cv2.arcLength(hull, True)
    if hull_area <= 0:
        return None
    solidity = filled / hull_area
    if solidity < 0.9:
        return None
    bw, bh = mask.shape[1], mask.shape[0]
    extent = filled / float(bw * bh)
    aspect = bw / float(bh)
    perimeter = cv2.arcLength(hull, True)
    corners = cv2.approxPolyDP(hull, 0.04 * perimeter, True)
    roundness = 4 * math.pi * float(cv2.contourArea(hull)) / (perimeter * perimeter) if perimeter else 0.0
    if len(corners) == 3 and 0.35 <= extent <= 0.65:
        return "triangle", filled, solidity * (1 - abs(extent - 0.5))
    if len(corners) == 4 and extent >= 0.85:
        square = 0.8 <= aspect <= 1.25
        return ("square" if square else "rectangle"), filled, solidity * extent
    if roundness >= 0.85 and 0.7 <= extent <= 0.86 and 0.8 <= aspect <= 1.25:
        return "circle", filled, solidity * min(1.0, roundness)
    return None


#: the largest standard deviation of a shape named in a perception caption: drawn graphics measure about 0.3-2.2
#: on the synthetic videos, flat surfaces of the real sample videos (windows, lamps, signs) 2.5-12
CAPTION_MAX_STD = 2.4


class ShapeDetector:
    """The :class:`~avi.backends.detector.Detector` protocol over :func:`find_shapes` (cpu profile).

    A label such as ``"circles"``, ``"red square"`` or ``"shapes"`` (:func:`shape_query`) is answered with the
    shapes that match it; a detection's label is the caller's word and ``cls`` the kind found. Other labels are
    unsupported.

    Args:
        max_std: see :func:`find_shapes`.
    """

    name = "opencv-shapes"
    vocabulary = "flat-coloured geometric shapes (circle, square, rectangle, triangle, with a colour word)"
    class_list = None
    detect_all = None
    detect_batch = None

    def __init__(self, max_std: float = 14.0):
        self.max_std = max_std

    def supports(self, label: str) -> bool:
        return shape_query(label) is not None

    def detect(self, frame: Frame, labels: Sequence[str]) -> DetectionResult:
        queries = {label: shape_query(label) for label in labels}
        unsupported = [label for label, q in queries.items() if q is None]
        asked = {label.strip().lower(): q for label, q in queries.items() if q is not None}
        if not asked:
            return DetectionResult(frame.t_s, [], unsupported)
        blobs = find_shapes(frame.image, max_std=self.max_std)
        size = (frame.image.shape[1], frame.image.shape[0])
        dets = [Detection(label, b.score, b.box, frame.t_s, size, cls=f"{b.colour} {b.kind}")
                for label, (colour, kind) in asked.items() for b in blobs if matches(b, colour, kind)]
        dets.sort(key=lambda d: -d.score)
        return DetectionResult(frame.t_s, dets, unsupported)


def describe_shapes(blobs: list[ShapeBlob]) -> str:
    """One phrase for the shapes of one frame, grouped by colour and kind, most first, e.g. "3 yellow
    triangles, 1 green circle"; empty for none."""
    groups: dict[tuple[str, str], int] = {}
    for b in blobs:
        groups[(b.colour, b.kind)] = groups.get((b.colour, b.kind), 0) + 1
    return ", ".join(f"{n} {colour} {kind}{'s' if n > 1 else ''}"
                     for (colour, kind), n in sorted(groups.items(), key=lambda kv: (-kv[1], kv[0])))
