"""Parsing and formatting of times: ``75``, ``"75s"``, ``"1:15"``, ``"00:01:15.5"``."""

from __future__ import annotations

import math
import re

_CLOCK = re.compile(r"^\s*(?:(\d+):)?(\d{1,2}):(\d{1,2}(?:\.\d+)?)\s*$")
_SECONDS = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(?:s|sec|secs|second|seconds)?\s*$", re.I)


def parse_time(value: object) -> float:
    """Seconds from a number or a time string.

    Accepts ``12``, ``12.5``, ``"12.5s"``, ``"0:40"`` (m:ss) and ``"1:02:03"``
    (h:mm:ss).

    Raises:
        ValueError: the value is not a time, or not a finite one (NaN and
            ±Infinity, which JSON parsers accept, would otherwise widen a
            range to the whole video when it is clipped).
    """
    if isinstance(value, bool):
        raise ValueError(f"not a time: {value!r}")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ValueError(f"not a finite time: {value!r} (times are seconds, e.g. 40 or \"0:40\")")
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


_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40, "forty-five": 45,
    "fifty": 50, "sixty": 60, "ninety": 90, "a": 1, "an": 1, "a few": 3, "few": 3, "a couple of": 2,
}
_AMOUNT = r"(\d+(?:\.\d+)?|" + "|".join(sorted((re.escape(w) for w in _NUMBER_WORDS), key=len, reverse=True)) + r")"
_UNIT = r"(s|secs?|seconds?|mins?|minutes?)\b"
_CLOCK_OR_SECONDS = r"(\d{1,2}:\d{2}(?::\d{2})?(?:\.\d+)?|\d+(?:\.\d+)?\s*(?:s|secs?|seconds?)\b)"


def _amount_s(amount: str, unit: str) -> float:
    a = amount.strip().lower()
    value = float(a) if re.fullmatch(r"\d+(?:\.\d+)?", a) else float(_NUMBER_WORDS[a])
    return value * (60.0 if unit.lower().startswith("m") else 1.0)


def _point_s(text: str) -> float:
    return parse_time(re.sub(r"\s*(secs?|seconds?)$", "s", text.strip(), flags=re.I))


def question_ranges(text: str, duration_s: float) -> list[tuple[str, list[float]]]:
    """Time ranges that the words of a question name, as ``(phrase, [start_s, end_s])`` in order of appearance.

    Reads clock times and seconds ("at 0:40", "around 3:20", "between 1:00 and 1:30", "from 12 s to 20 s"),
    amounts from either end ("in the first ten seconds", "in the last minute", "after 2 minutes"), marks ("a
    little after the four-minute mark": the next half window, "after": a window), and vague
    words ("at the start", "shortly after the beginning", "halfway through", "near the end", "in the second
    half"). Vague words get a window of a tenth of the video, at least 10 s and at most 60 s; "around t" is
    t ± 5 s (± 10 s for videos over 10 minutes); "at t" is the 5 s around t. Ranges are clipped to
    ``[0, duration_s]``; phrases that name nothing inside the video are dropped.

    This is the host's reading of the question's time words (issue 14: small orchestrators search the whole
    video when the question says where to look); the agent offers these ranges as the first places to look.

    Args:
        text: the question.
        duration_s: video length in seconds (> 0).

    Returns:
        ``[(phrase, [start_s, end_s])]``, seconds, start <= end.
    """
    dur = float(duration_s)
    if dur <= 0 or not text:
        return []
    q = " ".join(text.split())
    vague = min(60.0, max(10.0, 0.1 * dur))
    around = 10.0 if dur >= 600 else 5.0
    found: list[tuple[int, str, list[float]]] = []
    taken: list[tuple[int, int]] = []

    def add(m: re.Match, span: list[float]) -> None:
        if any(m.start() < e and m.end() > s for s, e in taken):
            return  # part of a longer phrase already read
        a, b = sorted(span)
        a, b = max(0.0, a), min(dur, b)
        if b < a or a >= dur:
            return
        taken.append((m.start(), m.end()))
        found.append((m.start(), m.group(0), [round(a, 3), round(b, 3)]))

    for m in re.finditer(rf"\b(?:between|from)\s+{_CLOCK_OR_SECONDS}\s+(?:and|to|until|-|–)\s+{_CLOCK_OR_SECONDS}",
                         q, re.I):
        add(m, [_point_s(m.group(1)), _point_s(m.group(2))])
    for m in re.finditer(rf"\b(?:in|during|within|over)\s+the\s+(first|last|final|opening|closing)\s+"
                         rf"(?:{_AMOUNT}\s+)?{_UNIT}", q, re.I):
        n = _amount_s(m.group(2) or "1", m.group(3))
        add(m, [0.0, n] if m.group(1).lower() in ("first", "opening") else [dur - n, dur])
    for m in re.finditer(rf"\b{_AMOUNT}\s+{_UNIT}\s+(?:in|into)\b", q, re.I):
        t = _amount_s(m.group(1), m.group(2))
        add(m, [t - around, t + around])
    for m in re.finditer(rf"\b(?:(a\s+little|shortly|just|soon|right)\s+)?(after|before|around|at|by|near)\s+the\s+"
                         rf"{_AMOUNT}[-\s]+{_UNIT}\s+(?:mark|point)\b", q, re.I):  # "a little after the four-minute mark"
        t = _amount_s(m.group(3), m.group(4))
        kind, w = m.group(2).lower(), (vague / 2 if m.group(1) else vague)
        add(m, [t, t + w] if kind == "after" else [t - w, t] if kind == "before" else [t - around, t + around])
    for m in re.finditer(rf"\b(after|before)\s+(?:the\s+first\s+)?{_AMOUNT}\s+{_UNIT}", q, re.I):
        t = _amount_s(m.group(2), m.group(3))
        add(m, [t, t + 2 * vague] if m.group(1).lower() == "after" else [max(0.0, t - 2 * vague), t])
    for m in re.finditer(rf"\b(around|about|approximately|roughly|near|at|by|and|or)\s+(?:the\s+)?"
                         rf"{_CLOCK_OR_SECONDS}", q, re.I):
        t = _point_s(m.group(2))
        w = around if m.group(1).lower() in ("around", "about", "approximately", "roughly", "near") else 2.5
        add(m, [t - w, t + w])
    for m in re.finditer(_CLOCK_IN_TEXT.pattern, q):
        t = parse_time(m.group(1))
        add(m, [t - 2.5, t + 2.5])
    words = [
        (r"\b(?:in\s+the\s+)?first\s+half\b", [0.0, dur / 2]),
        (r"\b(?:in\s+the\s+)?second\s+half\b", [dur / 2, dur]),
        (r"\b(?:half\s*way|midway)(?:\s+(?:through|point|mark))?\b|\bin\s+the\s+middle\s+of\s+the\s+video\b",
         [dur / 2 - vague / 2, dur / 2 + vague / 2]),
        (r"\b(?:shortly|soon|just|right)\s+after\s+(?:the\s+)?(?:start|beginning|video\s+(?:starts|begins))\b",
         [0.0, vague]),
        (r"\b(?:at|near|in|from|towards?)\s+the\s+(?:very\s+)?(?:start|beginning|opening)\b|"
         r"\bearly\s+(?:on|in\s+the\s+video)\b|\bfirst\s+(?:few\s+)?(?:moments|frames|scene)\b|"
         r"\bopening\s+(?:scene|shot|seconds)\b|\bwhen\s+the\s+video\s+(?:starts|begins)\b", [0.0, vague]),
        (r"\b(?:at|near|in|towards?|by)\s+the\s+(?:very\s+)?end\b|\blate\s+in\s+the\s+video\b|"
         r"\b(?:last|final|closing)\s+(?:few\s+)?(?:moments|frames|scene|shot|seconds)\b|"
         r"\bbefore\s+the\s+video\s+ends\b|\bwhen\s+the\s+video\s+ends\b", [dur - vague, dur]),
    ]
    for pattern, span in words:
        for m in re.finditer(pattern, q, re.I):
            add(m, span)
    return [(phrase, span) for _, phrase, span in sorted(found)]
