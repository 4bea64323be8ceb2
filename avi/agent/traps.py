"""Trap detection (DVD Fig. 3): runs of near-identical tool calls, compared by their ranges and queries."""

from __future__ import annotations

import json
import re

from avi.video.spans import coverage_iou

TRAP_REPEATS = 3  # DVD Fig. 3: more than this many near-identical calls in a row is a trap
_RANGE_KEYS = ("time_ranges", "clips")
_QUERY_KEYS = ("query", "event", "question", "objects")


def trap_run(streak: list, name: str, arguments: dict | None) -> int:
    """How many calls at the end of ``streak`` the call ``name(arguments)`` would continue (0 if none): calls of
    one tool in a row that are :func:`near_identical` (DVD Fig. 3)."""
    if streak and near_identical(streak[-1], (name, arguments or {})):
        return len(streak)
    return 0


def near_identical(a: tuple[str, dict], b: tuple[str, dict], min_overlap: float = 0.8) -> bool:
    """Whether two ``(tool, arguments)`` calls are near-identical: one tool, and time ranges covering the same time
    to at least ``min_overlap`` IoU (a moment counts as one second), else the same query text (normalised)."""
    (na, aa), (nb, ab) = a, b
    if na != nb:
        return False
    ra, rb = ranges_arg(aa or {}), ranges_arg(ab or {})
    if ra is not None or rb is not None:
        return ra is not None and rb is not None and coverage_iou(ra, rb) >= min_overlap
    qa, qb = _query_arg(aa or {}), _query_arg(ab or {})
    if qa is not None or qb is not None:
        return qa == qb
    return (aa or {}) == (ab or {})


def ranges_arg(arguments: dict, widen: bool = True) -> list[list[float]] | None:
    for key in _RANGE_KEYS:
        value = arguments.get(key)
        if isinstance(value, list) and value:
            try:
                spans = [sorted([float(r[0]), float(r[-1])]) for r in value]
            except (TypeError, ValueError, IndexError, KeyError):
                return None
            out = []
            for s, e in spans:
                if widen and e - s < 1.0:  # a moment: one second around its centre
                    s, e = (s + e) / 2 - 0.5, (s + e) / 2 + 0.5
                out.append([s, e])
            return out
    return None


def _query_arg(arguments: dict) -> str | None:
    for key in _QUERY_KEYS:
        value = arguments.get(key)
        if value is not None:
            if isinstance(value, list):
                value = " ".join(sorted(str(v) for v in value))
            return " ".join(re.sub(r"[^\w\s]", " ", str(value).lower()).split())
    return None


def call_key(name: str, arguments: dict | None) -> tuple[str, str]:
    return name, json.dumps(arguments or {}, sort_keys=True)
