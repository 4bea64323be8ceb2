"""Box geometry on pixel xyxy boxes: intersection over union, overlap over the smaller box, greedy non-maximum
suppression, centre inside."""

from __future__ import annotations

from typing import Sequence

import cv2
import numpy as np


def nms(boxes: list[tuple[float, float, float, float]], scores: list[float], iou_threshold: float) -> list[int]:
    """Indices kept by greedy non-maximum suppression (highest score first).

    Args:
        boxes: pixel xyxy boxes.
        scores: one score per box.
        iou_threshold: a box overlapping a kept box with IoU above this is dropped.
    """
    if not boxes:
        return []
    xywh = [[b[0], b[1], b[2] - b[0], b[3] - b[1]] for b in boxes]
    keep = cv2.dnn.NMSBoxes(xywh, [float(s) for s in scores], 0.0, iou_threshold)
    return sorted((int(i) for i in np.asarray(keep).reshape(-1)), key=lambda i: -scores[i])


def centre_inside(box: Sequence[float], region: Sequence[float]) -> bool:
    """True when the centre of pixel xyxy ``box`` lies inside pixel xyxy ``region`` (edges included)."""
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return region[0] <= cx <= region[2] and region[1] <= cy <= region[3]


def box_iou(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection over union of two pixel xyxy boxes (0 when the union is empty)."""
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def overlap_ratio(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection area over the smaller box's area (0..1); 1 when one box lies inside the other."""
    iw = min(a[2], b[2]) - max(a[0], b[0])
    ih = min(a[3], b[3]) - max(a[1], b[1])
    if iw <= 0 or ih <= 0:
        return 0.0
    smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
    return iw * ih / smaller if smaller > 0 else 0.0
