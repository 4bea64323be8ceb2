"""Values read back from a JSON trace file, which may have been edited or crafted (issue 55, item 8).

``avi view`` renders any file it is given: a number there is used only when it is a finite JSON number (a string,
a boolean, NaN or a list where a number belongs counts as missing, never as an internal error), and every text is
escaped by the page (:func:`avi.viewer.esc`). The totals of :func:`trace_totals` are numbers recomputed from the
steps wherever the file's own are not.
"""

from __future__ import annotations

import math

#: the totals :func:`trace_totals` gives, each a number
TOTAL_KEYS = ("prompt_tokens", "completion_tokens", "llm_seconds", "tool_seconds", "tool_calls", "frames_looked_at",
              "frames_spent")


def as_num(value) -> float | None:
    """``value`` as a float when it is a finite JSON number (not a boolean), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def as_int(value, default: int = 0) -> int:
    """``value`` as an int when it is a finite number (rounded down), else ``default``."""
    num = as_num(value)
    return int(num) if num is not None else default


def as_float(value, default: float = 0.0) -> float:
    """``value`` as a float when it is a finite number, else ``default``."""
    num = as_num(value)
    return num if num is not None else default


def as_dict(value) -> dict:
    """``value`` when it is a JSON object, else {}."""
    return value if isinstance(value, dict) else {}


def as_list(value) -> list:
    """``value`` when it is a JSON array, else []."""
    return value if isinstance(value, list) else []


def pair(value) -> list[float] | None:
    """``[low, high]`` of a two-number list (seconds), or None."""
    if isinstance(value, (list, tuple)) and len(value) == 2:
        a, b = as_num(value[0]), as_num(value[1])
        if a is not None and b is not None:
            return [min(a, b), max(a, b)]
    return None


def argument_ranges(arguments) -> list[list[float]]:
    """Time ranges ``[start_s, end_s]`` (seconds) named in a tool call's arguments.

    Takes every ``[s, e]`` pair or list of pairs under a key containing
    ``range`` (``time_ranges``, ``time_range``, …), and ``start_s``/``end_s``.
    """
    out: list[list[float]] = []
    if not isinstance(arguments, dict):
        return out
    for key, value in arguments.items():
        if "range" not in str(key).lower():
            continue
        got = pair(value)
        if got is not None:
            out.append(got)
        elif isinstance(value, (list, tuple)):
            out += [p for p in (pair(v) for v in value) if p is not None]
    s, e = as_num(arguments.get("start_s")), as_num(arguments.get("end_s"))
    if s is not None and e is not None:
        out.append([min(s, e), max(s, e)])
    return out


def trace_steps(trace: dict) -> list[dict]:
    """The steps of a trace that are JSON objects."""
    steps = trace.get("steps") or []
    return [s for s in steps if isinstance(s, dict)] if isinstance(steps, list) else []


def step_frames(step: dict) -> list[float]:
    """The frame times (seconds) a step looked at (its ``frames_s`` that are finite numbers)."""
    frames = step.get("frames_s") or []
    return [t for t in (as_num(v) for v in frames) if t is not None] if isinstance(frames, list) else []


def trace_totals(trace: dict) -> dict:
    """The trace's totals (:data:`TOTAL_KEYS`), each a number: the file's own where it is a finite number, else
    computed from the steps (tokens and tool calls as ints, seconds rounded to ms)."""
    steps = trace_steps(trace)
    given = trace.get("totals") if isinstance(trace.get("totals"), dict) else {}
    computed = {
        "prompt_tokens": sum(as_int(s.get("prompt_tokens")) for s in steps),
        "completion_tokens": sum(as_int(s.get("completion_tokens")) for s in steps),
        "llm_seconds": round(sum(as_float(s.get("llm_seconds")) for s in steps), 3),
        "tool_seconds": round(sum(as_float(s.get("tool_seconds")) for s in steps), 3),
        "tool_calls": sum(1 for s in steps if s.get("kind") == "tool_call"),
        "frames_looked_at": len({t for s in steps for t in step_frames(s)}),
        "frames_spent": sum(len(step_frames(s)) for s in steps),
    }
    out = {}
    for key in TOTAL_KEYS:
        num = as_num(given.get(key))
        if num is None:
            out[key] = computed[key]
        else:
            out[key] = round(num, 3) if key.endswith("seconds") else int(num)
    return out
