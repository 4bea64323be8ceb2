"""Parsing and formatting of times: ``75``, ``"75s"``, ``"1:15"``, ``"00:01:15.5"``."""

from __future__ import annotations

import re

_CLOCK = re.compile(r"^\s*(?:(\d+):)?(\d{1,2}):(\d{1,2}(?:\.\d+)?)\s*$")
_SECONDS = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(?:s|sec|secs|second|seconds)?\s*$", re.I)


def parse_time(value: object) -> float:
    """Seconds from a number or a time string.

    Accepts ``12``, ``12.5``, ``"12.5s"``, ``"0:40"`` (m:ss) and ``"1:02:03"``
    (h:mm:ss).

    Raises:
        ValueError: the value is not a time.
    """
    if isinstance(value, bool):
        raise ValueError(f"not a time: {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        m = _SECONDS.match(value)
        if m:
            return float(m.group(1))
        m = _CLOCK.match(value)
        if m:
            h = int(m.group(1) or 0)
            return h * 3600 + int(m.group(2)) * 60 + float(m.group(3))
    raise ValueError(f"not a time: {value!r}")


def fmt_time(t_s: float) -> str:
    """``12.5s`` style, one decimal."""
    return f"{t_s:.1f}s"


def fmt_range(start_s: float, end_s: float) -> str:
    """``[40.0s–45.0s]`` style, the prefix of every clip shown to the agent."""
    return f"[{start_s:.1f}s–{end_s:.1f}s]"


_CLOCK_IN_TEXT = re.compile(r"(?<![\d:.])(\d{1,2}:\d{2}(?::\d{2})?(?:\.\d+)?)(?![\d:])")


def clock_times_in(text: str) -> list[tuple[str, float]]:
    """Clock-style times written in a text (``0:40``, ``1:02:03``) with their value in seconds.

    Small orchestrators misread ``0:40`` as 0.4 s; the agent states the
    conversions next to the question.
    """
    out = []
    for m in _CLOCK_IN_TEXT.finditer(text or ""):
        try:
            out.append((m.group(1), parse_time(m.group(1))))
        except ValueError:
            continue
    return out


_SECONDS_IN_TEXT = re.compile(r"\b\d+(?:\.\d+)?\s*(?:s|sec|secs|seconds?|min|minutes?)\b", re.I)


def mentions_time(text: str) -> bool:
    """Whether a question names a moment (``0:40``, ``12 s``, ``3 minutes``)."""
    return bool(clock_times_in(text)) or bool(_SECONDS_IN_TEXT.search(text or ""))
