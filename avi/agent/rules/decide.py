"""The ``cuts`` answer rule (issue 14): a question about the cuts answered from the cut list. Its bodies have the
rules' one signature (:data:`avi.agent.rules.base.RuleBody`): they return the measured answer
(:meth:`~avi.agent.rules.base.Delivered.decided`) or None, noting why in the trace. (``colour_choice``,
``scale_choice`` and ``direction`` were deleted in issue 54: they won no ``tune`` question.)
"""

from __future__ import annotations

from avi.agent.rules.base import (
    Delivered,
    RuleRun,
    named_ranges,
    shot_list,
    where,
)
from avi.agent.rules.measured import count_spike, cut_answer
from avi.trace import HOST_STEP


def measured_cuts(r: RuleRun) -> tuple[str, str | None] | None:
    """A question about the hard cuts themselves (how many, any, one continuous shot) answered from the video's
    cut list (:mod:`avi.video.shots`, every frame) in the range the question names, else the whole video."""
    shots = shot_list(r.ctx)
    if shots is None:
        return None
    q, ranges = r.q, named_ranges(r.ctx)
    cuts = [t for a, b in ranges for t in shots.cuts_in(a, b)]
    got = cut_answer(q.cut, cuts, q.options, q.option_numbers, q.option_yes_no)
    if got is not None:
        r.note(f"hard cuts measured on every frame ({shots.method}) in {where(ranges)}: {len(cuts)}"
               + (" at " + ", ".join(f"{t:.2f}s" for t in cuts[:20]) if cuts else "")
               + f"; answer {got[0]!r} (the model wrote {(r.st.answer or '')[:60]!r})",
               observation_data={"cuts_s": cuts, "ranges": ranges, "method": shots.method})
    return got


def cuts(r: RuleRun, ans: Delivered) -> Delivered | None:
    """The ``cuts`` rule: the cut list's answer (:func:`measured_cuts`; the one found before the model when there
    was one)."""
    got = r.st.measured or measured_cuts(r)
    return ans.decided(*got) if got else None


def cuts_early(r: RuleRun, ans: Delivered) -> Delivered | None:
    """The ``cuts`` rule before any model step: :func:`measured_cuts`, with the cuts as the answer's evidence (the
    model's steps would add nothing but prompt reading)."""
    got = measured_cuts(r)
    if got is None:
        return None
    r.st.measured, r.st.answer = got, got[0]
    r.st.evidence += [[max(0.0, t - 0.5), t + 0.5] for t in r.trace.steps[-1].observation_data["cuts_s"]]
    r.trace.add(kind="answer", answer=got[0], iteration=0, phase="retrieve",
                notes=[HOST_STEP, "answered from the video's cut list before any model step"])
    return ans.decided(*got)


def confirm_count_spike(r: RuleRun, words: frozenset[str], wanted: set[int] | None = None,
                        reach_s: float = 1.0) -> None:
    """Measure the frames next to a count seen in one frame only (:func:`count_spike`) with a host object_detect
    call on ``[t - reach_s, t + reach_s]``, added to the perceive calls, so that the largest count is believed
    when its neighbours show it too. Nothing happens without a spike, or when no option (``wanted``) has it."""
    spike = count_spike(r.st.perceive_data(), words)
    tool = r.tools.get("object_detect")
    if spike is None or tool is None or (wanted is not None and spike[1] not in wanted):
        return
    label, n, t = spike
    args = {"time_ranges": [[max(0.0, t - reach_s), min(r.ctx.duration_s, t + reach_s)]], "objects": [label]}
    obs = r.measure(tool, args, f"{label} {n} was seen in one frame only (at {t:.1f}s): its neighbours measured "
                                f"before the largest count is read")
    if not obs.error:
        r.st.perceive_calls.append(("object_detect", args, {**obs.data, "evidence": obs.evidence}))
