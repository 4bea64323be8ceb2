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

This module holds the loop itself; the rest of the agent has a module each:
:mod:`avi.agent.state` (the run's state), :mod:`avi.agent.gates` (what a phase
allows or requires, what is wrong with a reply), :mod:`avi.agent.traps` (runs of
near-identical calls), :mod:`avi.agent.extraction` (a call described in prose),
:mod:`avi.agent.answer_types` (the answer read for its type, the structured and
the forced answer) and :mod:`avi.agent.answers` (answers grounded in what the
tools measured, issue 14).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field

from avi.agent.answer_types import TypedAnswers
from avi.agent.answers import GroundedAnswers
from avi.agent.extraction import CallExtraction
from avi.agent.gates import Gates
from avi.agent.grounding import is_yes_no
from avi.agent.measured import cut_question
from avi.agent.measured_answers import MeasuredAnswers
from avi.agent.measured_choices import MeasuredChoices
from avi.agent.measured_texts import MeasuredTexts
from avi.agent.ordinals import ordinal_ranges
from avi.agent.parse import Reply, answer_type, extract_choice, parse_options, parse_reply, phase_call_as_directive
from avi.agent.search import HostSearch
from avi.agent.state import State, compact_history, evidence_note
from avi.agent.trace import HOST_STEP, Trace
from avi.agent.traps import TRAP_REPEATS, call_key, trap_run
from avi.backends.llm import ChatClient, ContextOverflowError
from avi.config import Settings
from avi.prompts import PromptLibrary
from avi.tools import ALL_TOOLS, PHASES, TIMELINE_TOOLS, Tool, ToolContext
from avi.video.spans import merge_spans
from avi.video.timecode import clock_times_in, fmt_range, question_ranges


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


class Agent(GroundedAnswers, MeasuredAnswers, MeasuredChoices, MeasuredTexts, TypedAnswers, Gates, CallExtraction,
            HostSearch):
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
        self.tools: dict[str, Tool] = self._tool_set()
        self._schemas = [t.openai_schema() for t in self.tools.values()]

    # ------------------------------------------------------------------ prompts

    def _tool_set(self) -> dict[str, Tool]:
        """The tools by name (one video: :data:`avi.tools.ALL_TOOLS`; :class:`avi.videos.agent.MultiAgent`
        gives them a ``video`` argument); overview and skim only under ``perceive_strategy = "timeline"``."""
        timeline = getattr(self.settings, "perceive_strategy", "agent") == "timeline"
        return {n: t for n, t in ALL_TOOLS.items() if timeline or t not in TIMELINE_TOOLS}

    def _answer_kind(self, question: str, options: dict[str, str]) -> tuple[str, str]:
        """The answer type (``answer_type`` setting, or inferred from the question) and its format line."""
        configured = getattr(self.settings, "answer_type", "auto")
        kind = answer_type(question, options) if configured == "auto" else configured
        # the yes/no format line only for questions that open with the verb: after a leading phrase ("At 1:00, is
        # anyone ...") it sent the 1.5B model from Review back to Perceive to repeat its call (+30 s on each of
        # real-vtest-10/11 and syn-shapes-09, the same answers; development benchmark, 2026-11-27)
        if kind == "text" and is_yes_no(question, after_phrase=False):
            return kind, self.prompts.text("format_yesno")
        return kind, self.prompts.text(f"format_{kind}")

    def _question_message(self, question: str, options: str, time_hint: str, speech: str, answer_format: str) -> str:
        """The first user message's question part (prompts/question.md)."""
        return self.prompts.render("question", question=question, options=options, time_hint=time_hint,
                                   video_length=f"{self.ctx.duration_s:.1f}", speech=speech,
                                   answer_format=answer_format)

    def _system(self) -> str:
        """The system prompt: the same for every run and video, so the server's KV cache of
        the conversation prefix stays valid across phases and questions (module docstring)."""
        lines = []
        for phase in PHASES:
            names = ", ".join(t.name for t in self._phase_tools(phase)) or "none (answer, or go back to PERCEIVE)"
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
            compact_history(history)
            messages = [{"role": "system", "content": self._system()}] + history + (extra or [])
            return self.llm.chat(messages, tools, **kwargs)

    # ------------------------------------------------------------------ run

    def _host_answer(self, st: "State", trace: Trace) -> bool:
        """An answer the host knows before any model step (none for one video; :class:`avi.videos.agent.MultiAgent`
        answers questions about the videos' lengths). True when ``st.answer`` was set."""
        return False

    def run(self, question: str, trace: Trace | None = None) -> AgentResult:
        """Answer ``question``; never raises for model or tool misbehaviour.

        Raises:
            LLMUnavailableError: the orchestrator server is unreachable.
        """
        t_start = time.perf_counter()
        trace = trace or Trace(question=question)
        st = State(question=question, options=parse_options(question))
        st.options_text = ("Options: " + "; ".join(f"{k}. {v}" for k, v in st.options.items())) \
            if st.options else ""
        times = clock_times_in(question)
        time_hint = ("Times in the question, in seconds: " + ", ".join(f"{c} = {v:g}s" for c, v in times) + ".") \
            if times else ""
        named = question_ranges(question, self.ctx.duration_s)
        if not named and getattr(self.settings, "grounded_answers", True):
            # "the first goal": where the index shows or says it (time words, when given, say where to look)
            named = ordinal_ranges(question, getattr(self.ctx, "index", None), self.ctx.duration_s)
        st.places.add_named(named)
        self.ctx.focus_ranges = [list(span) for _, span in named]
        if named:
            time_hint = (time_hint + "\n" if time_hint else "") + "The question's time words point to: " + \
                "; ".join(f'"{p}" = {fmt_range(*span)}' for p, span in named) + ". Look there first."
        st.kind, st.answer_format = self._answer_kind(question, st.options)
        if named and st.kind != "interval" and getattr(self.settings, "grounded_answers", True):
            # the question says where to look: a Retrieve step would only hand over to Perceive (one model
            # step of prompt reading for nothing, issue 17 item 5); a "when" question still searches
            st.phase = "perceive"
        searched = self._host_retrieve(st, trace) if st.phase == "retrieve" and \
            getattr(self.settings, "grounded_answers", True) and getattr(self.settings, "host_retrieve", False) \
            else ""
        self._host_tree(st, trace)  # perceive_strategy = "tree" only: the tree's best segments become the places
        transcript = self.ctx.index.transcript
        speech = self.prompts.render("speech_yes", segments=len(transcript),
                                     source=", ".join(sorted({s.source for s in transcript}))) \
            if transcript else self.prompts.text("speech_no")
        # Opening in Perceive, the tool guide (the same for every question of a profile and video) leads the message,
        # right after the system prompt: the server's KV cache keeps it from the last question (issue 17, item 5)
        guide = self._perceive_guide() + "\n\n" if st.phase == "perceive" else ""
        st.history.append({"role": "user", "content": guide + self._question_message(
            question, st.options_text, time_hint, speech, st.answer_format)
            + (f"\n\n{searched}" if searched else "") + "\n\n" + self._stage_message(st, st.phase, not guide)})
        if st.phase == "perceive" and not searched:  # (the host search records its own switch)
            trace.add(kind="stage_switch", switch_to="perceive", iteration=0, phase="retrieve",
                      notes=[HOST_STEP, "the question's time words name where to look: Perceive first, no Retrieve step"])

        grounded = getattr(self.settings, "grounded_answers", True)
        if not self._host_answer(st, trace) and grounded and cut_question(question) is not None:
            # a question about the cuts themselves: the cut list, measured on every frame, answers it; the
            # model's steps would add nothing but a minute or two of prompt reading (issue 17, item 5)
            st.measured = self._measured_cuts(st, trace)
            if st.measured is not None:
                st.answer = st.measured[0]
                st.evidence += [[max(0.0, t - 0.5), t + 0.5] for t in trace.steps[-1].observation_data["cuts_s"]]
                trace.add(kind="answer", answer=st.answer, iteration=0, phase="retrieve",
                          notes=[HOST_STEP, "answered from the video's cut list before any model step"])
        while st.iteration < self.settings.max_iterations and st.answer is None:
            st.iteration += 1
            res, reply, common = self._decide(st, trace)
            if reply is None:
                # No usable reply after the retries: Retrieve moves on to Perceive (the agent can still look
                # at frames); a Perceive call that repeats one whose result is above moves on to Review (twice:
                # the answer is forced from the evidence found); otherwise the iteration is spent.
                was = st.phase
                if was == "retrieve" or (st.repeats and was == "perceive"):
                    if was == "perceive" and st.repeats > 1:
                        break
                    target = "perceive" if was == "retrieve" else "review"
                    notes: list[str] = ["no usable reply after retries" if target == "perceive" else
                                        "a call repeated with its result above: Review decides on that evidence"]
                    self._enter(st, target, notes)
                    trace.add(kind="stage_switch", switch_to=target, notes=notes, iteration=st.iteration, phase=was)
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
        measured = st.measured or (self._measured_cuts(st, trace) or self._measured_colour_choice(st, trace)
                    or self._measured_scale_choice(st, trace) or self._measured_shape(st, trace)
                    or self._measured_count_choice(st, trace) or self._measured_direction(st, trace)
                    or self._measured_text_choice(st, trace)) \
            if grounded else None
        picked = self._debiased_choice(st, trace) if st.kind == "choice" and st.options and \
            not (measured and measured[1]) else None
        if measured is not None:  # the cut list, colours or shot scale answer it: that letter (or text) is delivered
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
                st.answer = self._agreed_answer_reading(st, trace, self._extractive_answer(st, trace, st.answer))
            if st.kind in ("number", "text") and st.answer is not None:  # "how many" reads as text too
                st.answer = self._count_at_moment(st, trace, st.answer)
            if st.kind == "text" and st.answer is not None:
                st.answer = self._quoted_yes_no(st, trace, self._count_yes_no(
                    st, trace, self._colour_answer(st, trace, st.answer)))
            counted = self._count_interval(st, trace) if st.kind == "interval" else None
            if counted is not None:  # "when are there five circles": where it was measured
                interval = counted
                st.answer = f"[{counted[0]:.1f}s, {counted[1]:.1f}s]"
            elif st.kind == "interval" and interval:
                # a shot's time on screen is the shot itself: objects seen in it also appear in other shots,
                # so their evidence runs would widen the answer past its cuts
                widened = interval if self._shot_question(st) else self._event_interval(st, trace, interval)
                if widened != interval:
                    st.answer = f"[{widened[0]:.1f}s, {widened[1]:.1f}s]"  # the text says what the field says
                interval = widened
                snapped = self._shot_edges(st, trace, interval)
                if snapped != interval:
                    st.answer = f"[{snapped[0]:.1f}s, {snapped[1]:.1f}s]"
                interval = snapped
            cannot = self._cannot_tell(st, trace, choice)
        ev = self._merged_evidence(st)
        trace.answer, trace.choice, trace.interval, trace.evidence = st.answer, choice, interval, ev
        trace.choices, trace.order, trace.answer_type, trace.raw_answer, trace.answer_note = \
            choices, order, st.kind, raw, note
        trace.cannot_tell, trace.choice_method = cannot, method if st.kind == "choice" else None
        trace.iterations, trace.forced = st.iteration, forced
        trace.seconds["agent"] = round(time.perf_counter() - t_start, 3)
        return AgentResult(st.answer, choice, interval, ev, trace, choices, order, st.kind, note, cannot,
                           trace.choice_method)

    # ------------------------------------------------------------------ steps

    def _enter(self, st: "State", new_phase: str, step_notes: list[str] | None = None) -> None:
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

    def _stage_message(self, st: "State", phase: str, guide: bool = True) -> str:
        """The instruction that opens a stage. Review restates the question, the answer format and
        the evidence found so far right where the decision is made: a small orchestrator reads
        the last message far more reliably than a tool result ten messages up. ``guide=False``: the Perceive
        tool guide is left out (the opening message carries it at its top)."""
        evidence = "\n".join(f"- {e}" for e in st.evidence_notes[-6:]) or "- none yet"
        question = st.question + (f"\n{st.options_text}" if st.options_text else "")
        speech = bool(self.ctx.index.transcript)  # speech tools are only mentioned when there is speech
        graph = self._has_entity_graph()  # graph_retrieve only when the graph has extracted entities
        places = st.places.describe()
        places = ("Where to look first (the question's time words, then the best search hits):\n" + places) \
            if places else "No search has pointed anywhere yet: choose ranges that the question or the search names."
        return self.prompts.render(f"stage_{phase}", question=question, answer_format=st.answer_format,
                                   evidence=evidence, places=places,
                                   guide=self._perceive_guide() if guide and phase == "perceive" else "",
                                   speech_retrieve=self.prompts.text("speech_retrieve") if speech else "",
                                   graph_retrieve=self.prompts.text("graph_retrieve_hint") if graph else "")

    def _perceive_guide(self) -> str:
        """Which perceive tool measures what (prompts/perceive_guide.md): fixed for a profile and a video (the
        transcript line only for videos with speech; first, where it was when the model learned to pick it; the
        overview/skim line under ``perceive_strategy = "timeline"``)."""
        speech = bool(self.ctx.index.transcript)
        timeline = getattr(self.settings, "perceive_strategy", "agent") == "timeline"
        text = self.prompts.render("perceive_guide", detector_vocabulary=self.ctx.backends.detector.vocabulary,
                                   speech_perceive="  " + self.prompts.text("speech_perceive") if speech else "",
                                   timeline_perceive="  " + self.prompts.text("timeline_perceive") if timeline else "")
        return "\n".join(line for line in text.splitlines() if line.strip())

    def _decide(self, st: "State", trace: Trace):
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
            reply = phase_call_as_directive(parse_reply(res.content, res.reasoning, res.tool_calls))
            problem = self._problem(reply, st)
            common = dict(iteration=st.iteration, phase=st.phase, thought=reply.thought, content=res.content,
                          llm_seconds=round(res.seconds, 3), prompt_tokens=res.prompt_tokens,
                          completion_tokens=res.completion_tokens,
                          call_source=None if reply.call is None else "native" if reply.native else "content")
            if problem is None:
                return res, reply, common
            if reply.call is not None and st.phase == "perceive" and st.perceive_calls and \
                    call_key(reply.call.name, reply.call.arguments) in st.seen and \
                    (st.repeats or _attempt == self.settings.max_retries):
                # the first time, the sampled retries may find another tool (syn-shapes-05: object_detect on the
                # second); after that, re-asked, the 1.5B model repeats it again (syn-shapes-08: 20 retries, 5 min)
                st.repeats += 1
                trace.add(kind="retry", notes=[problem, "a repeated call is not asked again"], **common)
                return res, None, common
            extracted = self._extract_call(st, trace, reply, common, require) if not _attempt else None
            if extracted is not None:
                return extracted
            trace.add(kind="retry", notes=[problem], **common)
            retries += [{"role": "assistant", "content": res.content or "(empty reply)"},
                        {"role": "user", "content": self.prompts.render(
                            "tool_retry", problem=problem, tools=", ".join(self._allowed(st)) or "none")}]
            if reply.call is not None and (reply.call.error or reply.call.name not in
                                           [t.name for t in self._phase_tools(st.phase)]) and self._phase_tools(st.phase):
                # A broken or misplaced call: the retry decodes a call of this phase's tools.
                require = self._allowed(st)
            temperature = max(temperature, self.settings.retry_temperature)
        return res, None, common

    def _run_tool(self, st: "State", trace: Trace, res, reply: Reply, common: dict) -> None:
        tool = self.tools[reply.call.name]
        notes = []
        if reply.extra_calls:
            notes.append(f"{reply.extra_calls} further tool call(s) in the same reply ignored")
        if tool.phase != st.phase:
            self._enter(st, tool.phase, notes)  # implied switch (only retrieve/review -> perceive pass _problem)
            common["phase"] = st.phase
        obs = tool.run(self.ctx, reply.call.arguments)
        st.seen.add(call_key(reply.call.name, reply.call.arguments))
        run = trap_run(st.streak, tool.name, reply.call.arguments)
        st.streak = (st.streak if run else []) + [(tool.name, reply.call.arguments or {})]
        text = obs.text
        if run + 1 > TRAP_REPEATS:  # DVD Fig. 3: a loop on one tool; tell the model to break out
            text += "\n\n" + self.prompts.render("trap_warning", tool=tool.name, count=run + 1)
            notes.append(f"trap: {tool.name} called {run + 1} times in a row with near-identical arguments; "
                         f"told to switch tool or widen the range")
        self._append_tool_exchange(st.history, res, reply, tool, text)
        for label in obs.data.get("unsupported") or []:  # what the detector said it has no class for
            if label not in st.unsupported:
                st.unsupported.append(str(label))
        if not obs.error:
            if tool.phase == "perceive":
                st.perceive_calls.append((tool.name, dict(reply.call.arguments or {}),
                                          {**obs.data, "evidence": obs.evidence}))
                st.evidence_notes.append(evidence_note(obs.text))
                st.perceived += 1
                if tool.name != "frame_analysis":
                    st.confirmed += 1
                st.evidence += obs.evidence
                if obs.frames_s:
                    st.looked.append(self._looked_span(obs))
            else:
                st.retrieved += 1
                self._add_places(st, tool.name, obs)
        trace.add(kind="tool_call", tool=tool.name, arguments=reply.call.arguments, observation=text,
                  observation_data=obs.data, error=obs.error, tool_seconds=obs.data.get("seconds", 0.0),
                  frames_s=obs.frames_s, notes=notes + obs.notes, **common)

    # ------------------------------------------------------------------ helpers

    def _merged_evidence(self, st: "State") -> list[list[float]]:
        """The answer's evidence: merged ranges the perceive tools found, else the ranges they looked at."""
        return merge_spans([list(map(float, e)) for e in st.evidence]) or merge_spans(st.looked)

    def _looked_span(self, obs) -> list:
        """``[first, last]`` frame time of a perceive call (for :meth:`_merged_evidence`)."""
        return [min(obs.frames_s), max(obs.frames_s)]

    def _add_places(self, st: "State", tool: str, obs) -> None:
        """Remember where a retrieve tool points (the Perceive instruction's places)."""
        st.places.add_observation(tool, obs.data, obs.evidence)

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
