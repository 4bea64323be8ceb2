"""Answers measured from the words the video shows and says (issue 14): a yes/no question about a quoted line.
Part of :class:`avi.agent.loop.Agent`; uses the agent's ``ctx``."""

from __future__ import annotations

import re

from avi.agent.grounding import is_yes_no
from avi.agent.measured_answers import named_ranges
from avi.agent.option_evidence import quoted_in
from avi.agent.state import State
from avi.agent.trace import Trace
from avi.video.timecode import fmt_range


class MeasuredTexts:
    """Part of :class:`avi.agent.loop.Agent` (module docstring)."""

    def _quoted_yes_no(self, st: "State", trace: Trace, answer: str) -> str:
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

    def _text_reads(self, st: "State") -> list[tuple[float, str]]:
        """``(t_s, text)`` of every OCR read: the lines text_extract returned and the index's OCR of its clips."""
        reads = [(float(line.get("t_s", -1.0)), str(line.get("text", ""))) for name, _, data in st.perceive_calls
                 if name == "text_extract" for line in data.get("lines", [])]
        reads += [(float(o.get("t_s", -1.0)), str(o.get("text", ""))) for cap in self.ctx.index.captions
                  for o in (getattr(cap, "data", None) or {}).get("ocr") or []]
        return [(t, text) for t, text in reads if t >= 0.0 and text.strip()]
