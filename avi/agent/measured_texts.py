"""Answers measured from the words the video shows and says (issue 14): a yes/no question about a quoted line, and
an interval about a word the question quotes. Part of :class:`avi.agent.loop.Agent`; uses the agent's ``ctx``,
``settings`` and ``tools``."""

from __future__ import annotations

import re

from avi.agent.choice import question_stem
from avi.agent.grounding import is_yes_no
from avi.agent.measured import about_shot
from avi.agent.measured_answers import named_ranges
from avi.agent.option_evidence import named_text, quoted_in, read_matches, text_runs
from avi.agent.state import _State
from avi.agent.trace import Trace, host_tool_call
from avi.video.timecode import fmt_range


class MeasuredTexts:
    """Part of :class:`avi.agent.loop.Agent` (module docstring)."""

    def _quoted_yes_no(self, st: "_State", trace: Trace, answer: str) -> str:
        """For a yes/no question about a quoted line ("Is the line 'About 100 metres tall' on screen in the first
        minute?"), "Yes" when a read of the range the question names holds the quote
        (:func:`~avi.agent.option_evidence.quoted_in`): the lines text_extract read and the index's OCR reads
        whose frame lies in the range, and the transcript lines inside it. Any other answer is kept, a quote not
        found included."""
        if not is_yes_no(st.question) or re.match(r"[\s*]*yes\b", answer or "", re.I):
            return answer
        ranges = named_ranges(self.ctx)

        def inside(a: float, b: float | None = None) -> bool:
            return any(s <= a and (b if b is not None else a) <= e for s, e in ranges)

        shown = [text for t, text in self._text_reads(st) if inside(t)]
        said = [seg.text for seg in self.ctx.index.transcript if inside(seg.start_s, seg.end_s)]
        got = quoted_in(st.question, list(dict.fromkeys(shown)), said)
        if got is None:
            return answer
        trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                  notes=[f"the quote {got[0]!r} is in the reads of {', '.join(fmt_range(a, b) for a, b in ranges)}: "
                         f"{got[1][:100]!r}; answer yes (the model wrote {(answer or '')[:60]!r})"])
        return "Yes"

    def _text_reads(self, st: "_State") -> list[tuple[float, str]]:
        """``(t_s, text)`` of every OCR read: the lines text_extract returned and the index's OCR of its clips."""
        reads = [(float(line.get("t_s", -1.0)), str(line.get("text", ""))) for name, _, data in st.perceive_calls
                 if name == "text_extract" for line in data.get("lines", [])]
        reads += [(float(o.get("t_s", -1.0)), str(o.get("text", ""))) for cap in self.ctx.index.captions
                  for o in (getattr(cap, "data", None) or {}).get("ocr") or []]
        return [(t, text) for t, text in reads if t >= 0.0 and text.strip()]

    def _text_interval(self, st: "_State", trace: Trace, interval: list[float] | None,
                       gap_s: float = 3.0, reach_s: float = 1.0, max_calls: int = 8) -> list[float] | None:
        """For "during which time span is the sign with the word TAXI visible", where the OCR reads the words
        the question quotes (:func:`~avi.agent.option_evidence.named_text`, :func:`read_matches`), when the
        model's interval holds no such read (real-bikes-08: the model took the shot where OCR read "TAA"; "AXI"
        was read at 2.5 s). The run of reads with the most of them (neighbours at most ``gap_s`` apart) is
        followed by host ``text_extract`` calls on the run widened by ``reach_s`` on each side, again while the
        reads reach further (at most ``max_calls``); the span is the first to the last read, half a frame step
        wider on each side, kept inside the shot that holds the run's middle. None when the question quotes no
        text, no read holds it, the model's interval already holds one, or the question asks when a shot is on
        screen (its answer is whole shots)."""
        wanted = named_text(question_stem(st.question))
        if not wanted or about_shot(st.question):
            return None
        hits = sorted({t for t, text in self._text_reads(st) if read_matches(wanted, text)})
        if not hits or (interval and any(interval[0] - 0.5 <= t <= interval[1] + 0.5 for t in hits)):
            return None
        a, b = max(text_runs(hits, gap_s), key=lambda r: (sum(r[0] <= t <= r[1] for t in hits), r[1] - r[0]))
        first = (a, b)
        tool = getattr(self, "tools", {}).get("text_extract")
        step = 1.0 / max(self.settings.fps, 0.1)
        for k in range(max_calls if tool is not None else 0):
            args = {"time_ranges": [[round(max(0.0, a - reach_s), 2), round(min(self.ctx.duration_s, b + reach_s), 2)]]}
            obs = host_tool_call(trace, tool, self.ctx, args, iteration=st.iteration, phase=st.phase,
                                 note=f"the text the question names ({' '.join(wanted)}) was read at "
                                      f"{fmt_range(*first)}, outside the model's interval: its edges followed"
                                      + (f" (call {k + 1})" if k else ""))
            if obs.error:
                break
            st.perceive_calls.append(("text_extract", args, {**obs.data, "evidence": obs.evidence}))
            times = sorted(set(obs.frames_s or []))
            if len(times) > 1:
                step = min(step, min(y - x for x, y in zip(times, times[1:])))
            near = sorted(float(line.get("t_s", -1.0)) for line in obs.data.get("lines", [])
                          if read_matches(wanted, str(line.get("text", ""))))
            if not near or (near[0] >= a and near[-1] <= b):
                break  # the reads reach no further
            a, b = min(a, near[0]), max(b, near[-1])
        span = [max(0.0, a - step / 2), min(self.ctx.duration_s, b + step / 2)]
        shots = self.ctx.shot_list() if hasattr(self.ctx, "shot_list") else None
        if shots is not None:
            mid = (a + b) / 2
            for s0, s1 in shots.shots():
                if s0 <= mid <= s1:
                    span = [max(span[0], s0), min(span[1], s1)]
                    break
        span = [round(span[0], 2), round(span[1], 2)]
        trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                  notes=[f"the text the question names ({' '.join(wanted)}) is read in {fmt_range(*span)} (the "
                         f"model's interval {fmt_range(*interval) if interval else 'none'} holds no read of it)"])
        return span
