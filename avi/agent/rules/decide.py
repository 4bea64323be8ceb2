"""The ``decide`` answer rules (issue 14): the cut list, the option with the measured colour or shot scale, which
way a thing moves. Each takes a
:class:`~avi.agent.rules.base.RuleRun` and returns ``(answer text, letter or None)`` or None, noting why in the trace.
"""

from __future__ import annotations

from avi.agent.question import options_naming
from avi.agent.rules import looks
from avi.agent.rules.base import (
    Delivered,
    RuleRun,
    asked_ranges,
    named_ranges,
    range_colours,
    shot_list,
    where,
)
from avi.agent.rules.measured import count_spike, cut_answer
from avi.trace import HOST_STEP
from avi.video.analysis import COLOUR_SYNONYMS


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


def colour_choice(r: RuleRun, ans: Delivered) -> Delivered | None:
    """The ``colour_choice`` rule: a colour question whose options name colours gets the option the measured
    colours support (the thing's detector box when measured, else the frames of the range asked about;
    :func:`avi.agent.rules.looks.colour_choice`)."""
    q = r.q
    box = looks.measured_colour(r.st.perceive_data(), q.words)
    box_colour = COLOUR_SYNONYMS.get(box[1], box[1]) if box else None
    shares, ranges = range_colours(r)
    got = looks.colour_choice(q.colour_options, shares, box_colour)
    if got is None:
        return None
    letter, why = got
    r.note(f"colour option {letter} measured: {why} (in {where(ranges)})",
           observation_data={"colour_shares": shares, "ranges": ranges, "box_colour": box_colour})
    return ans.decided(f"{letter}. {q.options[letter]}", letter)


def scale_choice(r: RuleRun, ans: Delivered, max_frames: int = 6) -> Delivered | None:
    """The ``scale_choice`` rule: options naming a shot scale or a black screen get the option the middle frame of
    each shot in the range asked about supports (people's boxes, :func:`avi.backends.box_words.shot_scale`, and the
    share of black pixels)."""
    det = getattr(r.ctx.backends, "detector", None)
    if det is None:
        return None
    from avi.backends.box_words import scale_kind, shot_scale
    from avi.backends.detector import all_detections
    from avi.video.analysis import colour_names

    ranges = asked_ranges(r.ctx, r.st, looked=False)
    shots = shot_list(r.ctx)
    spans = shots.shots() if shots is not None else [(0.0, r.ctx.duration_s)]
    times = sorted((max(a, s) + min(b, e)) / 2 for a, b in ranges for s, e in spans if min(b, e) > max(a, s))
    try:
        frames = r.ctx.video.frames_at(times[:max_frames])
    except Exception:  # noqa: BLE001 - an undecodable range measures nothing; the option scores decide
        return None
    measured = [scale_kind(shot_scale(all_detections(det, f), f.image.shape[0]),
                           dict(colour_names(f.image, top=1, min_share=0.0)).get("black", 0.0)) for f in frames]
    got = looks.scale_choice(r.q.scale_options, measured)
    if got is None:
        return None
    letter, kind = got
    r.note(f"shot option {letter} measured: {kind} in {measured.count(kind)} of {len(measured)} shot frames in "
           f"{where(ranges)}", observation_data={"frames_s": [round(f.t_s, 2) for f in frames], "kinds": measured})
    return ans.decided(f"{letter}. {r.q.options[letter]}", letter)


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


def direction(r: RuleRun, ans: Delivered) -> Delivered | None:
    """The ``direction`` rule: "does it move to the left or to the right" gets the way object_detect's boxes of the
    thing moved (:func:`avi.agent.rules.looks.sideways_motion`); when nothing the question names was measured,
    object_detect runs on the range asked about for the first thing the question names that the detector knows (two
    words, else one)."""
    q = r.q
    got = looks.sideways_motion(list(r.st.perceive_data()), q.stem_words)
    tool = r.tools.get("object_detect")
    if got is None and tool is not None:
        det, tokens = r.ctx.backends.detector, list(q.stem_tokens)
        pairs = [f"{a} {b}" for a, b in zip(tokens, tokens[1:])]
        label = next((w for w in pairs + tokens if len(w) > 2 and w not in ("left", "right", "the", "screen")
                      and det.supports(w)), None)
        if label is None:
            return None
        arguments = {"time_ranges": asked_ranges(r.ctx, r.st, looked=True), "objects": [label]}
        obs = r.measure(tool, arguments, "measuring which way it moves (direction question)", phase="review")
        got = None if obs.error else looks.sideways_motion([("object_detect", obs.data)], frozenset(label.split()))
    if got is None:
        return None
    way, why = got
    letter = None
    if q.kind == "choice" and q.options:
        hits = options_naming(q.options, way)
        if len(hits) != 1:
            return None
        letter = hits[0]
    r.note(f"direction measured: {why} (the model wrote {(r.st.answer or '')[:60]!r})")
    return ans.decided(f"{letter}. {q.options[letter]}" if letter else way, letter)
