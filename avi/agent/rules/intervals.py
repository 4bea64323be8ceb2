"""Answer rules for interval answers (issue 14): the whole evidence run an answer points at
(followed past the frames looked at). Times are seconds; intervals ``[start_s, end_s]``. Each
body has the rules' one signature (:data:`avi.agent.rules.base.RuleBody`): the answer moved, or None.
"""

from __future__ import annotations

from avi.agent.grounding import evidence_span
from avi.agent.question import normalise
from avi.agent.rules.base import Delivered, RuleRun, shot_list, texts_about_question
from avi.video.spans import merge_spans
from avi.video.timecode import fmt_range


def _window(edge: float, direction: int, step: float, duration_s: float) -> list[float]:
    """The ``step``-second window just before (``direction`` -1) or after (+1) ``edge``, inside the video."""
    return [max(0.0, edge - step), edge] if direction < 0 else [edge, min(duration_s, edge + step)]


def shot_question(r: RuleRun) -> bool:
    """Whether an interval question asks when a shot is on screen, in a video that has cuts."""
    shots = shot_list(r.ctx) if r.q.about_shot else None
    return bool(shots is not None and shots.cuts_s)


def event_interval(r: RuleRun, ans: Delivered) -> Delivered | None:
    """The ``event_interval`` rule: the answer's interval moved to its evidence run (:func:`evidence_run`); none
    for a question about when a shot is on screen (:func:`shot_question`: its evidence is the shot, not a run of
    detections; the model's interval stands)."""
    if not ans.interval or shot_question(r):
        return None
    return ans.with_interval(evidence_run(r, ans.interval))


def evidence_run(r: RuleRun, interval: list[float]) -> list[float]:
    """An interval answer widened (or narrowed) to the whole evidence run it points at (:func:`evidence_span`):
    the on-screen texts sharing the question's words when there are any (their time on screen), else the perceive
    tools' evidence; followed into the next clips while the same tool still finds it (:func:`follow_event`)."""
    about = texts_about_question(r.st)
    wordy = r.q.asks_for_text or r.q.about_words
    if about:
        runs = [[float(t["first_s"]), float(t["last_s"])] for t in about]
    else:  # text read elsewhere (texture, signs the question is not about) is no evidence of this event
        runs = [list(map(float, e)) for n, _, d in r.st.perceive_calls if n != "text_extract" or wordy
                for e in d.get("evidence") or []]
    span = evidence_span(interval, runs)
    if span is None:
        return interval
    span = follow_event(r, span, {normalise(t["text"]) for t in about}, texts_count=bool(about) or wordy)
    out = [round(max(0.0, span[0]), 2), round(min(r.ctx.duration_s, span[1]), 2)]
    if out != interval:
        r.note(f"interval {fmt_range(*interval)} widened to the evidence run {fmt_range(*out)}")
    return out


def follow_event(r: RuleRun, span: list[float], keys: set[str] | None = None, max_steps: int = 6,
                 texts_count: bool = True) -> list[float]:
    """``span`` extended past the frames looked at, one ``clip_seconds`` window at a time (``max_steps`` a side),
    while the last evidence-giving perceive call (text_extract: the same texts, ``keys`` when given;
    object_detect: the same labels; only object_detect without ``texts_count``) still finds it at the edge."""
    followed = ("text_extract", "object_detect") if texts_count else ("object_detect",)
    last = next(((n, a, d) for n, a, d in reversed(r.st.perceive_calls) if n in followed and d.get("evidence")), None)
    if last is None or last[0] not in r.tools:
        return span
    name, args, data = last
    keys = keys or {normalise(t.get("text", "")) for t in data.get("texts", [])
                    if t.get("last_s", 0) >= span[0] - 1.0 and t.get("first_s", 0) <= span[1] + 1.0}
    step, dur, tool = float(r.settings.clip_seconds), r.ctx.duration_s, r.tools[name]
    looked = merge_spans([list(x) for x in r.st.looked], gap_s=1.0)
    s, e = span
    for direction in (-1, 1):
        for _ in range(max_steps):
            edge = s if direction < 0 else e
            window = _window(edge, direction, step, dur)
            if window[1] - window[0] < 0.5 or any(a <= edge + direction <= b for a, b in looked):
                break  # the video ends, or frames beyond the edge were seen without the evidence
            obs = r.measure(tool, {**args, "time_ranges": [window]},
                            "following the event past the frames looked at (interval answer)", phase="review")
            if obs.frames_s:
                looked = merge_spans(looked + [[min(obs.frames_s), max(obs.frames_s)]], gap_s=1.0)
            texts = obs.data.get("texts")
            hits = [t for t in texts if normalise(t.get("text", "")) in keys] if texts is not None and keys \
                else [{"first_s": x[0], "last_s": x[1]} for x in obs.evidence]
            near = [h for h in hits if (h["last_s"] >= edge - 1.0 if direction < 0 else h["first_s"] <= edge + 1.0)]
            if obs.error or not near:
                break
            if direction < 0:
                s = min(s, min(h["first_s"] for h in near) - 0.25)
                if s > window[0] + 0.75:
                    break  # it starts inside this window
            else:
                e = max(e, max(h["last_s"] for h in near) + 0.25)
                if e < window[1] - 0.75:
                    break  # it ends inside this window
    return [s, e]
