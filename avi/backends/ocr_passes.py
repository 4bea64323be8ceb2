"""Geometry of the extra OCR passes: scales, zoom tiles, region crops, and merging lines by position.

Pure numpy helpers used by :class:`avi.backends.ocr.RapidOcrEngine`; nothing here runs a model. All boxes are
pixel ``(x0, y0, x1, y1)`` floats in the frame, x to the right, y down, ``x1 > x0`` and ``y1 > y0``.

Why windows rather than one big upscaled frame: the PP-OCRv6 small text detector loses text when its input grows
past about 1280x720 (measured: a 32 px sign found at 1.0x of a 1280x720 frame is lost at 1.25x, the same sign in
a 640x360 crop is still found at 2x). Small text is therefore read by upscaling *windows* whose upscaled size
stays within the engine's ``max_side`` pixels.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

from avi.backends.boxes import overlap_ratio
from avi.backends.types import Box, OcrLine


def fit_scale(height: int, width: int, min_side: int, max_side: int, max_up: float = 4.0) -> float:
    """Resize factor that brings the long side of a ``height`` x ``width`` image (pixels) into ``[min_side, max_side]``.

    Returns 1.0 when the long side is already inside; upscaling is capped at ``max_up``.

    Raises:
        ValueError: a non-positive size, or ``min_side > max_side``.
    """
    if height <= 0 or width <= 0 or min_side > max_side:
        raise ValueError(f"bad sizes: {height}x{width}, sides [{min_side}, {max_side}]")
    long_side = max(height, width)
    if long_side < min_side:
        return min(max_up, min_side / long_side)
    if long_side > max_side:
        return max_side / long_side
    return 1.0


def candidate_windows(boxes: Iterable[Box], height: int, width: int, pad: float = 0.15, min_side: float = 96.0,
                      min_overlap: float = 0.0) -> list[tuple[int, int, int, int]]:
    """Windows for a zoomed look around candidate text boxes (e.g. weak detections), largest first.

    Each box is grown by ``pad`` x its size on every side and to at least ``min_side`` pixels per side (context
    for the detector), clipped to the frame; windows that overlap (intersection over the smaller area above
    ``min_overlap``) are joined into their hull until none do.

    Args:
        boxes: pixel xyxy boxes in the frame.
        height, width: frame size in pixels.

    Returns:
        integer pixel xyxy windows sorted by area, largest first.
    """
    wins: list[tuple[float, float, float, float]] = []
    for x0, y0, x1, y1 in boxes:
        bw, bh = x1 - x0, y1 - y0
        gx, gy = max(bw * pad, (min_side - bw) / 2), max(bh * pad, (min_side - bh) / 2)
        win = clip_box((x0 - gx, y0 - gy, x1 + gx, y1 + gy), height, width, min_size=1)
        if win is not None:
            wins.append(win)
    joined = True
    while joined:
        joined = False
        for i in range(len(wins)):
            for j in range(i + 1, len(wins)):
                if overlap_ratio(wins[i], wins[j]) > min_overlap:
                    a, b = wins[i], wins.pop(j)
                    wins[i] = (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))
                    joined = True
                    break
            if joined:
                break
    return sorted(((int(a), int(b), int(c), int(d)) for a, b, c, d in wins),
                  key=lambda w: -(w[2] - w[0]) * (w[3] - w[1]))


def tile_grid(window: tuple[int, int, int, int], side: float, overlap: float = 0.2) -> list[tuple[int, int, int, int]]:
    """Overlapping tiles of at most ``side`` x ``side`` pixels covering ``window`` (pixel xyxy), row by row.

    Args:
        window: the area to cover, integer pixel xyxy.
        side: largest tile side in pixels (e.g. the detector's largest input over the zoom factor).
        overlap: least fraction of a tile shared with its neighbour (0 <= overlap < 1), so that a line cut by
            one tile's edge lies whole inside the next one when it is shorter than the shared part; tiles have
            the largest allowed size and are spread evenly, so the real overlap is often larger.

    Returns:
        integer pixel xyxy tiles; ``[window]`` when it already fits.

    Raises:
        ValueError: ``side`` <= 0 or ``overlap`` outside [0, 1).
    """
    if not 0 <= overlap < 1 or side <= 0:
        raise ValueError(f"bad tile parameters: side {side}, overlap {overlap}")

    def cuts(start: int, stop: int) -> list[tuple[int, int]]:
        length = stop - start
        if length <= side:
            return [(start, stop)]
        n = math.ceil((length - side * overlap) / (side * (1 - overlap)))
        size = math.floor(side)
        step = (length - size) / (n - 1)
        return [(start + round(i * step), start + round(i * step) + size) for i in range(n)]

    x0, y0, x1, y1 = window
    return [(a, b, c, d) for b, d in cuts(y0, y1) for a, c in cuts(x0, x1)]


def clip_box(box: Sequence[float], height: int, width: int, min_size: float = 4.0) -> tuple[int, int, int, int] | None:
    """``box`` (pixel xyxy) clipped to the frame and rounded outwards; None when less than ``min_size`` px remains."""
    x0, y0, x1, y1 = (float(v) for v in box)
    x0, y0 = max(0, math.floor(x0)), max(0, math.floor(y0))
    x1, y1 = min(width, math.ceil(x1)), min(height, math.ceil(y1))
    if x1 - x0 < min_size or y1 - y0 < min_size:
        return None
    return x0, y0, x1, y1


def region_crops(regions: Iterable[Sequence[float]], height: int, width: int, top_fraction: float = 0.5,
                 min_size: float = 8.0) -> list[tuple[int, int, int, int]]:
    """Crops to read for caller-supplied regions (e.g. an object detector's vehicle boxes).

    Each region gives its whole box and, when the box is at least twice as tall as ``min_size``, its top
    ``top_fraction`` (where roof signs, shop signs and number plates above a door sit). Duplicates are removed.

    Args:
        regions: pixel xyxy boxes; parts outside the frame are clipped away.
        height, width: frame size in pixels.
        top_fraction: share (0..1] of the box height kept by the top crop.
        min_size: smaller crops (pixels, either side) are skipped.

    Raises:
        ValueError: a region that is not four numbers.
    """
    out: list[tuple[int, int, int, int]] = []
    for region in regions:
        if len(region) != 4:
            raise ValueError(f"region must be pixel xyxy (4 numbers), got {region!r}")
        box = clip_box(region, height, width, min_size)
        if box is None:
            continue
        x0, y0, x1, y1 = box
        crops = [box]
        if y1 - y0 >= 2 * min_size and top_fraction < 1:
            crops.append((x0, y0, x1, y0 + max(int(min_size), round((y1 - y0) * top_fraction))))
        out += [c for c in crops if c not in out]
    return out


def touches_inner_edge(box: Box, tile: tuple[int, int, int, int], height: int, width: int,
                       margin: float | None = None) -> bool:
    """Whether ``box`` (frame pixels) comes within ``margin`` pixels of an edge of ``tile`` that is not also an
    edge of the frame (default margin: half the box height, about one glyph's width, since a cut glyph is
    often left out of the detected box).

    Such a line is probably cut by the tile; the overlapping neighbour tile sees it whole.
    """
    x0, y0, x1, y1 = box
    if margin is None:
        margin = max(2.0, (y1 - y0) / 2)
    tx0, ty0, tx1, ty1 = tile
    return ((tx0 > 0 and x0 - tx0 < margin) or (ty0 > 0 and y0 - ty0 < margin)
            or (tx1 < width and tx1 - x1 < margin) or (ty1 < height and ty1 - y1 < margin))


def _key(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def _better(a: OcrLine, b: OcrLine, containment_margin: float) -> OcrLine:
    """The line to keep of two overlapping reads: the higher score, except that a read whose text contains the
    other's (e.g. ``TAXI`` over ``AXI`` from a tile that cut the sign) wins unless it scores more than
    ``containment_margin`` lower."""
    ka, kb = _key(a.text), _key(b.text)
    if ka != kb:
        if kb in ka and a.score >= b.score - containment_margin:
            return a
        if ka in kb and b.score >= a.score - containment_margin:
            return b
    return a if a.score >= b.score else b


def merge_lines(lines: Iterable[OcrLine], min_overlap: float = 0.5, containment_margin: float = 0.1) -> list[OcrLine]:
    """Deduplicate lines read by several passes: of lines whose boxes overlap by ``min_overlap`` (intersection
    over the smaller area), keep one (:func:`_better`: the higher score, preferring a read that contains the
    other's text). Returns the kept lines in reading order (:func:`reading_order`)."""
    kept: list[OcrLine] = []
    for line in sorted(lines, key=lambda ln: -ln.score):
        for i, other in enumerate(kept):
            if overlap_ratio(line.box, other.box) >= min_overlap:
                kept[i] = _better(other, line, containment_margin)
                break
        else:
            kept.append(line)
    return reading_order(kept)


def reading_order(lines: Iterable[OcrLine], row_px: float = 20.0) -> list[OcrLine]:
    """Lines sorted top to bottom in rows of ``row_px`` pixels, then left to right (the engines' order)."""
    return sorted(lines, key=lambda ln: (round(ln.box[1] / row_px), ln.box[0]))


