"""Grounded answers for small orchestrators (issue 14): the answer taken from what the tools found.

The choice letter from option scores debiased over cyclic permutations; free text from the evidence strings;
intervals widened to the whole evidence run; "cannot tell" for what the profile cannot see. Answers the host
measures itself (counts, cuts, colours, shapes, black shots, motion) are in :mod:`avi.agent.measured_answers`."""

from __future__ import annotations

import json

from avi.agent.choice import calibrated_scores, choice_by_text, permutation_scores, question_stem
from avi.agent.grounding import (
    about_words,
    answers_nothing,
    asks_for_text,
    evidence_span,
    evidence_strings,
    grounded_in,
    is_yes_no,
    normalise,
    unseen_labels,
)
from avi.agent.measured_answers import named_ranges
from avi.agent.measured_looks import (
    asks_colour,
    asks_shape,
)
from avi.agent.parse import (
    find_answer,
    split_thought,
)
from avi.agent.readings import agreed_reading
from avi.agent.state import State
from avi.agent.trace import Trace
from avi.backends.llm import ContextOverflowError
from avi.tools import ALL_TOOLS
from avi.video.spans import merge_spans
from avi.video.timecode import fmt_range


class GroundedAnswers:
    """Part of :class:`avi.agent.loop.Agent` (see the module docstring); uses the agent's ``llm``, ``ctx``,
    ``prompts`` and ``settings``."""

    # ------------------------------------------------------------------ grounded answers (issue 14)

    def _debiased_choice(self, st: "State", trace: Trace) -> tuple[str, str] | None:
        """The multiple-choice letter without position bias (:mod:`avi.agent.choice`), or None to fall back
        to the structured final call. The trace records the option scores and the method."""
        mode = getattr(self.settings, "choice_scoring", "permutation")
        if mode == "off":
            return None
        history = st.history
        if history and history[-1]["role"] == "assistant" and find_answer(history[-1].get("content") or ""):
            history = history[:-1]  # the options are scored on the evidence, not on the letter just written
        messages = [{"role": "system", "content": self._system()}] + history
        if mode == "permutation":
            try:
                scores, calls = permutation_scores(self.llm, messages, self._schemas, self.prompts, st.question,
                                                   st.options, seed=self.settings.llm_seed)
            except ContextOverflowError:
                scores, calls = {}, []
            prior, prior_calls = {}, []
            if scores and getattr(self.settings, "choice_calibration", False):
                try:  # the same scores with no evidence: the system prompt and the question alone
                    prior, prior_calls = permutation_scores(self.llm, messages[:1], self._schemas, self.prompts,
                                                            st.question, st.options, seed=self.settings.llm_seed)
                except ContextOverflowError:
                    prior = {}
            final = calibrated_scores(scores, prior) if prior else scores
            absent = self._absent_options(st, trace) if scores else set()
            if scores:
                best = max((k for k in final if k not in absent), key=lambda k: (final[k], -ord(k)))
                calls_all = calls + prior_calls
                trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                          llm_seconds=round(sum(c["seconds"] for c in calls_all), 3),
                          prompt_tokens=sum(c["prompt_tokens"] for c in calls_all), completion_tokens=len(calls_all),
                          notes=[f"choice {best} by option scores averaged over {len(calls)} cyclic permutations"
                                 + (", divided by their scores without evidence" if prior else "") + ": "
                                 + ", ".join(f"{k} {v:.2f}" for k, v in final.items())
                                 + (f" (ruled out by the frames: {', '.join(sorted(absent))})" if absent else "")],
                          observation_data={"option_scores": final, "evidence_scores": scores,
                                            "prior_scores": prior, "permutations": calls,
                                            "prior_permutations": prior_calls})
                return best, "option-scores"
        try:
            letter, res = choice_by_text(self.llm, messages, self._schemas, self.prompts, st.question, st.options,
                                         st.answer or "", self._max_tokens(), seed=self.settings.llm_seed)
        except ContextOverflowError:
            return None
        if res is not None:
            trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase, content=res.content,
                      llm_seconds=round(res.seconds, 3), prompt_tokens=res.prompt_tokens,
                      completion_tokens=res.completion_tokens,
                      notes=[f"choice {letter} by the option text the model named" if letter
                             else "the option text could not be read; structured letter used"])
        return (letter, "option-text") if letter else None

    def _extractive_answer(self, st: "State", trace: Trace, answer: str) -> str:
        """A free-text answer about words (on-screen text, names, what was said) taken from the evidence
        strings when the model's answer gives nothing of its own (it denies, doubts or restates the question:
        :func:`~avi.agent.grounding.answers_nothing`) and holds none of them: one constrained call picks the
        string that answers, with the evidence's exact spelling (issue 14, answers that answer). A yes/no question
        ("does the commentator mention a red card?") keeps its answer: a quote is no yes or no."""
        strings = evidence_strings(st.perceive_data())
        if not strings or is_yes_no(st.question) or not asks_for_text(st.question) or asks_colour(st.question) \
                or asks_shape(st.question) \
                or grounded_in(answer, strings) or not answers_nothing(answer, st.question):
            return answer  # an answer of its own (it may rest on captions or speech the tools returned) is kept
        schema = {"type": "object", "properties": {"evidence": {"type": "string", "enum": strings + ["none"]}},
                  "required": ["evidence"], "additionalProperties": False}
        prompt = self.prompts.render("final_evidence", question=st.question, answer=answer,
                                     evidence="\n".join(f"- {x}" for x in strings))
        messages = [{"role": "system", "content": self._system()}] + st.history + [{"role": "user", "content": prompt}]
        try:
            res = self.llm.chat(messages, self._schemas, max_tokens=self._max_tokens(), seed=self.settings.llm_seed,
                                temperature=0.0, json_schema=schema)
            picked = json.loads(split_thought(res.content)[1].strip() or "null")["evidence"]
        except (ContextOverflowError, ValueError, TypeError, KeyError):
            return answer
        ok = picked in strings
        trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase, content=res.content,
                  llm_seconds=round(res.seconds, 3), prompt_tokens=res.prompt_tokens,
                  completion_tokens=res.completion_tokens,
                  notes=[f"answer {answer[:80]!r} holds no evidence string; "
                         + (f"taken from the evidence: {picked!r}" if ok else "no evidence string fits; kept")])
        return picked if ok else answer

    def _agreed_answer_reading(self, st: "State", trace: Trace, answer: str) -> str:
        """A free-text answer that quotes one OCR read, replaced by the read of that word the frames agree on
        (:func:`avi.agent.readings.agreed_reading`): every read of the range the question names (else the
        whole video) by text_extract and by the index's OCR of its clips. The answer is kept when it is no
        read, or its own read is the best supported."""
        ranges = named_ranges(self.ctx)

        def inside(t: float) -> bool:
            return any(s - 1.0 <= t <= e + 1.0 for s, e in ranges)

        reads: dict[tuple[str, float], float] = {}  # one per text and frame, whichever source read it
        rows = [line for name, _, data in st.perceive_calls if name == "text_extract" for line in data.get("lines", [])]
        rows += [o for cap in self.ctx.index.captions for o in (getattr(cap, "data", None) or {}).get("ocr") or []]
        for row in rows:
            t = float(row.get("t_s", -1.0))
            if inside(t) and str(row.get("text", "")).strip():
                key = (str(row["text"]).strip(), round(t, 1))
                reads[key] = max(reads.get(key, 0.0), float(row.get("score", 0.0)))
        got = agreed_reading(answer, [(text, score) for (text, _), score in reads.items()])
        if got is None:
            return answer
        trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                  notes=[f"answer {answer[:60]!r} is one read of a word the frames read as {got[0]!r} more often "
                         f"(support {got[1]} against {got[2]} over {len(reads)} reads in "
                         f"{', '.join(fmt_range(a, b) for a, b in ranges)})"])
        return got[0]

    def _event_interval(self, st: "State", trace: Trace, interval: list[float]) -> list[float]:
        """An interval answer widened (or narrowed) to the whole evidence run it points at: the perceive
        tools' evidence ranges that overlap it, chained across neighbouring clips (issue 14: intervals that
        are one 5 s clip). Evidence at the edge of what was looked at is followed into the next clips by
        running the same tool there (:meth:`_follow_event`)."""
        about = self._texts_about_question(st)
        wordy = asks_for_text(st.question) or about_words(st.question)
        if about:  # on-screen texts that share words with the question: the event is their time on screen
            runs = [[float(t["first_s"]), float(t["last_s"])] for t in about]
        else:  # text read elsewhere (texture, signs the question is not about) is no evidence of this event
            runs = [list(map(float, e)) for n, _, d in st.perceive_calls if n != "text_extract" or wordy
                    for e in d.get("evidence") or []]
        span = evidence_span(interval, runs)
        if span is None:
            return interval
        span = self._follow_event(st, trace, span, {normalise(t["text"]) for t in about}, texts_count=bool(about)
                                  or wordy)
        dur = self.ctx.duration_s
        out = [round(max(0.0, span[0]), 2), round(min(dur, span[1]), 2)]
        if out != interval:
            trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                      notes=[f"interval {fmt_range(*interval)} widened to the evidence run {fmt_range(*out)}"])
        return out

    @staticmethod
    def _texts_about_question(st: "State") -> list[dict]:
        """The text runs text_extract found (``{text, first_s, last_s}``) that share a word of four letters or
        more with the question (not its options)."""
        words = {w for w in normalise(question_stem(st.question)).split() if len(w) >= 4}
        return [t for n, _, d in st.perceive_calls if n == "text_extract" for t in d.get("texts", [])
                if words & set(normalise(t.get("text", "")).split())]

    def _follow_event(self, st: "State", trace: Trace, span: list[float], keys: set[str] | None = None,
                      max_steps: int = 6, texts_count: bool = True) -> list[float]:
        """Extend ``span`` past the edges of the frames looked at, one ``clip_seconds`` window at a time (at
        most ``max_steps`` per side), while the last evidence-giving perceive call (text_extract: the same
        text, ``keys`` when given; object_detect: the same labels) still finds its evidence next to the edge.
        ``texts_count=False`` (a question about neither words nor a text found) follows object_detect only."""
        followed = ("text_extract", "object_detect") if texts_count else ("object_detect",)
        last = next(((n, a, d) for n, a, d in reversed(st.perceive_calls)
                     if n in followed and d.get("evidence")), None)
        if last is None:
            return span
        name, args, data = last
        keys = keys or {normalise(t.get("text", "")) for t in data.get("texts", [])
                        if t.get("last_s", 0) >= span[0] - 1.0 and t.get("first_s", 0) <= span[1] + 1.0}
        step, dur, tool = float(self.settings.clip_seconds), self.ctx.duration_s, ALL_TOOLS[name]
        looked = merge_spans([list(x) for x in st.looked], gap_s=1.0)
        s, e = span
        for direction in (-1, 1):
            for _ in range(max_steps):
                edge = s if direction < 0 else e
                window = [max(0.0, edge - step), edge] if direction < 0 else [edge, min(dur, edge + step)]
                if window[1] - window[0] < 0.5 or self._looked_beyond(looked, edge, direction):
                    break  # the video ends, or frames beyond the edge were seen without the evidence
                arguments = {**args, "time_ranges": [window]}
                obs = tool.run(self.ctx, arguments)
                if obs.frames_s:
                    looked = merge_spans(looked + [[min(obs.frames_s), max(obs.frames_s)]], gap_s=1.0)
                texts = obs.data.get("texts")
                hits = [t for t in texts if normalise(t.get("text", "")) in keys] if texts is not None and keys \
                    else [{"first_s": r[0], "last_s": r[1]} for r in obs.evidence]
                near = [h for h in hits if (h["last_s"] >= edge - 1.0 if direction < 0 else h["first_s"] <= edge + 1.0)]
                trace.add(kind="tool_call", iteration=st.iteration, phase="review", tool=name, arguments=arguments,
                          observation=obs.text, observation_data=obs.data, error=obs.error,
                          tool_seconds=obs.data.get("seconds", 0.0), frames_s=obs.frames_s,
                          notes=["host: following the event past the frames looked at (interval answer)"])
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

    @staticmethod
    def _looked_beyond(looked: list[list[float]], edge: float, direction: int) -> bool:
        """Whether frames were already looked at just beyond ``edge`` (the evidence truly ends there)."""
        probe = edge + direction * 1.0
        return any(a <= probe <= b for a, b in looked)

    def _cannot_tell(self, st: "State", trace: Trace, choice: str | None) -> bool:
        """Whether the question asks about something this profile's tools said they cannot see: object_detect
        reported no class for a label the question names (:func:`~avi.agent.grounding.unseen_labels`: the
        detector's own vocabulary, from the tool results), and the question does not ask for words shown or said
        (OCR and speech measure those). The answer then says so, keeping the model's answer as a marked guess (a
        choice letter stays, as a guess)."""
        det = self.ctx.backends.detector
        analyzer = getattr(self.ctx.backends, "frame_analyzer", None)
        words = unseen_labels(st.question, st.unsupported, getattr(analyzer, "name", ""))
        if not words or about_words(st.question):
            return False  # nothing unseen named, or the question asks for words: OCR and speech measure those
        if choice and st.options:
            guess = f"; the option best supported is {choice}. {st.options.get(choice, '')} (a guess)"
        else:
            guess = f"; best guess: {st.answer} (not measured)" if st.answer else ""
        st.answer = (f"Cannot tell on this profile: its detector ({det.name}) has no class for "
                     f"{', '.join(words)}{guess}")
        trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                  notes=[f"cannot tell: object_detect has no class for {', '.join(words)}, which the question "
                         f"names, and no text or speech evidence answers it"])
        return True
