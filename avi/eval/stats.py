"""Statistics shared by every benchmark's scoring: one metric with its clustered standard error and 95 % CI
(lmms-eval ``clustered_stderr``: questions about the same video are not independent), records by question id,
the record status, and the plain-text grid the reports print.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

Z95 = 1.959963984540054
"""The two-sided 95 % normal quantile."""

CI_NOTE = "95% CIs: clustered standard error by video (lmms-eval clustered_stderr), value +- 1.96 SE"


def clustered_stderr(scores: list[float], clusters: list[Any]) -> float | None:
    """Clustered standard error of the mean of ``scores`` (formula in the module docstring); None if n < 2."""
    n = len(scores)
    if n < 2:
        return None
    mean = sum(scores) / n
    var = sum((s - mean) ** 2 for s in scores) / (n - 1)
    by_cluster: dict[Any, list[float]] = {}
    for s, c in zip(scores, clusters):
        by_cluster.setdefault(c, []).append(s - mean)
    cross = sum(sum(d) ** 2 - sum(x * x for x in d) for d in by_cluster.values())
    return math.sqrt(max(var / n + cross / (n * n), 0.0))


def record_status(record: dict | None) -> str:
    if record is None:
        return "missing"
    return "ok" if record.get("status") == "ok" else "failed"


@dataclass
class Score:
    """One metric over a set of questions.

    Attributes:
        value: percent (0–100), None when ``n`` is 0.
        n: questions in the denominator.
        total: sum of the per-question values (right answers; IoU sum for mIoU).
        se: clustered standard error in percent points (None when n < 2).
        ci: 95 % interval ``[low, high]`` in percent, clipped to [0, 100] (None when n < 2).
        videos: distinct videos among the ``n`` questions.
    """

    value: float | None
    n: int
    total: float
    se: float | None = None
    ci: list[float] | None = None
    videos: int = 0


def score_values(values: list[float], clusters: list[Any]) -> Score:
    n = len(values)
    if not n:
        return Score(None, 0, 0.0)
    total = sum(values)
    value = 100.0 * total / n
    se = clustered_stderr(values, clusters)
    if se is None:
        return Score(value, n, total, videos=len(set(clusters)))
    se *= 100.0
    ci = [max(0.0, value - Z95 * se), min(100.0, value + Z95 * se)]
    return Score(value, n, total, se, ci, len(set(clusters)))


def records_by_qid(records: Iterable[dict] | dict[str, dict]) -> dict[str, dict]:
    if isinstance(records, dict):
        return {str(k): v for k, v in records.items()}
    out: dict[str, dict] = {}
    for rec in records:  # the last record of a qid counts (a retried question has two lines)
        if isinstance(rec, dict) and rec.get("qid") is not None:
            out[str(rec["qid"])] = rec
    return out


def text_grid(rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
            for r in rows]
