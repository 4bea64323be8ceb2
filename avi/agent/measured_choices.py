"""Multiple-choice letters measured by the host (issue 14), part of :class:`avi.agent.loop.Agent`: the option
with the measured colour, shot scale or count, and the one option whose words the video shows or says.

Each method returns ``(answer text, letter)`` or None (the option scores decide then) and says in the trace
why its letter replaces the model's.
"""

from __future__ import annotations

import re

from avi.agent.choice import question_stem
from avi.agent.measured import asks_count, count_at, count_spike, label_named, most_count, option_count
from avi.agent.measured_answers import asked_ranges, named_ranges
from avi.agent.measured_looks import (
    COLOUR_SYNONYMS,
    colour_choice,
    colour_options,
    measured_colour,
    scale_choice,
    scale_kind,
    scale_options,
)
from avi.agent.option_evidence import text_choice
from avi.agent.state import State
from avi.agent.trace import HOST_STEP, Trace, host_tool_call
from avi.backends.coco_detector import coco_classes_for
from avi.tools import ALL_TOOLS
from avi.tools.base import sample_times
from avi.video.timecode import clock_times_in, fmt_range

#: Option words for something made of text: a sign or a caption shows words, so OCR reads them when it is there.
_WRITTEN = re.compile(r"\b(?:signs?|signboards?|captions?|titles?|banners?|logos?|writing|text|words|posters?|"
                      r"billboards?|placards?|subtitles?|headlines?)\b", re.I)


class MeasuredChoices:
    """Part of :class:`avi.agent.loop.Agent` (module docstring); uses the agent's ``ctx`` and ``settings`` and
    :meth:`avi.agent.measured_answers.MeasuredAnswers._range_colours`."""

    def _measured_colour_choice(self, st: "State", trace: Trace) -> tuple[str, str] | None:
        """For a multiple-choice colour question (:func:`colour_options`), the option the measured colours
        support (:func:`colour_choice`): the colour of the thing's detector box when one was measured, else the
        colours of the frames in the range asked about. Returns ``(answer, letter)`` or None (option scores
        decide)."""
        named = colour_options(st.question, st.options) if st.kind == "choice" and st.options else None
        if named is None:
            return None
        box = measured_colour(st.perceive_data(), st.question)
        box_colour = COLOUR_SYNONYMS.get(box[1], box[1]) if box else None
        shares, ranges = self._range_colours(st)
        got = colour_choice(named, shares, box_colour)
        if got is None:
            return None
        letter, why = got
        trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                  observation_data={"colour_shares": shares, "ranges": ranges, "box_colour": box_colour},
                  notes=[f"colour option {letter} measured: {why} (in {', '.join(fmt_range(a, b) for a, b in ranges)})"])
        return f"{letter}. {st.options[letter]}", letter

    def _measured_scale_choice(self, st: "State", trace: Trace, max_frames: int = 6) -> tuple[str, str] | None:
        """For a multiple-choice question with options naming a shot scale or a black screen
        (:func:`scale_options`, e.g. "what fills the screen in the last seconds"), the option the frames of the
        range asked about support (:func:`scale_choice`): each shot's middle frame inside the range is measured
        with the detector's person and face boxes (:func:`avi.backends.box_words.shot_scale`) and its share of
        black pixels. Returns ``(answer, letter)`` or None (option scores decide)."""
        kinds = scale_options(st.options) if st.kind == "choice" and st.options else None
        det = getattr(self.ctx.backends, "detector", None)
        if kinds is None or det is None:
            return None
        from avi.backends.box_words import shot_scale
        from avi.backends.detector import all_detections
        from avi.video.analysis import colour_names

        ranges = asked_ranges(self.ctx, st, looked=False)
        shots = self.ctx.shot_list() if hasattr(self.ctx, "shot_list") else None
        spans = shots.shots() if shots is not None else [(0.0, self.ctx.duration_s)]
        times = []
        for a, b in ranges:
            for s, e in spans:
                lo, hi = max(a, s), min(b, e)
                if hi > lo:
                    times.append((lo + hi) / 2)
        times = sorted(times)[:max_frames]
        try:
            frames = self.ctx.video.frames_at(times)
        except Exception:  # noqa: BLE001 - an undecodable range measures nothing; the option scores decide
            return None
        measured = [scale_kind(shot_scale(all_detections(det, f), f.image.shape[0]),
                               dict(colour_names(f.image, top=1, min_share=0.0)).get("black", 0.0)) for f in frames]
        got = scale_choice(kinds, measured)
        if got is None:
            return None
        letter, kind = got
        where = ", ".join(fmt_range(a, b) for a, b in ranges)
        trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                  observation_data={"frames_s": [round(f.t_s, 2) for f in frames], "kinds": measured},
                  notes=[f"shot option {letter} measured: {kind} in {measured.count(kind)} of {len(measured)} shot "
                         f"frames in {where}"])
        return f"{letter}. {st.options[letter]}", letter

    def _measured_text_choice(self, st: "State", trace: Trace) -> tuple[str, str] | None:
        """For a multiple-choice question whose options quote words shown or said, the one option that the OCR
        and transcript lines of the range asked about hold (:func:`avi.agent.option_evidence.text_choice`): the
        lines text_extract and transcript_read returned, the index's OCR of its clips and its transcript. The
        range is the question's time words, else the whole video. Returns ``(answer, letter)`` or None; None
        also for a count whose options are numbers (things on screen are counted, not read: "ROUND 2" on a
        title card is no answer to "how many triangles", syn-shapes-03)."""
        if st.kind != "choice" or not st.options:
            return None
        if asks_count(st.question) and all(option_count(v) is not None for v in st.options.values()):
            return None
        ranges, strings = self._range_lines(st)
        got = text_choice(st.options, strings, question_stem(st.question))
        if got is None:
            return None
        letter, line = got
        trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                  notes=[f"option {letter} is the only option whose words the video shows or says in "
                         f"{', '.join(fmt_range(a, b) for a, b in ranges)}: {line[:120]!r}"])
        return f"{letter}. {st.options[letter]}", letter

    def _range_lines(self, st: "State", speech: bool = True) -> tuple[list[list[float]], list[str]]:
        """The OCR lines (and, with ``speech``, transcript lines) of the range the question is about: those
        text_extract and transcript_read returned, the index's OCR of its clips and its transcript. The range
        is the question's time words, else the whole video. Returns ``(ranges, lines without repeats)``."""
        ranges = named_ranges(self.ctx)

        def inside(a: float, b: float) -> bool:
            return any(a <= e + 1.0 and b >= s - 1.0 for s, e in ranges)

        strings: list[str] = []
        for name, _, data in st.perceive_calls:
            if name == "text_extract":
                strings += [t.get("text", "") for t in data.get("texts", [])
                            if inside(float(t.get("first_s", 0)), float(t.get("last_s", 0)))]
            elif name == "transcript_read" and speech:
                strings += [g.get("text", "") for g in data.get("segments", [])
                            if inside(float(g.get("start_s", 0)), float(g.get("end_s", 0)))]
        for cap in self.ctx.index.captions:
            if inside(cap.start_s, cap.end_s):
                strings += [str(o.get("text", "")) for o in (getattr(cap, "data", None) or {}).get("ocr") or []]
        if speech:
            strings += [seg.text for seg in self.ctx.index.transcript if inside(seg.start_s, seg.end_s)]
        return ranges, list(dict.fromkeys(s for s in strings if s))

    def _measured_count_choice(self, st: "State", trace: Trace) -> tuple[str, str] | None:
        """For a multiple-choice "how many <things>" question whose options are numbers, the option with the count
        object_detect measured (at the moment the question names, :func:`count_at`; else the largest count seen in
        more than one frame, :func:`most_count`) of a label the question names. Returns ``(answer, letter)`` or
        None ("how many times" asks for events, not things on screen; no option, or two, with that number)."""
        q = st.question
        if st.kind != "choice" or not st.options or not asks_count(q) or re.search(r"\bhow\s+many\s+times\b", q, re.I):
            return None
        numbers = {k: option_count(v) for k, v in st.options.items()}
        if any(v is None for v in numbers.values()):
            return None
        stem = question_stem(q)
        times = clock_times_in(stem)
        if len(times) == 1:
            found = count_at(st.perceive_data(), times[0][1], stem)
            source = ""
            if found is None:  # nothing counted there by the agent: the index's counts of that moment
                found, source = count_at(self._index_counts(), times[0][1], stem), " in the index"
            got = (found[0], found[1], f"at {fmt_range(*found[2])}{source}") if found else None
        else:
            self._confirm_count_spike(st, trace, stem, wanted=set(numbers.values()))
            most = most_count(st.perceive_data(), stem)
            got = (most[0], most[1], "the largest count seen in more than one frame") if most else None
        if got is None or not label_named(got[0], stem):
            return None
        label, n, where = got
        hits = [k for k, v in numbers.items() if v == n]
        if len(hits) != 1:
            return None
        trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                  notes=[f"count option {hits[0]} measured: {label} {n} ({where})"])
        return f"{hits[0]}. {st.options[hits[0]]}", hits[0]

    def _confirm_count_spike(self, st: "State", trace: Trace, question: str, wanted: set[int] | None = None,
                             reach_s: float = 1.0) -> None:
        """Measure the frames next to a count seen in one frame only (:func:`count_spike`), so that the largest
        count is believed when its neighbours show it too and stays a spike when they do not: a host
        ``object_detect`` call on ``[t - reach_s, t + reach_s]`` for the label, added to the perceive calls
        and the trace. Nothing happens when there is no spike, or (with ``wanted``) when no option has its
        number."""
        spike = count_spike(st.perceive_data(), question)
        tool = getattr(self, "tools", {}).get("object_detect")
        if spike is None or tool is None or (wanted is not None and spike[1] not in wanted):
            return
        label, n, t = spike
        args = {"time_ranges": [[max(0.0, t - reach_s), min(self.ctx.duration_s, t + reach_s)]], "objects": [label]}
        obs = host_tool_call(trace, tool, self.ctx, args, iteration=st.iteration, phase=st.phase,
                             note=f"{label} {n} was seen in one frame only (at {t:.1f}s): its neighbours measured "
                                  f"before the largest count is read")
        if not obs.error:
            st.perceive_calls.append(("object_detect", args, {**obs.data, "evidence": obs.evidence}))

    def _absent_options(self, st: "State", trace: Trace, max_frames: int = 8, min_frames: int = 3) -> set[str]:
        """The options that name a thing the detector finds ("a cyclist in a helmet": a person; "a red car") and
        that it found in none of the frames of the ranges the question's time words name (at the index rate,
        at most ``max_frames``, at least ``min_frames``): what is shown "in the first second" is not a man in a
        suit when no person is in any of its frames. Options naming something written ("a taxi sign", "a
        caption") are ruled out when OCR (a host ``text_extract`` call on those ranges) reads no word of two or
        more letters or digits there. Options naming nothing measurable ("a view looking down onto a street")
        are never ruled out. Empty when the question names no range, or when every option would be ruled out
        (the measurement then says nothing about the options)."""
        det = getattr(self.ctx.backends, "detector", None)
        if st.kind != "choice" or not st.options or not self.ctx.focus_ranges or det is None:
            return set()
        written = {k for k, v in st.options.items() if _WRITTEN.search(v)}
        checkable = {}
        for k, v in st.options.items():
            label = re.sub(r"^(?:an?|the)\s+", "", v.strip().lower()).rstrip(".")
            try:
                if det.supports(label):
                    checkable[k] = label
            except Exception:  # noqa: BLE001 - a detector that cannot say rules nothing out
                continue
        if not checkable and not written:
            return set()
        ranges = named_ranges(self.ctx)
        try:
            frames = self.ctx.video.frames_at(sample_times(ranges, self.settings.fps, max_frames))
        except Exception:  # noqa: BLE001 - an undecodable range measures nothing
            return set()
        if len(frames) < min_frames:
            return set()
        # one detector run per kind of thing: a closed-set detector gives each box to one of the words naming its
        # class ("a cyclist" and "a man" are both COCO person), so words of one class are asked once
        kinds = {k: coco_classes_for(label) or (label,) for k, label in checkable.items()}
        asked = {kind: checkable[k] for k, kind in reversed(list(kinds.items()))}
        seen = {k: 0 for k in checkable}
        for f in frames:
            found = {kind for kind, label in asked.items() if det.detect(f, [label]).detections}
            for k in checkable:
                seen[k] += kinds[k] in found
        absent = {k for k, n in seen.items() if n == 0}
        why = [f"the detector found {' / '.join(checkable[k] for k in sorted(absent))} in none of {len(frames)} "
               f"frames"] if absent else []
        if written - absent:  # a sign or a caption is text: no legible word in the range rules it out
            obs = host_tool_call(trace, ALL_TOOLS["text_extract"], self.ctx, {"time_ranges": ranges},
                                 iteration=st.iteration, phase=st.phase,
                                 note="does any option naming something written show text in the named range?")
            words = [line.get("text", "") for line in (obs.data.get("lines") or [])
                     if len(re.findall(r"[A-Za-z0-9]", line.get("text", ""))) >= 2]
            if not obs.error and not words:
                absent |= written
                why.append(f"OCR read no word in {len(obs.frames_s)} frames for "
                           f"{' / '.join(st.options[k] for k in sorted(written))}")
        if not absent or len(absent) == len(st.options):
            return set()
        trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase, frames_s=[f.t_s for f in frames],
                  observation_data={"checked": checkable, "frames_with": seen, "written": sorted(written)},
                  notes=[HOST_STEP, f"option(s) {', '.join(sorted(absent))} ruled out in "
                                    f"{', '.join(fmt_range(a, b) for a, b in ranges)}: {'; '.join(why)}"])
        return absent
