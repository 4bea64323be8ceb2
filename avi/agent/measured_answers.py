"""Answers measured by the host (issue 14), part of :class:`avi.agent.loop.Agent`: counts at a moment, the largest
count, the span of a count, count comparisons, cut counts from the cut list, intervals on shot edges, colours of
boxes, backgrounds and options, the shot scale, the kind of a shape, and which way a thing moves.

Each method reads the question and what the tools measured (:mod:`avi.agent.measured`,
:mod:`avi.agent.measured_looks`), or measures frames itself (the frames are host measurements, not counted
against the question's frame budget), and says in the trace when its answer replaces the model's.
"""

from __future__ import annotations

import re

from avi.agent.choice import question_stem
from avi.agent.grounding import normalise
from avi.agent.measured import (
    about_shot,
    asks_count,
    asks_most,
    compare_count,
    count_at,
    count_span,
    count_span_question,
    cut_answer,
    cut_question,
    index_counts,
    most_count,
    snap_to_shots,
    usual_count,
)
from avi.agent.measured_looks import (
    about_background,
    asks_colour,
    asks_direction,
    asks_shape,
    colours_named,
    frame_colour_shares,
    measured_colour,
    names_colour,
    shape_answer,
    sideways_motion,
)
from avi.agent.state import State
from avi.agent.trace import Trace, host_tool_call
from avi.tools import ALL_TOOLS
from avi.tools.base import sample_times
from avi.video.spans import merge_spans
from avi.video.timecode import clock_times_in, fmt_range


def named_ranges(ctx) -> list[list[float]]:
    """The ranges the question's time words name (``ctx.focus_ranges``), merged, else the whole video; seconds."""
    return merge_spans([list(r) for r in ctx.focus_ranges]) or [[0.0, ctx.duration_s]]


def asked_ranges(ctx, st: "State", *, looked: bool) -> list[list[float]]:
    """The ranges a question is about, merged, in seconds: its time words (``ctx.focus_ranges``), else the
    evidence, else (with ``looked``) the frames looked at, else the whole video."""
    return (merge_spans([list(r) for r in ctx.focus_ranges]) or merge_spans([list(e) for e in st.evidence])
            or (merge_spans(st.looked) if looked else []) or [[0.0, ctx.duration_s]])


class MeasuredAnswers:
    """Part of :class:`avi.agent.loop.Agent` (module docstring); uses the agent's ``ctx``, ``settings`` and
    (for :meth:`_background_ranges`) :meth:`GroundedAnswers._texts_about_question`."""

    def _colour_answer(self, st: "State", trace: Trace, answer: str) -> str:
        """For "what colour is the <thing>", an answer that names no colour becomes the dominant colour
        object_detect measured on the thing's best box (:func:`measured_colour`); an answer that names a
        colour, or a thing never measured, is kept."""
        if not asks_colour(st.question):
            return answer
        if about_background(st.question):  # the frame's dominant colour is the background's
            shares, ranges = self._range_colours(st, self._background_ranges(st))
            top = next(iter(shares.items()), None)
            if top is not None and top[1] >= 0.35 and top[0] not in colours_named(answer):
                trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                          observation_data={"colour_shares": shares, "ranges": ranges},
                          notes=[f"background colour measured in {', '.join(fmt_range(a, b) for a, b in ranges)}: "
                                 f"{top[0]} covers {round(100 * top[1])}% of the frames (the model wrote "
                                 f"{answer[:60]!r})"])
                return top[0]
        if names_colour(answer):
            return answer
        found = measured_colour(st.perceive_data(), st.question)
        if found is None:
            return answer
        label, colour, t_s = found
        trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                  notes=[f"answer {answer[:60]!r} names no colour; the measured colour of the {label} at {t_s:.1f}s "
                         f"is {colour}"])
        return colour

    def _background_ranges(self, st: "State") -> list[list[float]] | None:
        """Where a background colour question looks: behind the on-screen text it names, the time that text is on
        screen (text_extract's runs of it); else None (the range asked about)."""
        phrases = [normalise(p) for p in re.findall(r"\b[A-Z0-9][A-Z0-9'&-]+(?:\s+[A-Z0-9][A-Z0-9'&-]*)*", st.question)
                   if sum(ch.isalpha() for ch in p) >= 3]
        texts = [t for n, _, d in st.perceive_calls if n == "text_extract" for t in d.get("texts", [])]
        named = [t for t in texts if any(p and p in normalise(t.get("text", "")) for p in phrases)]
        about = named or self._texts_about_question(st)  # the text in capitals the question quotes, else shared words
        return merge_spans([[float(t["first_s"]), float(t["last_s"])] for t in about]) or None

    def _range_colours(self, st: "State", ranges: list[list[float]] | None = None,
                       max_frames: int = 8) -> tuple[dict[str, float], list[list[float]]]:
        """Mean colour shares (:func:`frame_colour_shares`) of up to ``max_frames`` frames spread over ``ranges``,
        by default the range the question is about: its time words, else the evidence, else what was looked
        at, else the whole video. Returns ``(shares, ranges)``; the frames are host measurements, not counted
        against the frame budget."""
        ranges = ranges or asked_ranges(self.ctx, st, looked=True)
        try:
            frames = self.ctx.video.frames_at(sample_times(ranges, self.settings.fps, max_frames))
        except Exception:  # noqa: BLE001 - an undecodable range measures nothing; the model's answer stands
            return {}, ranges
        return frame_colour_shares([f.image for f in frames]), ranges

    def _measured_shape(self, st: "State", trace: Trace, max_frames: int = 8) -> tuple[str, None] | None:
        """For "what shape is the <thing>" (:func:`asks_shape`), the kind of the shape measured where the question
        is about (:func:`shape_answer`): shapes object_detect found, then shapes measured on up to ``max_frames``
        frames of the range asked about (its time words, else the evidence, else what was looked at), then the
        shapes the index's captions name over the whole video. Returns ``(answer, None)`` or None."""
        if not asks_shape(st.question) or st.kind not in ("text", "choice"):
            return None
        from avi.backends.shapes import find_shapes

        found = [{"kind": d["cls"].split(" ")[-1], "colour": d["cls"].split(" ")[0], "box": d["box"]}
                 for n, d_ in st.perceive_data() if n == "object_detect" for d in d_.get("detections") or []
                 if len(str(d.get("cls") or "").split(" ")) == 2 and str(d["cls"]).split(" ")[-1]
                 in ("circle", "square", "rectangle", "triangle")]
        got, where = shape_answer(st.question, found), "object_detect's boxes"
        if got is None:
            ranges = asked_ranges(self.ctx, st, looked=True)
            try:
                frames = self.ctx.video.frames_at(sample_times(ranges, self.settings.fps, max_frames))
            except Exception:  # noqa: BLE001 - an undecodable range measures nothing
                frames = []
            measured = [{"kind": b.kind, "colour": b.colour, "box": list(b.box)} for f in frames
                        for b in find_shapes(f.image)]
            got = shape_answer(st.question, measured)
            where = "frames of " + ", ".join(fmt_range(a, b) for a, b in ranges)
        if got is None:
            captions = [c for c in self.ctx.index.captions if any(
                a <= c.end_s and c.start_s <= b for a, b in self.ctx.focus_ranges)] if self.ctx.focus_ranges \
                else list(self.ctx.index.captions)
            got = shape_answer(st.question, [s for c in captions for s in (getattr(c, "data", None) or {})
                                             .get("shapes") or []])
            where = "the index's captions"
        if got is None:
            return None
        kind, why = got
        if st.kind == "choice":
            hits = [k for k, v in st.options.items() if re.search(rf"\b{kind}s?\b", v, re.I)]
            if len(hits) != 1:
                return None
            trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                      notes=[f"shape option {hits[0]} measured in {where}: {why}"])
            return f"{hits[0]}. {st.options[hits[0]]}", hits[0]
        trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                  notes=[f"shape measured in {where}: {why} (the model wrote {(st.answer or '')[:60]!r})"])
        return kind, None

    def _count_interval(self, st: "State", trace: Trace) -> list[float] | None:
        """For "when are there five circles on screen", the longest run of frames in which object_detect counted
        exactly that many (:func:`count_span`), followed past the frames looked at by counting again in the next
        ``clip_seconds`` windows (at most six per side) while the count holds at the edge. None when the
        question names no count or it was never measured."""
        span = count_span(st.perceive_data(), st.question)
        if span is None:
            return None
        last = next(((n, a) for n, a, d in reversed(st.perceive_calls) if n == "object_detect"), None)
        steps = list(st.perceive_data())
        if last is not None:
            tool, step, dur = ALL_TOOLS["object_detect"], float(self.settings.clip_seconds), self.ctx.duration_s
            for direction in (-1, 1):
                for _ in range(6):
                    edge = span[0] if direction < 0 else span[1]
                    window = [max(0.0, edge - step), edge] if direction < 0 else [edge, min(dur, edge + step)]
                    if window[1] - window[0] < 0.5:
                        break
                    arguments = {**last[1], "time_ranges": [window]}
                    obs = host_tool_call(trace, tool, self.ctx, arguments, iteration=st.iteration, phase="review",
                                         note="following the count past the frames looked at (interval answer)")
                    if obs.error:
                        break
                    steps.append(("object_detect", obs.data))
                    new = count_span(steps, st.question)
                    if new is None or new == span:
                        break
                    span = new
        n, what = count_span_question(st.question)
        trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                  notes=[f"interval measured: {n} {what} counted in {fmt_range(*span)}"])
        return [round(span[0], 2), round(min(self.ctx.duration_s, span[1]), 2)]

    def _index_counts(self) -> list[tuple[str, dict]]:
        """The index's per-frame counts over the whole video (:func:`index_counts`); none without an index."""
        return index_counts(getattr(getattr(self.ctx, "index", None), "captions", None) or [])

    def _count_yes_no(self, st: "State", trace: Trace, answer: str) -> str:
        """"Is there more than one person ...": yes or no from the counts object_detect measured
        (:func:`compare_count`), replacing the model's word when they differ; other answers are kept."""
        found = compare_count(st.question, st.perceive_data())
        if found is None and not self.ctx.focus_ranges:  # about the whole video: the index's counts over all of it
            found = compare_count(st.question, self._index_counts())
        if found is None:
            return answer
        word, measured = found
        if re.match(rf"[\s*]*{word}\b", answer or "", re.I):
            return answer
        trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                  notes=[f"count comparison measured: {measured}; answer {word} (the model wrote {answer[:60]!r})"])
        return word

    def _measured_direction(self, st: "State", trace: Trace) -> tuple[str, str | None] | None:
        """For "does it move to the left or to the right", the way object_detect's boxes of the thing moved
        (:func:`sideways_motion`); when the agent measured nothing the question names, object_detect is run on
        the range asked about for the first thing the question names that the detector knows (a colour and a
        shape word together, else a single word). Returns ``(answer, letter or None)`` or None."""
        if not asks_direction(st.question):
            return None
        stem = question_stem(st.question)
        steps = list(st.perceive_data())
        got = sideways_motion(steps, stem)
        if got is None:
            det = self.ctx.backends.detector
            words = re.findall(r"[a-z]+", stem.lower())
            pairs = [f"{a} {b}" for a, b in zip(words, words[1:])]
            label = next((w for w in pairs + words if len(w) > 2 and w not in ("left", "right", "the", "screen")
                          and det.supports(w)), None)
            if label is None:
                return None
            arguments = {"time_ranges": asked_ranges(self.ctx, st, looked=True), "objects": [label]}
            obs = ALL_TOOLS["object_detect"].run(self.ctx, arguments)
            trace.add(kind="tool_call", iteration=st.iteration, phase="review", tool="object_detect",
                      arguments=arguments, observation=obs.text, observation_data=obs.data, error=obs.error,
                      frames_s=obs.frames_s, notes=["host: measuring which way it moves (direction question)"])
            got = None if obs.error else sideways_motion([("object_detect", obs.data)], label)
        if got is None:
            return None
        way, why = got
        letter = None
        if st.kind == "choice" and st.options:
            hits = [k for k, v in st.options.items() if re.search(rf"\b{way}\b", v, re.I)]
            if len(hits) != 1:
                return None
            letter = hits[0]
        trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                  notes=[f"direction measured: {why} (the model wrote {(st.answer or '')[:60]!r})"])
        return (f"{letter}. {st.options[letter]}" if letter else way), letter

    def _count_at_moment(self, st: "State", trace: Trace, answer: str) -> str:
        """For "how many ... at 0:44", the count object_detect measured at that moment (:func:`count_at`), not
        the largest count of the frames looked at; with no moment named, a count that was never measured becomes
        the usual measured count (:func:`usual_count`). The answer is kept when nothing was measured."""
        if not asks_count(st.question):
            return answer
        times = clock_times_in(st.question)
        written = re.fullmatch(r"[\s*]*(\d+)[\s*.]*", answer or "")  # a bare number, maybe in bold
        if len(times) != 1 and asks_most(st.question):  # "the largest number ... at the same time"
            self._confirm_count_spike(st, trace, st.question)
            steps = list(st.perceive_data())
            if not getattr(self.ctx, "focus_ranges", None):  # the whole video: every clip's counts as well
                steps += self._index_counts()
            most = most_count(steps, st.question)
            if most is None or (written is not None and int(written.group(1)) == most[1]):
                return answer
            trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                      notes=[f"the question asks for the largest count: {most[0]} {most[1]} was the largest count "
                             f"measured in more than one frame (the model wrote {answer[:60]!r})"])
            return str(most[1])
        if len(times) != 1:  # no single moment named: keep any count that was measured, else the usual one
            usual = usual_count(st.perceive_data(), st.question)
            if usual is None or written is None or int(written.group(1)) in usual[2]:
                return answer
            trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                      notes=[f"count {written.group(1)} was never measured; the usual count of {usual[0]} was "
                             f"{usual[1]} (measured: {', '.join(map(str, sorted(usual[2])))})"])
            return str(usual[1])
        found = count_at(st.perceive_data(), times[0][1], st.question)
        source = ""
        if found is None:  # nothing counted there by the agent: the index's counts of that moment
            found, source = count_at(self._index_counts(), times[0][1], st.question), " in the index"
        if found is None:
            return answer
        label, n, (a, b) = found
        if written is not None and int(written.group(1)) == n:
            return answer
        where = f"at {a:.1f}s" if a == b else f"at {a:.1f}-{b:.1f}s"
        trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                  notes=[f"count read at the moment the question names{source}: {label} {n} {where} (the model wrote "
                         f"{answer[:60]!r})"])
        return str(n)

    def _measured_cuts(self, st: "State", trace: Trace) -> tuple[str, str | None] | None:
        """For a question about the hard cuts themselves (:func:`cut_question`: how many, is there any, is it
        one continuous shot), the answer the video's cut list gives (:mod:`avi.video.shots`, every frame)
        inside the range the question names (else the whole video), as ``(answer, choice letter or None)``.
        None when the question is about something else, no cut list can be made, or no option fits."""
        kind = cut_question(st.question)
        if kind is None or st.kind not in ("choice", "text", "number"):
            return None
        shots = self.ctx.shot_list() if hasattr(self.ctx, "shot_list") else None
        if shots is None:
            return None
        ranges = named_ranges(self.ctx)
        cuts = [t for a, b in ranges for t in shots.cuts_in(a, b)]
        got = cut_answer(kind, cuts, st.options)
        if got is None:
            return None
        where = ", ".join(fmt_range(a, b) for a, b in ranges)
        trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                  observation_data={"cuts_s": cuts, "ranges": ranges, "method": shots.method},
                  notes=[f"hard cuts measured on every frame ({shots.method}) in {where}: {len(cuts)}"
                         + (" at " + ", ".join(f"{t:.2f}s" for t in cuts[:20]) if cuts else "")
                         + f"; answer {got[0]!r} (the model wrote {(st.answer or '')[:60]!r})"])
        return got

    def _shot_question(self, st: "State") -> bool:
        """Whether an interval question asks when a shot is on screen (:func:`about_shot`) in a video that has cuts."""
        if not about_shot(st.question):
            return False
        shots = self.ctx.shot_list() if hasattr(self.ctx, "shot_list") else None
        return bool(shots is not None and shots.cuts_s)

    def _shot_edges(self, st: "State", trace: Trace, interval: list[float]) -> list[float]:
        """An interval answer moved onto the video's shot edges (:func:`snap_to_shots`): whole shots when the
        question asks when a shot is on screen, else ends within a second of a cut move onto it."""
        shots = self.ctx.shot_list() if hasattr(self.ctx, "shot_list") else None
        if shots is None or not shots.cuts_s:
            return interval
        whole = about_shot(st.question)
        out = [round(x, 2) for x in snap_to_shots(interval, shots.shots(), whole_shots=whole)]
        if out != [round(x, 2) for x in interval]:
            trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                      notes=[f"interval {fmt_range(*interval)} moved onto shot edges ({shots.method}"
                             + (", whole shots" if whole else "") + f"): {fmt_range(*out)}"])
            return out
        return interval

