"""Answer rules that refine a text or number answer (issue 14): the count at the moment asked about, and "cannot
tell". Each body has the rules' one signature (:data:`avi.agent.rules.base.RuleBody`): it returns the answer with
the text to deliver, noting in the trace why it replaced the model's, or None when it keeps the answer."""

from __future__ import annotations

import re
from dataclasses import replace

from avi.agent.grounding import unseen_labels
from avi.agent.rules.base import (
    Delivered,
    RuleRun,
    moment_count,
    whole_video_counts,
)
from avi.agent.rules.decide import confirm_count_spike
from avi.agent.rules.measured import most_count, usual_count


def count_at_moment(r: RuleRun, ans: Delivered) -> Delivered | None:
    """The ``count_at_moment`` rule (:func:`measured_count`); None when the answer has no text or keeps it."""
    return None if ans.text is None else ans.with_text(measured_count(r, ans.text))


def measured_count(r: RuleRun, answer: str) -> str:
    """"How many ... at 0:44": the count object_detect (else the index) measured at that moment (:func:`count_at`);
    "the largest number at the same time": the largest believed count (:func:`most_count`); with no moment, a
    count never measured becomes the usual count (:func:`usual_count`). ``answer`` is kept when nothing was
    measured."""
    q, st = r.q, r.st
    written = re.fullmatch(r"[\s*]*(\d+)[\s*.]*", answer or "")  # a bare number, maybe in bold
    if len(q.clock_times) != 1 and q.asks_most:
        confirm_count_spike(r, q.words)
        steps = list(st.perceive_data())
        if not r.ctx.scope.focus_ranges:  # the whole video: every clip's counts as well
            steps += whole_video_counts(r.ctx)
        most = most_count(steps, q.words)
        if most is None or (written is not None and int(written.group(1)) == most[1]):
            return answer
        r.note(f"the question asks for the largest count: {most[0]} {most[1]} was the largest count measured in "
               f"more than one frame (the model wrote {answer[:60]!r})")
        return str(most[1])
    if len(q.clock_times) != 1:  # no single moment named: keep any count that was measured, else the usual one
        usual = usual_count(st.perceive_data(), q.words)
        if usual is None or written is None or int(written.group(1)) in usual[2]:
            return answer
        r.note(f"count {written.group(1)} was never measured; the usual count of {usual[0]} was {usual[1]} "
               f"(measured: {', '.join(map(str, sorted(usual[2])))})")
        return str(usual[1])
    found, source = moment_count(r, q.clock_times[0][1], q.words)
    if found is None:
        return answer
    label, n, (a, b) = found
    if written is not None and int(written.group(1)) == n:
        return answer
    at = f"at {a:.1f}s" if a == b else f"at {a:.1f}-{b:.1f}s"
    r.note(f"count read at the moment the question names{source}: {label} {n} {at} (the model wrote "
           f"{answer[:60]!r})")
    return str(n)


def cannot_tell(r: RuleRun, ans: Delivered) -> Delivered | None:
    """The ``cannot_tell`` rule: the answer marked ``cannot_tell`` whose text says so (:func:`cannot_tell_text`);
    None when the profile measures what is asked."""
    text = cannot_tell_text(r, ans.text, ans.choice)
    return None if text is None else replace(ans, text=text, cannot_tell=True)


def cannot_tell_text(r: RuleRun, answer: str | None, choice: str | None) -> str | None:
    """The answer when what the question asks about is measured by no tool of this profile: it says so, keeping the
    model's answer (or letter) as a marked guess; None otherwise. With the memory route and ``memory_cannot_tell``
    (issue 53) this is decided from the parsed query (its op ``unsupported``, or an object the detector has no class
    for) on a profile whose frame analysis is a measurement; otherwise from the labels object_detect reported it has
    no class for (:func:`unseen_labels`) when the question asks for no words (OCR and speech measure those)."""
    analyzer = getattr(getattr(r.ctx.backends, "frame_analyzer", None), "name", "")
    if choice and r.q.options:
        guess = f"; the option best supported is {choice}. {r.q.options.get(choice, '')} (a guess)"
    else:
        guess = f"; best guess: {answer} (not measured)" if answer else ""
    routed = getattr(r.st, "memory", None)
    if routed is not None and routed.unsupported is not None and getattr(r.settings, "memory_cannot_tell", False):
        if not routed.unsupported or not str(analyzer).startswith("perception") or r.q.about_speech:
            return None
        noun = (routed.parse.query.noun or "what the question asks").strip()
        r.note(f"cannot tell: the parsed query ({routed.parse.query.short()}) asks about what no tool of this "
               f"profile measures")
        return f"Cannot tell on this profile: no tool here measures {noun}{guess}"
    unseen = unseen_labels(r.q.words, r.st.unsupported, analyzer)
    if not unseen:
        return None
    r.note(f"cannot tell: object_detect has no class for {', '.join(unseen)}, which the question names, and no "
           f"text or speech evidence answers it")
    return f"Cannot tell on this profile: its detector ({r.ctx.backends.detector.name}) has no class for " \
           f"{', '.join(unseen)}{guess}"
