"""The answer rules of a question over several videos (issue 21; in the registry since issue 54), both ``decide``
rules tried before the first model step: each body has the rules' one signature
(:data:`avi.agent.rules.base.RuleBody`) and answers only a question whose type is a video answer
(:data:`avi.videos.kinds.VIDEO_KINDS`: a name, a set of names, an order), which only
:class:`avi.videos.agent.MultiAgent` asks, over its :class:`avi.videos.context.MultiContext`.

* ``video_length``: "order the videos by length, shortest first", "which video is the longest" from the videos'
  durations (:func:`avi.videos.kinds.by_length`): the 1.5B model ordered three numbers wrongly
  (bench/questions_multi cross-order-length);
* ``same_person``: "which of the videos show the same man?" from the one person whose face matches across the
  videos (:func:`avi.videos.people.same_person_videos`): told that person in its question message, the 1.5B model
  still named one other video.
"""

from __future__ import annotations

from dataclasses import replace

from avi.agent.rules.base import Delivered, RuleRun
from avi.trace import HOST_STEP
from avi.videos.kinds import by_length
from avi.videos.people import same_person_videos, shared_people_lines


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
    return _answered(r, ans, value, "answered from the faces matched across the videos: "
                     + "; ".join(shared_people_lines(people)), {"shared_people": people})
