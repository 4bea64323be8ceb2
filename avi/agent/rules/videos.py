"""The answer rule of a question over several videos (issue 21; in the registry since issue 54): ``video_length``,
a ``decide`` rule tried before the first model step, answers "order the videos by length, shortest first", "which
video is the longest" from the videos' durations (:func:`by_length`); the 1.5B model ordered three numbers wrongly
(bench/questions_multi cross-order-length). Its body has the rules' one signature
(:data:`avi.agent.rules.base.RuleBody`) and answers only a question whose type is a video answer
(:data:`avi.videos.kinds.VIDEO_KINDS`), which only :class:`avi.videos.agent.MultiAgent` asks, over its
:class:`avi.videos.context.MultiContext`. (``same_person``, the videos of the one face matched across them, was
deleted in issue 54: it answered no question of bench/questions_multi; the matched people are still told in the
question message.)
"""

from __future__ import annotations

import re
from dataclasses import replace

from avi.agent.rules.base import Delivered, RuleRun
from avi.trace import HOST_STEP

_LENGTH = re.compile(r"\b(?:by|in order of|according to)\s+(?:their\s+|its\s+)?(?:lengths?|durations?|running times?)\b"
                     r"|\b(?:longest|shortest|longer|shorter)\s+(?:video|clip|recording|file)s?\b"
                     r"|\bvideos\b[^.?!]{0,40}\b(?:from (?:the )?(?:longest|shortest)|(?:longest|shortest) first)\b"
                     r"|\b(?:video|clip|one)\s+is\s+(?:the\s+)?(?:longest|shortest|longer|shorter)\b", re.I)
_SHORT_FIRST = re.compile(r"\bshortest\b[^.?!]{0,20}\bfirst\b|\bfrom (?:the )?shortest\b|\bshortest to\b"
                          r"|\bascending\b|\bincreasing\b", re.I)
_LONG_FIRST = re.compile(r"\blongest\b[^.?!]{0,20}\bfirst\b|\bfrom (?:the )?longest\b|\blongest to\b"
                         r"|\bdescending\b|\bdecreasing\b", re.I)


def by_length(kind: str, question: str, durations: dict[str, float]) -> str | list[str] | None:
    """A question about the videos' lengths answered from their durations (the host knows them exactly):
    "order the videos by length, shortest first" (``video_order``), "which video is the longest" (``video``;
    "longer" and "shorter" too). Length words about something else ("the longest queue") do not count.

    Args:
        kind: the question's :func:`avi.videos.kinds.video_kind`.
        durations: ``{name: seconds}`` of the question's videos.

    Returns:
        the names in order, or one name; None when the question is not about length, says no direction, or two
        videos are equally long (within 0.05 s).
    """
    q = question or ""
    if kind not in ("video", "video_order") or not _LENGTH.search(q) or len(durations) < 2:
        return None
    ranked = sorted(durations, key=lambda n: durations[n])
    if any(abs(durations[a] - durations[b]) < 0.05 for a, b in zip(ranked, ranked[1:])):
        return None
    if kind == "video_order":
        short, long_ = bool(_SHORT_FIRST.search(q)), bool(_LONG_FIRST.search(q))
        if short == long_:
            return None
        return ranked if short else ranked[::-1]
    short = re.search(r"\bshort(?:est|er)\b", q, re.I) is not None
    long_ = re.search(r"\blong(?:est|er)\b", q, re.I) is not None
    if short == long_:
        return None
    return ranked[0] if short else ranked[-1]


def video_length(r: RuleRun, ans: Delivered) -> Delivered | None:
    """The ``video_length`` rule: a question about the videos' lengths answered from their durations (seconds);
    one name, or the names in order (``order`` for ``video_order``). Before the model (no answer yet) the trace
    gets the host's answer step."""
    durations = r.ctx.durations()
    value = by_length(r.st.kind, r.st.question, durations)
    if value is None:
        return None
    text = value if isinstance(value, str) else ", ".join(value)
    if r.st.answer is None:
        r.trace.add(kind="answer", answer=text, iteration=0, phase=r.st.phase,
                    observation_data={"durations_s": durations}, notes=[HOST_STEP, "answered from the videos' "
                    "durations: " + ", ".join(f"{n} {d:.1f}s" for n, d in durations.items())])
    return replace(ans.decided(text), order=value if r.st.kind == "video_order" else ans.order)
