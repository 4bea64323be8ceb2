"""The answer rules of a question over several videos (issue 21; in the registry since issue 54), both ``decide``
rules tried before the first model step: each body has the rules' one signature
(:data:`avi.agent.rules.base.RuleBody`) and answers only a question whose type is a video answer
(:data:`avi.videos.kinds.VIDEO_KINDS`: a name, a set of names, an order), which only
:class:`avi.videos.agent.MultiAgent` asks, over its :class:`avi.videos.context.MultiContext`.

* ``video_length``: "order the videos by length, shortest first", "which video is the longest" from the videos'
  durations (:func:`by_length`): the 1.5B model ordered three numbers wrongly
  (bench/questions_multi cross-order-length);
* ``same_person``: "which of the videos show the same man?" from the one person whose face matches across the
  videos (:func:`same_person_videos`; the people are :func:`avi.videos.people.shared_people`, which the
  context computes): told that person in its question message, the 1.5B model
  still named one other video.
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


_SAME_PERSON = re.compile(r"\bsame\s+(?:person|man|woman|boy|girl|child|guy|lady|individual|people)\b", re.I)


def same_person_videos(kind: str, question: str, people: list[dict], names: list[str]) -> list[str] | None:
    """"Which of the videos show the same man?" answered from the faces matched across the videos: the videos of
    the one person :func:`avi.videos.people.shared_people` found, in the question's order.

    Args:
        kind: the question's :func:`avi.videos.kinds.video_kind` (only ``videos`` is answered).
        question: the question text; it must ask about the same person (man, woman, ...).
        people: :func:`avi.videos.people.shared_people` of the question's videos.
        names: the question's video names, in order.

    Returns:
        the names, or None when the question is not of that form or the faces do not settle it: no person or
        more than one person is shared (which one the question means is then the model's to find). No face link is
        never read as "not the same person": faces fail on degraded footage (module docstring).
    """
    if kind != "videos" or not _SAME_PERSON.search(question or "") or len(people) != 1:
        return None
    shown = {m["video"] for m in people[0]["people"]}
    return [n for n in names if n in shown]


def _answered(r: RuleRun, ans: Delivered, value: str | list[str], note: str, data: dict) -> Delivered:
    """``value`` (one name, or names in order) as the answer; before the model (no answer yet) the trace gets the
    host's answer step."""
    text = value if isinstance(value, str) else ", ".join(value)
    if r.st.answer is None:
        r.trace.add(kind="answer", answer=text, iteration=0, phase=r.st.phase, observation_data=data,
                    notes=[HOST_STEP, note])
    return replace(ans.decided(text), order=value if r.st.kind == "video_order" else ans.order)


def video_length(r: RuleRun, ans: Delivered) -> Delivered | None:
    """The ``video_length`` rule: a question about the videos' lengths answered from their durations (seconds)."""
    durations = r.ctx.durations()
    value = by_length(r.st.kind, r.st.question, durations)
    if value is None:
        return None
    return _answered(r, ans, value, "answered from the videos' durations: "
                     + ", ".join(f"{n} {d:.1f}s" for n, d in durations.items()), {"durations_s": durations})


def same_person(r: RuleRun, ans: Delivered) -> Delivered | None:
    """The ``same_person`` rule: which videos show the same person, from the faces matched across them; the
    person's spans become the answer's evidence ``[start_s, end_s, video]``."""
    people = r.ctx.shared_people()
    value = same_person_videos(r.st.kind, r.st.question, people, r.ctx.names)
    if value is None:
        return None
    if r.st.answer is None:
        r.st.evidence += [[a, b, m["video"]] for m in people[0]["people"] for a, b in m["spans"]]  # where seen
    seen = "; ".join(f"{m['video']} " + ", ".join(f"[{a:.1f}s–{b:.1f}s]" for a, b in m["spans"])
                     for m in people[0]["people"])
    return _answered(r, ans, value, f"answered from the faces matched across the videos: the same person in {seen}",
                     {"shared_people": people})
