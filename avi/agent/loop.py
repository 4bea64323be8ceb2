"""The Retrieve -> Perceive -> Review agent (AVI §3.3-3.4, Algorithm 1).

State: the message history, the current phase and the evidence gathered (:class:`avi.agent.state.State`, with the
question parsed once, :mod:`avi.agent.question`). Each iteration asks the orchestrator for one decision in the
current phase, then

* runs the tool it called (retrieve tools in Retrieve, perceive tools in Perceive); a perceive tool called from
  Retrieve or Review is taken as the implied switch to Perceive;
* or follows its ``[STAGE_SWITCH: …]`` directive; a reply with neither moves Retrieve to Perceive and Perceive
  to Review, as in Algorithm 1;
* or, in Review, accepts its ``**Answer:**``, or goes back to Perceive.

The phase gates (:mod:`avi.agent.gates`): leaving Perceive needs a successful perceive call in that round (visual
confirmation, AVI Fig. 11); a malformed reply is sent back with what was wrong (``max_retries`` per iteration).
After ``max_iterations`` the agent is asked once more, without tools, for a forced answer (line 29). The answer
is read for its type, then the host's answer rules that are switched on may change it (:mod:`avi.agent.rules`).

Where we differ from AVI's Fig. 5 prompt layout: the system prompt and tool list stay the same for the whole
run and each stage's instruction arrives as a message; the phase restriction (Eq. 8) is enforced by the host,
which refuses a tool of another phase. The conversation only grows at its end, so llama.cpp and vLLM reuse the
KV cache of the whole prefix (re-reading a changed system prompt cost 10-20 s per switch on 2 cores).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field

from avi.agent.answer_types import TypedAnswers
from avi.agent.chat import Chat
from avi.agent.extraction import extract_call
from avi.agent.gates import Gates
from avi.agent.ordinals import ordinal_ranges
from avi.agent.parse import Reply, parse_reply, phase_call_as_directive
from avi.agent.question import ParsedQuestion, parse_question
from avi.agent.rules import Delivered, RuleRun, answer_early, deliver, select_rules
from avi.agent.search import host_retrieve, host_tree
from avi.agent.state import State, evidence_note
from avi.agent.traps import TRAP_REPEATS, call_key, trap_run
from avi.backends.llm import ChatClient
from avi.backends.ocr_script import question_script
from avi.config import Settings
from avi.prompts import PromptLibrary
from avi.tools import ALL_TOOLS, TIMELINE_TOOLS, QuestionScope, Tool, ToolContext
from avi.trace import HOST_STEP, Trace
from avi.video.spans import merge_spans
from avi.video.timecode import fmt_range


@dataclass
class AgentResult:
    """What the agent found: the ``answer`` text (None if there is none), the option ``choice``, the ``interval``
    ``[start_s, end_s]``, the merged ``evidence`` ranges, the :class:`Trace`, the sorted ``choices`` of a
    multi-select answer, the ``order`` (letters, or items without options), the ``answer_type``, a ``note`` (why
    the answer is None although the model answered: unparseable for its type), ``cannot_tell`` (the profile's
    tools cannot measure what is asked; a letter is then a guess), ``choice_method`` (``letter``, ``measured``,
    ``option-scores``, ``option-text``, ``structured``) and the answer ``rules`` that changed the answer, in
    order (:mod:`avi.agent.rules`)."""

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
    rules: list[str] = field(default_factory=list)


class Agent:
    """Answers one question on one video's index (``ctx``) with the orchestrator ``llm``, ``prompts`` and
    ``settings``: Algorithm 1 in :meth:`run`, with its :class:`~avi.agent.chat.Chat`, :class:`~avi.agent.gates.Gates`,
    :class:`~avi.agent.answer_types.TypedAnswers` and answer rules (:func:`~avi.agent.rules.select_rules`)."""

    def __init__(self, llm: ChatClient, ctx: ToolContext, prompts: PromptLibrary, settings: Settings):
        self.ctx, self.prompts, self.settings = ctx, prompts, settings
        self.tools: dict[str, Tool] = self.tool_set()
        self.chat = Chat(llm, prompts, settings, self.tools)
        self.answers = self.typed_answers()
        self.gates = Gates(self.chat, ctx, self.answers.typed)
        self.rules = select_rules(settings)

    # ------------------------------------------------------------------ what a subclass may change

    def tool_set(self) -> dict[str, Tool]:
        """The tools by name (:data:`avi.tools.ALL_TOOLS`; overview and skim only under ``perceive_strategy =
        "timeline"``; :class:`avi.videos.agent.MultiAgent` gives them a ``video`` argument)."""
        timeline = getattr(self.settings, "perceive_strategy", "agent") == "timeline"
        return {n: t for n, t in ALL_TOOLS.items() if timeline or t not in TIMELINE_TOOLS}

    def typed_answers(self) -> TypedAnswers:
        """The reader of answers for their type (and the structured and forced answers)."""
        return TypedAnswers(self.chat, self.ctx)

    def parse(self, question: str) -> ParsedQuestion:
        """The question, read once (the ``answer_type`` setting, or the type inferred from it)."""
        return parse_question(question, self.ctx.duration_s, getattr(self.settings, "answer_type", "auto"))

    def answer_format(self, q: ParsedQuestion) -> str:
        """The answer type's format line (the yes/no one only for questions that open with the verb: after a
        leading phrase it sent the 1.5B model back to Perceive to repeat its call)."""
        if q.kind == "text" and q.opens_with_verb:
            return self.prompts.text("format_yesno")
        return self.prompts.text(f"format_{q.kind}")

    def question_message(self, question: str, options: str, time_hint: str, speech: str, answer_format: str) -> str:
        """The first user message's question part (prompts/question.md)."""
        return self.prompts.render("question", question=question, options=options, time_hint=time_hint,
                                   video_length=f"{self.ctx.duration_s:.1f}", speech=speech,
                                   answer_format=answer_format)

    def memory(self, st: State, trace: Trace):
        """The perception-memory route (:func:`avi.agent.memory_step.memory_step`; ``memory_route`` setting): the model
        parses the question into a typed query and the host answers when the memory covers it. None when off."""
        if not getattr(self.settings, "memory_route", False) or getattr(self.ctx, "index", None) is None:
            return None
        from avi.agent.memory_step import memory_step

        return memory_step(self.chat.llm, self.prompts, self.ctx, st.q, trace)

    def _host_result(self, st: State, trace: Trace, t_start: float) -> AgentResult:
        """The result of a question the host answered from the perception memory (no agent step)."""
        ans = st.memory.answer
        ev = merge_spans([list(map(float, e[:2])) for e in ans.evidence])
        st.answer = ans.text
        trace.answer, trace.choice, trace.interval, trace.evidence = ans.text, ans.choice, ans.interval, ev
        trace.answer_type, trace.raw_answer = st.kind, ans.text
        trace.choice_method = "measured" if ans.choice else None
        trace.rules.append({"rule": "memory", "before": None, "after": ans.text, "changed": True})
        trace.iterations, trace.forced = 0, False
        trace.seconds["agent"] = round(time.perf_counter() - t_start, 3)
        return AgentResult(ans.text, ans.choice, ans.interval, ev, trace, None, None, st.kind, None, False,
                           trace.choice_method, ["memory"])

    # ------------------------------------------------------------------ Algorithm 1

    def run(self, question: str, trace: Trace | None = None) -> AgentResult:
        """Answer ``question``; never raises for model or tool misbehaviour.

        Raises:
            LLMUnavailableError: the orchestrator server is unreachable.
        """
        t_start = time.perf_counter()
        trace = trace or Trace(question=question)
        st = State(q=self.parse(question))
        st.answer_format = self.answer_format(st.q)
        st.memory = self.memory(st, trace)
        if st.memory is not None and st.memory.route == "host":
            return self._host_result(st, trace, t_start)
        self._open(st, trace)  # self.ctx is the question's own context from here (its scope given)
        rules = RuleRun(self.ctx, self.settings, st, trace, self.tools, self.chat, self.answers)
        answer_early(rules, self.rules)  # e.g. a question about the cuts: the cut list answers it
        while st.iteration < self.settings.max_iterations and st.answer is None:
            st.iteration += 1
            res, reply, common = self._decide(st, trace)
            if reply is None:
                # No usable reply after the retries: Retrieve moves on to Perceive; a Perceive call that repeats
                # one whose result is above moves on to Review (twice: the answer is forced from the evidence).
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
            if reply.call is not None:  # Retrieve or Perceive: run the tool
                self._run_tool(st, trace, res, reply, common)
                continue
            st.history.append({"role": "assistant", "content": res.content or ""})
            if st.phase == "review" and reply.answer and reply.switch != "perceive":  # Review: the answer
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
        if forced:  # Algorithm 1, line 29
            st.answer = self.answers.forced(st, trace)
        raw = st.answer
        choice, choices, interval, order, note = self.answers.typed(st, raw)
        ans = deliver(rules, self.rules, Delivered(raw, choice, choices, interval, order, note,
                                                   "letter" if choice else None))
        changed = [r["rule"] for r in trace.rules if r["changed"]]
        ev = self.merged_evidence(st)
        trace.answer, trace.choice, trace.interval, trace.evidence = ans.text, ans.choice, ans.interval, ev
        trace.choices, trace.order, trace.answer_type, trace.raw_answer, trace.answer_note = \
            ans.choices, ans.order, st.kind, raw, ans.note
        trace.cannot_tell = ans.cannot_tell
        trace.choice_method = ans.method if st.kind == "choice" else None
        trace.iterations, trace.forced = st.iteration, forced
        trace.seconds["agent"] = round(time.perf_counter() - t_start, 3)
        return AgentResult(ans.text, ans.choice, ans.interval, ev, trace, ans.choices, ans.order, st.kind, ans.note,
                           trace.cannot_tell, trace.choice_method, changed)

    # ------------------------------------------------------------------ steps

    def _open(self, st: State, trace: Trace) -> None:
        """The first message: the question, the times and places its words name (and with ``grounded_answers``
        the events its ordinals name, Perceive first when it names where to look, the host's search). Makes the
        question's own context (:meth:`avi.tools.base.ToolContext.for_question`) with the scope those words give."""
        q, grounded = st.q, getattr(self.settings, "grounded_answers", True)
        time_hint = ("Times in the question, in seconds: " + ", ".join(f"{c} = {v:g}s" for c, v in q.clock_times)
                     + ".") if q.clock_times else ""
        places = getattr(self.settings, "time_places", True)
        named = list(q.named_ranges) if places else []
        if not named and grounded and places:  # "the first goal": where the index shows or says it
            named = ordinal_ranges(q.ordinals, getattr(self.ctx, "index", None), self.ctx.duration_s)
        st.places.add_named(named)
        self.ctx = self.ctx.for_question(QuestionScope(
            focus_ranges=tuple((float(s), float(e)) for _, (s, e) in named),
            text_frames=None if q.about_text else getattr(self.settings, "text_extract_frames_no_text", None),
            text_script=question_script(q.text) if getattr(self.settings, "ocr_question_script", True) else None))
        if named:
            time_hint = (time_hint + "\n" if time_hint else "") + "The question's time words point to: " + \
                "; ".join(f'"{p}" = {fmt_range(*span)}' for p, span in named) + ". Look there first."
        if named and st.kind != "interval" and grounded and getattr(self.settings, "perceive_first", True):
            st.phase = "perceive"  # a Retrieve step would only hand over to Perceive; "when" still searches
        searched = host_retrieve(st, trace, self.tools, self.ctx, self.prompts, self.add_places) \
            if st.phase == "retrieve" and grounded and getattr(self.settings, "host_retrieve", False) else ""
        if getattr(self.settings, "perceive_strategy", "agent") == "tree":
            host_tree(st, trace, self.ctx)
        transcript = self.ctx.index.transcript
        speech = self.prompts.render("speech_yes", segments=len(transcript),
                                     source=", ".join(sorted({s.source for s in transcript}))) \
            if transcript else self.prompts.text("speech_no")
        # Opening in Perceive, the tool guide (the same for every question of a profile and video) leads the
        # message, right after the system prompt: the server's KV cache keeps it from the last question
        guide = self.perceive_guide() + "\n\n" if st.phase == "perceive" else ""
        measured = self.memory_observation(st)
        st.history.append({"role": "user", "content": guide + self.question_message(
            st.question, st.options_text, time_hint, speech, st.answer_format)
            + (f"\n\n{measured}" if measured else "")
            + (f"\n\n{searched}" if searched else "") + "\n\n" + self._stage_message(st, st.phase, not guide)})
        if st.phase == "perceive" and not searched:  # (the host search records its own switch)
            trace.add(kind="stage_switch", switch_to="perceive", iteration=0, phase="retrieve",
                      notes=[HOST_STEP, "the question's time words name where to look: Perceive first, no Retrieve step"])

    def memory_observation(self, st: State) -> str:
        """The memory query's result for the first message, when the host did not answer from it, something was
        measured and the ``memory_observation`` setting is on (an observation: what was measured, not a decision);
        "" otherwise. A query parsed as unsupported is not shown: the 1.5B parse calls a question unsupported far
        more often than it is (on ``tune``, 11 of its 19 such questions the agent answered right without the route),
        and "no tool measures this" in the first message is then a wrong hint towards "Cannot tell"."""
        routed = st.memory
        if routed is None or routed.result is None or routed.route != "agent" or routed.unsupported or \
                not getattr(self.settings, "memory_observation", False):
            return ""
        return routed.result.describe()

    def _enter(self, st: State, new_phase: str, step_notes: list[str] | None = None) -> None:
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

    def _stage_message(self, st: State, phase: str, guide: bool = True) -> str:
        """The instruction that opens a stage. Review restates the question, the answer format and the evidence
        found so far where the decision is made (a small orchestrator reads the last message far more reliably
        than a tool result ten messages up). ``guide=False``: the Perceive tool guide is left out."""
        evidence = "\n".join(f"- {e}" for e in st.evidence_notes[-6:]) or "- none yet"
        question = st.question + (f"\n{st.options_text}" if st.options_text else "")
        speech = bool(self.ctx.index.transcript)  # speech tools are only mentioned when there is speech
        places = st.places.describe()
        places = ("Where to look first (the question's time words, then the best search hits):\n" + places) \
            if places else "No search has pointed anywhere yet: choose ranges that the question or the search names."
        return self.prompts.render(f"stage_{phase}", question=question, answer_format=st.answer_format,
                                   evidence=evidence, places=places,
                                   guide=self.perceive_guide() if guide and phase == "perceive" else "",
                                   speech_retrieve=self.prompts.text("speech_retrieve") if speech else "",
                                   graph_retrieve=self.prompts.text("graph_retrieve_hint") if self.gates.graph else "")

    def perceive_guide(self) -> str:
        """Which perceive tool measures what (prompts/perceive_guide.md), fixed for a profile and a video (the
        transcript line only with speech, the overview/skim line under ``perceive_strategy = "timeline"``)."""
        speech = bool(self.ctx.index.transcript)
        timeline = getattr(self.settings, "perceive_strategy", "agent") == "timeline"
        text = self.prompts.render("perceive_guide", detector_vocabulary=self.ctx.backends.detector.vocabulary,
                                   speech_perceive="  " + self.prompts.text("speech_perceive") if speech else "",
                                   timeline_perceive="  " + self.prompts.text("timeline_perceive") if timeline else "")
        return "\n".join(line for line in text.splitlines() if line.strip())

    def _decide(self, st: State, trace: Trace):
        """``(chat result, reply or None, common step fields)``: one usable decision, re-asking with the problem up
        to ``max_retries`` times (sampled at ``retry_temperature``: a greedy model would repeat itself)."""
        retries: list[dict] = []
        require = self.gates.required(st)
        temperature = self.settings.llm_temperature
        for attempt in range(self.settings.max_retries + 1):
            res = self.chat.step(st.history, retries, require, temperature)
            reply = phase_call_as_directive(parse_reply(res.content, res.reasoning, res.tool_calls))
            problem = self.gates.problem(reply, st)
            common = dict(iteration=st.iteration, phase=st.phase, thought=reply.thought, content=res.content,
                          llm_seconds=round(res.seconds, 3), prompt_tokens=res.prompt_tokens,
                          completion_tokens=res.completion_tokens,
                          call_source=None if reply.call is None else "native" if reply.native else "content")
            if problem is None:
                return res, reply, common
            if reply.call is not None and st.phase == "perceive" and st.perceive_calls and \
                    call_key(reply.call.name, reply.call.arguments) in st.seen and \
                    (st.repeats or attempt == self.settings.max_retries):
                # the first time, the sampled retries may find another tool; after that, re-asked, the 1.5B
                # model repeats it again (20 retries, 5 minutes)
                st.repeats += 1
                trace.add(kind="retry", notes=[problem, "a repeated call is not asked again"], **common)
                return res, None, common
            extracted = extract_call(self.chat, self.gates, st, trace, reply, common, require) if not attempt \
                else None
            if extracted is not None:
                return extracted
            trace.add(kind="retry", notes=[problem], **common)
            retries += [{"role": "assistant", "content": res.content or "(empty reply)"},
                        {"role": "user", "content": self.prompts.render(
                            "tool_retry", problem=problem, tools=", ".join(self.gates.allowed(st)) or "none")}]
            phase_tools = [t.name for t in self.chat.phase_tools(st.phase)]
            if reply.call is not None and (reply.call.error or reply.call.name not in phase_tools) and phase_tools:
                require = self.gates.allowed(st)  # a broken or misplaced call: the retry decodes a call of the phase
            temperature = max(temperature, self.settings.retry_temperature)
        return res, None, common

    def _run_tool(self, st: State, trace: Trace, res, reply: Reply, common: dict) -> None:
        """Run the reply's tool call, add the exchange to the history and the result to the evidence."""
        tool = self.tools[reply.call.name]
        notes = []
        if reply.extra_calls:
            notes.append(f"{reply.extra_calls} further tool call(s) in the same reply ignored")
        if tool.phase != st.phase:
            self._enter(st, tool.phase, notes)  # implied switch (only retrieve/review -> perceive pass the gates)
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
                    st.looked.append(self.looked_span(obs))
            else:
                st.retrieved += 1
                self.add_places(st, tool.name, obs)
        trace.add(kind="tool_call", tool=tool.name, arguments=reply.call.arguments, observation=text,
                  observation_data=obs.data, error=obs.error, tool_seconds=obs.data.get("seconds", 0.0),
                  frames_s=obs.frames_s, notes=notes + obs.notes, **common)

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

    # ------------------------------------------------------------------ evidence (per video in MultiAgent)

    def merged_evidence(self, st: State) -> list[list[float]]:
        """The answer's evidence: merged ranges the perceive tools found, else the ranges they looked at."""
        return merge_spans([list(map(float, e)) for e in st.evidence]) or merge_spans(st.looked)

    def looked_span(self, obs) -> list:
        """``[first, last]`` frame time of a perceive call."""
        return [min(obs.frames_s), max(obs.frames_s)]

    def add_places(self, st: State, tool: str, obs) -> None:
        """Remember where a retrieve tool points (the Perceive instruction's places)."""
        st.places.add_observation(tool, obs.data, obs.evidence)
