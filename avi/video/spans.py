"""Time spans: one home for merging, overlap, IoU and clipping of ``[start_s, end_s]`` intervals.

Used by the index (entity presence), the tools (ranges to look at), the agent (evidence runs, repeated
calls) and the evaluation (temporal grounding). Times are seconds; a span is ``[start_s, end_s]`` with
``start_s <= end_s`` unless a function says it orders them.
"""

from __future__ import annotations

from typing import Sequence

Span = Sequence[float]


def merge_spans(spans, gap_s: float = 1e-3) -> list[list[float]]:
    """Union of time spans: sorted, and overlapping or touching spans (within ``gap_s``) merged.

    Returns:
        new ``[[start_s, end_s], ...]`` lists of floats, ascending and disjoint.
    """
    out: list[list[float]] = []
    for s, e in sorted([float(a), float(b)] for a, b in spans):
        if out and s <= out[-1][1] + gap_s:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def span_length(span: Span) -> float:
    """Length in seconds (0 for an empty or reversed span)."""
    return max(0.0, float(span[1]) - float(span[0]))


def span_overlap(a: Span, b: Span) -> float:
    """Seconds that two spans share (0 when they are disjoint)."""
    return max(0.0, min(float(a[1]), float(b[1])) - max(float(a[0]), float(b[0])))


def coverage_iou(a, b) -> float:
    """Intersection over union of the time covered by two lists of spans (each merged first); 1.0 when both
    cover nothing."""
    ma, mb = merge_spans(a), merge_spans(b)
    inter = sum(span_overlap(x, y) for x in ma for y in mb)
    union = sum(span_length(x) for x in ma) + sum(span_length(y) for y in mb) - inter
    return inter / union if union > 0 else 1.0


def temporal_iou(a: Span, b: Span) -> float:
    """IoU of two spans ``[start_s, end_s]`` as lmms-eval computes it: overlap / (max end − min start); 0 when
    that span is not positive (lmms-eval ``lmms_eval/tasks/charades_sta/utils.py:iou``)."""
    max0, min0 = max(a[0], b[0]), min(a[0], b[0])
    max1, min1 = max(a[1], b[1]), min(a[1], b[1])
    denom = max1 - min0
    return 0.0 if denom <= 0 else max(min1 - max0, 0.0) / denom


def clip_span(span: Span, duration: float | None) -> list[float]:
    """``[start_s, end_s]`` ordered and, when ``duration`` (seconds) is known, clipped to ``[0, duration]``."""
    a, b = sorted((float(span[0]), float(span[1])))
    if duration is not None and duration > 0:
        a, b = min(max(a, 0.0), duration), min(max(b, 0.0), duration)
    return [a, b]
