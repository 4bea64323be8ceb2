"""The Retrieve -> Perceive -> Review agent (AVI §3.3-3.4, Algorithm 1).

State: the message history, the current phase and the evidence gathered.
Each iteration asks the orchestrator for one decision in the current phase,
then

* runs the tool it called (retrieve tools in Retrieve, perceive tools in
  Perceive); a perceive tool called from Retrieve or Review is taken as the
  implied switch to Perceive and run;
* or follows its ``[STAGE_SWITCH: …]`` directive; a reply with neither moves
  Retrieve to Perceive and Perceive to Review, as in Algorithm 1;
* or, in Review, accepts its ``**Answer:**``, or goes back to Perceive.

Leaving Perceive needs at least one successful perceive tool call in that
round (visual confirmation, AVI Fig. 11). A malformed reply is sent back with
what was wrong (up to ``max_retries`` times per iteration). After
``max_iterations`` the agent is asked once more, without tools, for a forced
answer (Algorithm 1, line 29).

Where we differ from AVI's Fig. 5 prompt layout, and why: AVI swaps the stage
instruction inside the system prompt and offers only the phase's tools. Here
the system prompt and the tool list stay the same for the whole run and each
stage's instruction arrives as a message when the stage begins; the phase
restriction (AVI Eq. 8) is enforced by the host, which refuses a tool of
another phase with a message naming the allowed ones. The conversation then
only grows at its end, so llama.cpp and vLLM reuse the KV cache of the whole
prefix: on a 2-core CPU prefill runs at ~70 tokens/s, and re-reading a changed
system prompt on every phase switch cost 10-20 s per switch.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass, field

from avi.agent.choice import choice_by_text, permutation_scores, question_stem
from avi.agent.grounding import (
    Places,
    about_shot,
    about_speech,
    about_words,
    answers_nothing,
    asks_colour,
    asks_count,
    asks_for_text,
    count_at,
    cut_answer,
    cut_question,
    evidence_span,
    evidence_strings,
    grounded_in,
    is_yes_no,
    measured_colour,
    names_colour,
    normalise,
    snap_to_shots,
    unmeasurable,
    usual_count,
)
from avi.agent.parse import (
    Reply,
    answer_type,
    extract_choice,
    extract_choices,
    extract_interval,
    extract_order,
    find_answer,
    parse_options,
    parse_reply,
    split_thought,
)
from avi.agent.prompts import PromptLibrary
from avi.agent.trace import Trace
from avi.backends.llm import ChatClient, ContextOverflowError
from avi.config import Settings
from avi.tools import ALL_TOOLS, PHASES, Tool, ToolContext, tools_for
from avi.video.spans import coverage_iou, merge_spans
from avi.video.timecode import clock_times_in, fmt_range, mentions_time, question_ranges


@dataclass
class AgentResult:
    """What the agent found.

    Attributes:
        answer: the final answer text (None if the model never gave one).
        choice: option letter for multiple-choice questions, else None.
        interval: ``[start_s, end_s]`` when the answer is a time span, else None.
        evidence: merged time ranges where perceive tools found the evidence.
        trace: the full :class:`Trace`.
        choices: option letters of a multi-select answer, sorted, else None.
        order: the sequence of an ordering answer (letters, or items without options), else None.
        answer_type: choice, multi, interval, order or text.
        note: why ``answer`` is None although the model answered (unparseable for the type).
        cannot_tell: the profile's tools cannot measure what the question asks (the answer says so; a
            multiple-choice letter is then the best-supported option, a guess).
        choice_method: how a multiple-choice letter was taken (``option-scores``, ``option-text``,
            ``structured``, ``letter``), else None.
    """

    answer: str | None
    choice: str | None
    interval: list[float] | None
    evidence: list[list[float]]
    trace: Trace = field(repr=False)
    choices: list[str] | None = None
    order: list[str] | None = None
    answer_type: str = "text"
    note: str | None = None
    cannot_tell: bool = False
    choice_method: str | None = None


class Agent:
    """Runs one question against one video's index.

    Args:
        llm: the orchestrator client.
        ctx: host context given to the tools.
        prompts: the prompt files.
        settings: iteration limits, token budget, observation size.
    """

    def __init__(self, llm: ChatClient, ctx: ToolContext, prompts: PromptLibrary, settings: Settings):
        self.llm = llm
        self.ctx = ctx
        self.prompts = prompts
        self.settings = settings
        self._schemas = [t.openai_schema() for t in ALL_TOOLS.values()]

    # ------------------------------------------------------------------ prompts

    def _system(self) -> str:
        """The system prompt: the same for every run and video, so the server's KV cache of
        the conversation prefix stays valid across phases and questions (module docstring)."""
        lines = []
        for phase in PHASES:
            names = ", ".join(t.name for t in tools_for(phase)) or "none (answer, or go back to PERCEIVE)"
            lines.append(f"- {phase.upper()} stage: {names}")
        return self.prompts.render("system", core_protocol=self.prompts.text("core_protocol"),
                                   tool_descriptions="\n".join(lines))

    def _max_tokens(self) -> int:
        """Completion budget per step: larger when a configured endpoint thinks before it answers."""
        s = self.settings
        thinking = bool(getattr(s, "llm_base_url", None)) and getattr(s, "llm_enable_thinking", False)
        return int(s.llm_thinking_max_tokens) if thinking else int(s.llm_max_tokens)

    def _call_llm(self, history: list[dict], extra: list[dict] | None = None, require: list[str] | None = None,
                  temperature: float | None = None):
        messages = [{"role": "system", "content": self._system()}] + history + (extra or [])
        kwargs = dict(max_tokens=self._max_tokens(), seed=self.settings.llm_seed, require_tool=require,
                      temperature=self.settings.llm_temperature if temperature is None else temperature)
        tools = self._schemas  # also for the forced answer: an unchanged prefix keeps the KV cache
        try:
            return self.llm.chat(messages, tools, **kwargs)
        except ContextOverflowError:
            _compact(history)
            messages = [{"role": "system", "content": self._system()}] + history + (extra or [])
            return self.llm.chat(messages, tools, **kwargs)

    # ------------------------------------------------------------------ run

    def run(self, question: str, trace: Trace | None = None) -> AgentResult:
        """Answer ``question``; never raises for model or tool misbehaviour.

        Raises:
            LLMUnavailableError: the orchestrator server is unreachable.
        """
        t_start = time.perf_counter()
        trace = trace or Trace(question=question)
        st = _State(question=question, options=parse_options(question))
        st.options_text = ("Options: " + "; ".join(f"{k}. {v}" for k, v in st.options.items())) \
            if st.options else ""
        times = clock_times_in(question)
        time_hint = ("Times in the question, in seconds: " + ", ".join(f"{c} = {v:g}s" for c, v in times) + ".") \
            if times else ""
        named = question_ranges(question, self.ctx.duration_s)
        st.places.add_named(named)
        self.ctx.focus_ranges = [list(span) for _, span in named]
        if named:
            time_hint = (time_hint + "\n" if time_hint else "") + "The question's time words point to: " + \
                "; ".join(f'"{p}" = {fmt_range(*span)}' for p, span in named) + ". Look there first."
        configured = getattr(self.settings, "answer_type", "auto")
        st.kind = answer_type(question, st.options) if configured == "auto" else configured
        st.answer_format = self.prompts.text(f"format_{st.kind}")
        if st.kind == "text" and is_yes_no(question):
            st.answer_format = self.prompts.text("format_yesno")
        transcript = self.ctx.index.transcript
        speech = self.prompts.render("speech_yes", segments=len(transcript),
                                     source=", ".join(sorted({s.source for s in transcript}))) \
            if transcript else self.prompts.text("speech_no")
        st.history.append({"role": "user", "content": self.prompts.render(
            "question", question=question, options=st.options_text, time_hint=time_hint,
            video_length=f"{self.ctx.duration_s:.1f}", speech=speech, answer_format=st.answer_format)
            + "\n\n" + self._stage_message(st, "retrieve")})

        while st.iteration < self.settings.max_iterations and st.answer is None:
            st.iteration += 1
            res, reply, common = self._decide(st, trace)
            if reply is None:
                # No usable reply after the retries: Retrieve moves on to Perceive (the agent
                # can still look at frames); Perceive and Review spend the iteration.
                if st.phase == "retrieve":
                    notes: list[str] = ["no usable reply after retries"]
                    self._enter(st, "perceive", notes)
                    trace.add(kind="stage_switch", switch_to="perceive", notes=notes, iteration=st.iteration,
                              phase="retrieve")
                continue
            if reply.call is not None:
                self._run_tool(st, trace, res, reply, common)
                continue
            # No tool call: a directive, an answer, or neither.
            st.history.append({"role": "assistant", "content": res.content or ""})
            if st.phase == "review" and reply.answer and reply.switch != "perceive":
                st.answer = reply.answer
                trace.add(kind="answer", answer=st.answer, **common)
                break
            if reply.answer:
                st.candidate = reply.answer
            # Algorithm 1: no tool call moves Retrieve -> Perceive and Perceive -> Review.
            target = {"retrieve": "perceive", "perceive": "review",
                      "review": "perceive" if reply.switch == "perceive" else None}[st.phase]
            if target is None:
                st.history.append({"role": "user", "content": self.prompts.text("review_nudge")})
                trace.add(kind="nudge", **common)
                continue
            notes = list(reply.notes)
            if reply.answer and st.phase != "review":
                notes.append(f"answer given in {st.phase} kept as a candidate; review decides")
            self._enter(st, target, notes)
            trace.add(kind="stage_switch", switch_to=target, notes=notes, **common)

        forced = st.answer is None
        if forced:
            st.answer = self._forced_answer(trace, st)
        raw = st.answer
        choice, choices, interval, order, note = self._typed(st, raw)
        method = "letter" if choice else None
        grounded = getattr(self.settings, "grounded_answers", True)
        measured = self._measured_cuts(st, trace) if grounded else None
        picked = self._debiased_choice(st, trace) if st.kind == "choice" and st.options and \
            not (measured and measured[1]) else None
        if measured is not None:  # the cut list answers it: the letter (or text) it gives is delivered
            st.answer, note = measured[0], None
            if measured[1]:
                choice, method = measured[1], "measured"
        elif picked is not None:  # the option scores (or the option's text) decide, not the letter written
            (choice, method), note = picked, None
            if st.answer is None or extract_choice(st.answer, st.options) != choice:
                st.answer = f"{choice}. {st.options[choice]}"
        else:
            final = self._structured_answer(st, trace) if raw is not None else None
            if final is not None:  # the structured final call is the delivered answer; regex read the fallback
                choice, choices, interval, order, note = (final.get("choice"), final.get("choices"),
                                                          final.get("interval", interval), final.get("order"), None)
                method = "structured" if choice else method
        if note:
            st.answer = None  # unparseable for its type: reported as such, never a guess
        cannot = False
        if grounded and measured is None:
            if st.kind == "text" and st.answer is not None:
                st.answer = self._extractive_answer(st, trace, st.answer)
            if st.kind in ("number", "text") and st.answer is not None:  # "how many" reads as text too
                st.answer = self._count_at_moment(st, trace, st.answer)
            if st.kind == "text" and st.answer is not None:
                st.answer = self._colour_answer(st, trace, st.answer)
            if st.kind == "interval" and interval:
                widened = self._event_interval(st, trace, interval)
                if widened != interval:
                    st.answer = f"[{widened[0]:.1f}s, {widened[1]:.1f}s]"  # the text says what the field says
                interval = widened
                snapped = self._shot_edges(st, trace, interval)
                if snapped != interval:
                    st.answer = f"[{snapped[0]:.1f}s, {snapped[1]:.1f}s]"
                interval = snapped
            cannot = self._cannot_tell(st, trace, choice)
        ev = merge_spans([list(map(float, e)) for e in st.evidence]) or merge_spans(st.looked)
        trace.answer, trace.choice, trace.interval, trace.evidence = st.answer, choice, interval, ev
        trace.choices, trace.order, trace.answer_type, trace.raw_answer, trace.answer_note = \
            choices, order, st.kind, raw, note
        trace.cannot_tell, trace.choice_method = cannot, method if st.kind == "choice" else None
        trace.iterations, trace.forced = st.iteration, forced
        trace.seconds["agent"] = round(time.perf_counter() - t_start, 3)
        return AgentResult(st.answer, choice, interval, ev, trace, choices, order, st.kind, note, cannot,
                           trace.choice_method)

    # ------------------------------------------------------------------ grounded answers (issue 14)

    def _debiased_choice(self, st: "_State", trace: Trace) -> tuple[str, str] | None:
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
            if scores:
                best = max(scores, key=lambda k: (scores[k], -ord(k)))
                trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                          llm_seconds=round(sum(c["seconds"] for c in calls), 3),
                          prompt_tokens=sum(c["prompt_tokens"] for c in calls), completion_tokens=len(calls),
                          notes=[f"choice {best} by option scores averaged over {len(calls)} cyclic permutations: "
                                 + ", ".join(f"{k} {v:.2f}" for k, v in scores.items())],
                          observation_data={"option_scores": scores, "permutations": calls})
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

    def _extractive_answer(self, st: "_State", trace: Trace, answer: str) -> str:
        """A free-text answer about words (on-screen text, names, what was said) taken from the evidence
        strings when the model's answer gives nothing of its own (it denies, doubts or restates the question:
        :func:`~avi.agent.grounding.answers_nothing`) and holds none of them: one constrained call picks the
        string that answers, with the evidence's exact spelling (issue 14, answers that answer)."""
        strings = evidence_strings(st.perceive_data())
        if not strings or not asks_for_text(st.question) or grounded_in(answer, strings) \
                or not answers_nothing(answer, st.question):
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

    def _colour_answer(self, st: "_State", trace: Trace, answer: str) -> str:
        """For "what colour is the <thing>", an answer that names no colour becomes the dominant colour
        object_detect measured on the thing's best box (:func:`measured_colour`); an answer that names a
        colour, or a thing never measured, is kept."""
        if not asks_colour(st.question) or names_colour(answer):
            return answer
        found = measured_colour(st.perceive_data(), st.question)
        if found is None:
            return answer
        label, colour, t_s = found
        trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                  notes=[f"answer {answer[:60]!r} names no colour; the measured colour of the {label} at {t_s:.1f}s "
                         f"is {colour}"])
        return colour

    def _count_at_moment(self, st: "_State", trace: Trace, answer: str) -> str:
        """For "how many ... at 0:44", the count object_detect measured at that moment (:func:`count_at`), not
        the largest count of the frames looked at; with no moment named, a count that was never measured becomes
        the usual measured count (:func:`usual_count`). The answer is kept when nothing was measured."""
        if not asks_count(st.question):
            return answer
        times = clock_times_in(st.question)
        written = re.fullmatch(r"[\s*]*(\d+)[\s*.]*", answer or "")  # a bare number, maybe in bold
        if len(times) != 1:  # no single moment named: keep any count that was measured, else the usual one
            usual = usual_count(st.perceive_data(), st.question)
            if usual is None or written is None or int(written.group(1)) in usual[2]:
                return answer
            trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                      notes=[f"count {written.group(1)} was never measured; the usual count of {usual[0]} was "
                             f"{usual[1]} (measured: {', '.join(map(str, sorted(usual[2])))})"])
            return str(usual[1])
        found = count_at(st.perceive_data(), times[0][1], st.question)
        if found is None:
            return answer
        label, n, (a, b) = found
        if written is not None and int(written.group(1)) == n:
            return answer
        where = f"at {a:.1f}s" if a == b else f"at {a:.1f}-{b:.1f}s"
        trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                  notes=[f"count read at the moment the question names: {label} {n} {where} (the model wrote "
                         f"{answer[:60]!r})"])
        return str(n)

    def _measured_cuts(self, st: "_State", trace: Trace) -> tuple[str, str | None] | None:
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
        ranges = merge_spans([list(r) for r in self.ctx.focus_ranges]) or [[0.0, self.ctx.duration_s]]
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

    def _shot_edges(self, st: "_State", trace: Trace, interval: list[float]) -> list[float]:
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

    def _event_interval(self, st: "_State", trace: Trace, interval: list[float]) -> list[float]:
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
    def _texts_about_question(st: "_State") -> list[dict]:
        """The text runs text_extract found (``{text, first_s, last_s}``) that share a word of four letters or
        more with the question (not its options)."""
        words = {w for w in normalise(question_stem(st.question)).split() if len(w) >= 4}
        return [t for n, _, d in st.perceive_calls if n == "text_extract" for t in d.get("texts", [])
                if words & set(normalise(t.get("text", "")).split())]

    def _follow_event(self, st: "_State", trace: Trace, span: list[float], keys: set[str] | None = None,
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

    def _cannot_tell(self, st: "_State", trace: Trace, choice: str | None) -> bool:
        """Whether the question asks about something this profile's perceive tools cannot measure (and not about
        words shown or said); the answer then says so, keeping the model's answer as a marked guess (a choice
        letter stays, as a guess)."""
        det = self.ctx.backends.detector
        analyzer = getattr(self.ctx.backends, "frame_analyzer", None)
        words = unmeasurable(st.question, det, getattr(analyzer, "name", ""))
        if not words or about_words(st.question):
            return False  # nothing unseen named, or the question asks for words: OCR and speech measure those
        if choice and st.options:
            guess = f"; the option best supported is {choice}. {st.options.get(choice, '')} (a guess)"
        else:
            guess = f"; best guess: {st.answer} (not measured)" if st.answer else ""
        st.answer = (f"Cannot tell on this profile: its tools ({det.name}; per-frame colours and motion) do not "
                     f"see {', '.join(words)}{guess}")
        trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                  notes=[f"cannot tell: the question asks about {', '.join(words)}, which this profile's tools "
                         f"cannot measure, and no text or speech evidence answers it"])
        return True

    def _answer_schema(self, st: "_State") -> dict | None:
        """JSON schema of the structured final answer for the question's type (None for free text)."""
        letters = sorted(st.options) or list("ABCDEFGH")
        item = {"type": "string", "enum": letters}
        props = {
            "choice": {"choice": item},
            "multi": {"choices": {"type": "array", "items": item, "minItems": 1, "maxItems": len(letters)}},
            "interval": {"start_s": {"type": "number"}, "end_s": {"type": "number"}},
            "order": {"order": {"type": "array", "minItems": 2, "maxItems": 10,
                                "items": item if st.options else {"type": "string", "maxLength": 80}}},
        }.get(st.kind)
        if props is None:
            return None
        return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}

    def _structured_answer(self, st: "_State", trace: Trace) -> dict | None:
        """The final answer through one constrained call (issue 5: a structured final call, regex only
        as the fallback): a JSON object valid against :meth:`_answer_schema`, decoded under that schema
        after the model's own answer. Only for typed answers (choice, multi, interval, order); free text
        is the answer itself.

        Returns:
            ``{"choice"}``, ``{"choices"}``, ``{"interval"}`` or ``{"order"}``, or None when the setting is
            off, the type is text, or the reply is unusable (the trace says why).
        """
        schema = self._answer_schema(st)
        if schema is None or not getattr(self.settings, "structured_answer", True):
            return None
        prompt = self.prompts.render("final_answer", question=st.question, options=st.options_text,
                                     answer=st.answer)
        messages = [{"role": "system", "content": self._system()}] + st.history + [{"role": "user", "content": prompt}]
        try:
            res = self.llm.chat(messages, self._schemas, max_tokens=self._max_tokens(), seed=self.settings.llm_seed,
                                temperature=0.0, json_schema=schema)
        except ContextOverflowError:
            trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase,
                      notes=["structured final answer skipped: context full; regex read used"])
            return None
        value, problem = None, None
        try:
            data = json.loads(split_thought(res.content)[1].strip() or "null")
            letters = set(st.options) or set("ABCDEFGH")
            if st.kind == "choice" and data.get("choice") in letters:
                value = {"choice": data["choice"]}
            elif st.kind == "multi" and data.get("choices") and set(data["choices"]) <= letters:
                value = {"choices": sorted(set(data["choices"]))}
            elif st.kind == "interval":
                a, b = sorted((float(data["start_s"]), float(data["end_s"])))
                dur = self.ctx.duration_s
                value = {"interval": [max(0.0, min(a, dur)), max(0.0, min(b, dur))]}
            elif st.kind == "order" and isinstance(data.get("order"), list) and len(data["order"]) >= 2:
                value = {"order": [str(x) for x in data["order"]]}
            if value is None:
                problem = f"reply does not fit the {st.kind} format"
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            problem = f"reply is not the JSON asked for ({type(exc).__name__})"
        trace.add(kind="final_answer", iteration=st.iteration, phase=st.phase, content=res.content,
                  llm_seconds=round(res.seconds, 3), prompt_tokens=res.prompt_tokens,
                  completion_tokens=res.completion_tokens,
                  notes=[f"structured final answer {value}" if value else
                         f"structured final answer unusable: {problem}; regex read used"])
        return value

    def _typed(self, st: "_State", answer: str | None):
        """The answer read for its type: ``(choice, choices, interval, order, note)``.

        ``note`` is set when a choice / multi / interval / order answer cannot be read as such
        (the caller then reports no answer rather than guess; issue 5, answer types).
        """
        options = st.options or ({c: "" for c in "ABCDEFGH"} if st.kind in ("choice", "multi") else {})
        choice = extract_choice(answer, options) if st.kind not in ("multi", "order") else None
        interval = extract_interval(answer)
        choices = extract_choices(answer, options) if st.kind == "multi" else None
        order = extract_order(answer, st.options) if st.kind == "order" else None
        value = {"choice": choice, "multi": choices, "interval": interval, "order": order}.get(st.kind, answer)
        note = None
        if answer is not None and value is None:
            note = f"unparseable {st.kind} answer {answer[:200]!r}: reported as no answer"
        return choice, choices, interval, order, note

    # ------------------------------------------------------------------ steps

    def _enter(self, st: "_State", new_phase: str, step_notes: list[str] | None = None) -> None:
        """Switch phase and send the new stage's instruction."""
        if new_phase == st.phase:
            return
        st.phase = new_phase
        if new_phase == "perceive":
            st.perceived = 0
            st.confirmed = 0
        st.history.append({"role": "user", "content": self._stage_message(st, new_phase)})
        if step_notes is not None:
            step_notes.append(f"entered {new_phase}")

    def _stage_message(self, st: "_State", phase: str) -> str:
        """The instruction that opens a stage. Review restates the question, the answer format and
        the evidence found so far right where the decision is made: a small orchestrator reads
        the last message far more reliably than a tool result ten messages up."""
        evidence = "\n".join(f"- {e}" for e in st.evidence_notes[-6:]) or "- none yet"
        question = st.question + (f"\n{st.options_text}" if st.options_text else "")
        speech = bool(self.ctx.index.transcript)  # speech tools are only mentioned when there is speech
        graph = self._has_entity_graph()  # graph_retrieve only when the graph has extracted entities
        places = st.places.describe()
        places = ("Where to look first (the question's time words, then the best search hits):\n" + places) \
            if places else "No search has pointed anywhere yet: choose ranges that the question or the search names."
        return self.prompts.render(f"stage_{phase}", question=question, answer_format=st.answer_format,
                                   evidence=evidence, places=places,
                                   detector_vocabulary=self.ctx.backends.detector.vocabulary,
                                   speech_retrieve=self.prompts.text("speech_retrieve") if speech else "",
                                   speech_perceive="  " + self.prompts.text("speech_perceive") if speech else "",
                                   graph_retrieve=self.prompts.text("graph_retrieve_hint") if graph else "")

    def _required(self, st: "_State") -> list[str] | None:
        """Tools one of which the next reply must call, or None when the model may choose.

        Perceive must look at frames before it ends (AVI Fig. 11), and Retrieve must search
        before it ends unless the question names a time: in those states the only valid
        action is such a call, so it is decoded under constraint straight away.
        """
        if st.phase == "perceive" and not st.perceived:
            if about_speech(st.question) and "transcript_read" in self._allowed(st) \
                    and not any(n == "transcript_read" for n, _, _ in st.perceive_calls):
                return ["transcript_read"]  # a question about what was said: read the transcript first
            return self._allowed(st)
        if st.phase == "retrieve" and not st.retrieved and not st.names_time():
            return self._search_tools()
        return None

    def _usable(self, phase: str) -> list[str]:
        """Names of the phase's tools that can work on this video (no speech tools without a transcript)."""
        speech = bool(self.ctx.index.transcript)
        graph = self._has_entity_graph()
        return [t.name for t in tools_for(phase) if (speech or not t.name.startswith("transcript_"))
                and (graph or t.name != "graph_retrieve")]

    def _allowed(self, st: "_State") -> list[str]:
        """The usable tools of the current phase that may be called now.

        In Perceive, frame_analysis is a last resort (AVI §3.3.2, Fig. 11): it is offered only after
        object_detect, text_extract, boundary_detect or transcript_read worked in this Perceive
        stage (setting ``frame_analysis_last``).
        """
        names = self._usable(st.phase)
        if st.phase == "perceive" and self._frame_analysis_blocked(st):
            names = [n for n in names if n != "frame_analysis"]
        return names

    def _frame_analysis_blocked(self, st: "_State") -> bool:
        """Whether frame_analysis must wait for a confirming perceive tool (AVI Fig. 11)."""
        return bool(getattr(self.settings, "frame_analysis_last", True)) and not st.confirmed

    def _search_tools(self) -> list[str]:
        """The usable Retrieve tools that search (clip_merge only joins ranges found by a search)."""
        return [n for n in self._usable("retrieve") if n != "clip_merge"]

    def _has_entity_graph(self) -> bool:
        """Whether the index's graph holds LLM-extracted entities (graph_retrieve is offered only then)."""
        if not hasattr(self, "_graph_entities"):
            try:
                g = self.ctx.index.graph
                self._graph_entities = any(d.get("source") == "llm" for _, d in g.nodes(data=True))
            except Exception:  # noqa: BLE001 - no or unreadable graph: the tool is simply not offered
                self._graph_entities = False
        return self._graph_entities

    def _decide(self, st: "_State", trace: Trace):
        """Ask for one usable decision, re-asking with the problem up to ``max_retries`` times.

        Retries sample (temperature ``retry_temperature``): a greedy model would repeat itself.

        Returns:
            (chat result, parsed reply or None if none was usable, common step fields)
        """
        retries: list[dict] = []
        require = self._required(st)
        temperature = self.settings.llm_temperature
        for _attempt in range(self.settings.max_retries + 1):
            res = self._call_llm(st.history, retries, require, temperature)
            reply = _phase_call_as_directive(parse_reply(res.content, res.reasoning, res.tool_calls))
            problem = self._problem(reply, st)
            common = dict(iteration=st.iteration, phase=st.phase, thought=reply.thought, content=res.content,
                          llm_seconds=round(res.seconds, 3), prompt_tokens=res.prompt_tokens,
                          completion_tokens=res.completion_tokens,
                          call_source=None if reply.call is None else "native" if reply.native else "content")
            if problem is None:
                return res, reply, common
            extracted = self._extract_call(st, trace, reply, common, require) if not _attempt else None
            if extracted is not None:
                return extracted
            trace.add(kind="retry", notes=[problem], **common)
            retries += [{"role": "assistant", "content": res.content or "(empty reply)"},
                        {"role": "user", "content": self.prompts.render(
                            "tool_retry", problem=problem, tools=", ".join(self._allowed(st)) or "none")}]
            if reply.call is not None and (reply.call.error or reply.call.name not in
                                           [t.name for t in tools_for(st.phase)]) and tools_for(st.phase):
                # A broken or misplaced call: the retry decodes a call of this phase's tools.
                require = self._allowed(st)
            temperature = max(temperature, self.settings.retry_temperature)
        return res, None, common

    def _extract_call(self, st: "_State", trace: Trace, reply: Reply, common: dict, require: list[str] | None):
        """The "think, then extract" pass (research/anchors.md §2.1): a reply that names an allowed
        tool in words but holds no usable call is turned into one by a short second request whose
        reply must be a call (``require_tool``), instead of asking the model to write it all again.

        Returns:
            ``(result, reply, common)`` of the extracted call, or None when the reply names no
            allowed tool, the pass is off, or the extraction is unusable too.
        """
        allowed = require or self._allowed(st)  # a gate's list (e.g. a search first) wins
        draft = "\n".join(x for x in (reply.thought, reply.text) if x).strip()
        if not (self.settings.extract_pass and allowed and reply.call is None and draft
                and any(name in draft for name in allowed)):
            return None
        messages = [{"role": "system", "content": self.prompts.text("extract_call")},
                    {"role": "user", "content": self.prompts.render(
                        "extract_call_user", question=st.question, tools=", ".join(allowed), draft=draft[-2000:])}]
        ex = self.llm.chat(messages, self._schemas, max_tokens=self._max_tokens(),
                           seed=self.settings.llm_seed, require_tool=allowed, temperature=0.0)
        ex_reply = parse_reply(ex.content, ex.reasoning, ex.tool_calls)
        ok = ex_reply.call is not None and self._problem(ex_reply, st) is None
        trace.add(kind="extract", notes=[f"no usable call in the reply; extraction pass "
                                         f"{'gave ' + ex_reply.call.name if ok else 'failed'}"], **common)
        if not ok:
            return None
        # the conversation keeps the model's own draft as its turn, with the extracted call attached
        ex_reply.thought = reply.thought or reply.text
        return ex, ex_reply, dict(common, llm_seconds=round(ex.seconds, 3), prompt_tokens=ex.prompt_tokens,
                                  completion_tokens=ex.completion_tokens, call_source="extracted")

    def _run_tool(self, st: "_State", trace: Trace, res, reply: Reply, common: dict) -> None:
        tool = ALL_TOOLS[reply.call.name]
        notes = []
        if reply.extra_calls:
            notes.append(f"{reply.extra_calls} further tool call(s) in the same reply ignored")
        if tool.phase != st.phase:
            self._enter(st, tool.phase, notes)  # implied switch (only retrieve/review -> perceive pass _problem)
            common["phase"] = st.phase
        obs = tool.run(self.ctx, reply.call.arguments)
        st.seen.add(_call_key(reply.call.name, reply.call.arguments))
        run = _trap_run(st.streak, tool.name, reply.call.arguments)
        st.streak = (st.streak if run else []) + [(tool.name, reply.call.arguments or {})]
        text = obs.text
        if run + 1 > TRAP_REPEATS:  # DVD Fig. 3: a loop on one tool; tell the model to break out
            text += "\n\n" + self.prompts.render("trap_warning", tool=tool.name, count=run + 1)
            notes.append(f"trap: {tool.name} called {run + 1} times in a row with near-identical arguments; "
                         f"told to switch tool or widen the range")
        self._append_tool_exchange(st.history, res, reply, tool, text)
        if not obs.error:
            if tool.phase == "perceive":
                st.perceive_calls.append((tool.name, dict(reply.call.arguments or {}),
                                          {**obs.data, "evidence": obs.evidence}))
                st.evidence_notes.append(_evidence_note(obs.text))
                st.perceived += 1
                if tool.name != "frame_analysis":
                    st.confirmed += 1
                st.evidence += obs.evidence
                if obs.frames_s:
                    st.looked.append([min(obs.frames_s), max(obs.frames_s)])
            else:
                st.retrieved += 1
                st.places.add_observation(tool.name, obs.data, obs.evidence)
        trace.add(kind="tool_call", tool=tool.name, arguments=reply.call.arguments, observation=text,
                  observation_data=obs.data, error=obs.error, tool_seconds=obs.data.get("seconds", 0.0),
                  frames_s=obs.frames_s, notes=notes + obs.notes, **common)

    # ------------------------------------------------------------------ helpers

    def _problem(self, reply: Reply, st: "_State") -> str | None:
        """What is wrong with a reply in the current state (None if it can be acted on)."""
        call, phase = reply.call, st.phase
        allowed = self._usable(phase)
        if call is not None:
            if call.error:
                return call.error
            tool = ALL_TOOLS.get(call.name)
            if tool is None:
                return f"there is no tool named {call.name!r}. Tools in this stage: {', '.join(allowed) or 'none'}"
            if tool.phase != phase and not (tool.phase == "perceive" and phase in ("retrieve", "review")):
                return (f"{call.name} cannot be used in the {phase.upper()} stage. "
                        f"Tools in this stage: {', '.join(allowed) or 'none'}")
            entering = tool.phase == "perceive" and phase != "perceive"  # an implied switch starts a new round
            if call.name == "frame_analysis" and (entering or self._frame_analysis_blocked(st)) \
                    and getattr(self.settings, "frame_analysis_last", True):
                first = [n for n in self._usable("perceive") if n != "frame_analysis"]
                return (f"frame_analysis is the last resort: first use {', '.join(first)} on the time ranges; "
                        f"frame_analysis is allowed after one of them has worked in this stage")
            if _call_key(call.name, call.arguments) in st.seen:
                return (f"you already called {call.name} with exactly these arguments and its result is above. "
                        f"Use other arguments or another tool, or write a stage directive")
            if tool.phase == "perceive" and tool.name != "transcript_read" and about_speech(st.question) \
                    and "transcript_read" in self._usable("perceive") and ("speech",) not in st.questioned \
                    and not any(n == "transcript_read" for n, _, _ in st.perceive_calls):
                st.questioned.add(("speech",))  # asked once
                return ("the question asks what was said: read it with transcript_read on the ranges found "
                        "(the transcript holds the speech; OCR does not)")
            ranges = _ranges_arg(call.arguments or {}, widen=False) if tool.phase == "perceive" else None
            off = st.places.unsupported(ranges) if ranges else []
            key = _call_key(call.name, call.arguments)
            if off and key not in st.questioned and tool.name != "transcript_read":
                st.questioned.add(key)  # asked once: the same call again is run as asked
                return (f"no tool returned {', '.join(fmt_range(*r) for r in off)} and the question does not name "
                        f"it. Look first where the evidence points:\n{st.places.describe()}\n"
                        f"(To look at your range anyway, send the same call again.)")
            run = _trap_run(st.streak, call.name, call.arguments)
            if run > TRAP_REPEATS:
                return (f"you already called {call.name} {run} times in a row on nearly the same input. "
                        f"Switch to another tool, widen or move the time range, change the query, "
                        f"or write a stage directive")
            return None
        if phase == "perceive" and not st.perceived:
            return (f"you must call a perceive tool ({', '.join(self._usable('perceive'))}) on the "
                    f"relevant time ranges before leaving the PERCEIVE stage")
        if phase == "retrieve" and not st.retrieved and not st.names_time():
            return f"search first ({' or '.join(self._search_tools())}) to find the time ranges worth inspecting"
        if phase == "review" and reply.answer and self._echoes_instructions(reply.answer):
            return ("your answer repeats the format instructions instead of answering; write **Answer:** followed "
                    "by the actual answer taken from the tool results")
        if phase == "review" and reply.answer and reply.switch != "perceive" and self._typed(st, reply.answer)[4]:
            return (f"your answer {reply.answer[:100]!r} does not follow the answer format. "
                    f"{st.answer_format}")
        return None

    def _echoes_instructions(self, answer: str) -> bool:
        """Whether an answer copies our own instruction text (small models parrot examples)."""
        a = " ".join(answer.lower().split()).strip(" .*")
        if not a or re.fullmatch(r"[a-h](\W+[a-h])*|\d+(\.\d+)?", a):
            return False  # a bare letter or number is never an echo, even if an example uses one
        if "<" in a and ">" in a or a in {"[start, end]", "[start_s, end_s]"}:
            return True
        texts = [self.prompts.text(n) for n in ("stage_review", "format_choice", "format_interval", "format_text",
                                                 "format_multi", "format_order", "format_yesno")]
        instructions = " ".join(" ".join(texts).lower().split())
        return len(a) >= 6 and a in instructions

    def _append_tool_exchange(self, history: list[dict], res, reply: Reply, tool: Tool, observation: str) -> None:
        limit = self.settings.observation_max_chars
        obs = observation if len(observation) <= limit else observation[:limit - 40] + "\n…(truncated)"
        if reply.native:
            call_id = f"call_{uuid.uuid4().hex[:12]}"
            history.append({"role": "assistant", "content": res.content or None, "tool_calls": [{
                "id": call_id, "type": "function",
                "function": {"name": tool.name, "arguments": json.dumps(reply.call.arguments or {})}}]})
            history.append({"role": "tool", "tool_call_id": call_id, "content": obs})
        else:
            history.append({"role": "assistant", "content": res.content or ""})
            history.append({"role": "user", "content": f"Result of {tool.name}:\n{obs}"})

    def _forced_answer(self, trace: Trace, st: "_State") -> str | None:
        prompt = self.prompts.render("forced_answer", question=st.question, options=st.options_text,
                                     answer_format=st.answer_format)
        candidate = st.candidate
        res = self._call_llm(st.history, [{"role": "user", "content": prompt}])
        thought, text = split_thought(res.content)
        thought = thought or (res.reasoning or "").strip()  # vLLM's reasoning parser returns it apart
        answer = find_answer(text, lenient=True)
        notes = []
        if answer is None and candidate:
            answer = candidate
            notes.append("no **Answer:** in the forced reply; used the candidate answer given earlier")
        elif answer is None and text.strip():
            answer = text.strip().splitlines()[0][:500]
            notes.append("no **Answer:** marker; first line of the reply taken as the answer")
        trace.add(kind="forced_answer", iteration=0, phase="review", thought=thought or text, content=res.content,
                  answer=answer, llm_seconds=round(res.seconds, 3), prompt_tokens=res.prompt_tokens,
                  completion_tokens=res.completion_tokens, notes=notes)
        return answer


@dataclass
class _State:
    """Mutable state of one run (AVI §3.4: messages, phase, evidence)."""

    question: str
    options: dict[str, str]
    options_text: str = ""
    phase: str = "retrieve"
    history: list[dict] = field(default_factory=list)
    iteration: int = 0
    perceived: int = 0  # successful perceive calls since Perceive was (re-)entered
    confirmed: int = 0  # of those, calls of tools other than frame_analysis (AVI Fig. 11)
    retrieved: int = 0  # successful retrieve calls
    evidence: list[list[float]] = field(default_factory=list)
    looked: list[list[float]] = field(default_factory=list)
    seen: set = field(default_factory=set)
    streak: list = field(default_factory=list)  # the last run of near-identical tool calls (trap detection)
    answer: str | None = None
    candidate: str | None = None
    answer_format: str = ""
    kind: str = "text"  # the answer type
    evidence_notes: list[str] = field(default_factory=list)
    places: Places = field(default_factory=Places)  # where to look: the question's time words, search hits
    perceive_calls: list = field(default_factory=list)  # (tool, arguments, data + evidence) of successful calls
    questioned: set = field(default_factory=set)  # perceive calls questioned once for unsupported ranges

    def perceive_data(self) -> list[tuple[str, dict]]:
        """``(tool, observation data)`` of the successful perceive calls, in order."""
        return [(n, d) for n, _, d in self.perceive_calls]

    def names_time(self) -> bool:
        """Whether the question says where to look (a time, or time words such as "in the last minute")."""
        return mentions_time(self.question) or any(p.source == "question" for p in self.places.items)


def _evidence_note(observation: str, limit: int = 400) -> str:
    """One perceive result as a compact line for the Review message."""
    text = " ".join(observation.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


TRAP_REPEATS = 3  # DVD Fig. 3: more than this many near-identical calls in a row is a trap
_RANGE_KEYS = ("time_ranges", "clips")
_QUERY_KEYS = ("query", "event", "question", "objects")


def _trap_run(streak: list, name: str, arguments: dict | None) -> int:
    """How many calls at the end of ``streak`` the call ``name(arguments)`` would continue (0 if none).

    Trap detection after DVD Fig. 3: consecutive calls of one tool are near-identical when
    their time ranges overlap by at least 80 % (tools that take time ranges) or their query
    text is the same after normalisation (tools that do not).
    """
    if streak and near_identical(streak[-1], (name, arguments or {})):
        return len(streak)
    return 0


def near_identical(a: tuple[str, dict], b: tuple[str, dict], min_overlap: float = 0.8) -> bool:
    """Whether two ``(tool, arguments)`` calls are near-identical (trap detection, DVD Fig. 3).

    Time ranges are compared by intersection over union of the covered time (a single moment
    counts as one second around it); query text is compared lower-cased, without punctuation.
    """
    (na, aa), (nb, ab) = a, b
    if na != nb:
        return False
    ra, rb = _ranges_arg(aa or {}), _ranges_arg(ab or {})
    if ra is not None or rb is not None:
        return ra is not None and rb is not None and coverage_iou(ra, rb) >= min_overlap
    qa, qb = _query_arg(aa or {}), _query_arg(ab or {})
    if qa is not None or qb is not None:
        return qa == qb
    return (aa or {}) == (ab or {})


def _ranges_arg(arguments: dict, widen: bool = True) -> list[list[float]] | None:
    for key in _RANGE_KEYS:
        value = arguments.get(key)
        if isinstance(value, list) and value:
            try:
                spans = [sorted([float(r[0]), float(r[-1])]) for r in value]
            except (TypeError, ValueError, IndexError, KeyError):
                return None
            out = []
            for s, e in spans:
                if widen and e - s < 1.0:  # a moment: one second around its centre
                    s, e = (s + e) / 2 - 0.5, (s + e) / 2 + 0.5
                out.append([s, e])
            return out
    return None


def _query_arg(arguments: dict) -> str | None:
    for key in _QUERY_KEYS:
        value = arguments.get(key)
        if value is not None:
            if isinstance(value, list):
                value = " ".join(sorted(str(v) for v in value))
            return " ".join(re.sub(r"[^\w\s]", " ", str(value).lower()).split())
    return None


def _call_key(name: str, arguments: dict | None) -> tuple[str, str]:
    return name, json.dumps(arguments or {}, sort_keys=True)


def _compact(history: list[dict], keep_last: int = 4) -> None:
    """Shorten old tool results in place so the conversation fits the context again.

    The first message (question, options, Retrieve instructions) and the model's own
    turns are never shortened; only tool results older than the last ``keep_last`` messages.
    """
    for msg in history[1:-keep_last]:
        content = msg.get("content")
        is_result = msg["role"] == "tool" or (msg["role"] == "user" and isinstance(content, str)
                                              and content.startswith("Result of "))
        if is_result and isinstance(content, str) and len(content) > 300:
            msg["content"] = content[:280] + "\n…(older result shortened)"


def _phase_call_as_directive(reply: Reply) -> Reply:
    """Read a "tool call" named after a stage (``{"name": "review"}``, ``stage_switch`` with a stage
    argument) as the stage directive it means: small models write directives as calls (seen in
    traces of the 1.5B orchestrator), and a retry costs a whole model turn."""
    call = reply.call
    if call is None or call.error or reply.switch is not None:
        return reply
    name = call.name.strip().lower().replace("-", "_")
    args = call.arguments if isinstance(call.arguments, dict) else {}
    if name in ("stage_switch", "switch_stage", "stage"):
        name = str(args.get("stage") or args.get("to") or args.get("phase") or "").strip().lower()
    if name not in ("perceive", "review"):
        return reply
    reply.switch, reply.call = name, None
    reply.notes.append(f"a call named {call.name!r} was read as [STAGE_SWITCH: {name}]")
    return reply

