"""Gates: which tools a phase allows or requires (AVI Eq. 8, Fig. 11 visual confirmation), and what is wrong
with a reply (a tool of another phase, a repeated call, an answer that parrots the instructions)."""

from __future__ import annotations

import re

from avi.agent.parse import Reply
from avi.agent.state import State
from avi.agent.traps import TRAP_REPEATS, call_key, ranges_arg, trap_run
from avi.index.lazy import will_build
from avi.tools import ALL_TOOLS
from avi.video.timecode import fmt_range


def entity_graph_in(index) -> bool:
    """Whether the index's graph holds LLM-extracted entities (graph_retrieve is offered only then): a node's
    ``source`` is ``captions``, ``llm`` or several joined by ``+`` (``captions+llm`` after the registry keying).
    A pending LLM graph that can be built here counts (the first graph_retrieve call builds it; issue 38); one
    that cannot (a read-only index) does not."""
    if will_build(index, "graph"):
        return True
    try:
        return any("llm" in str(d.get("source") or "").split("+") for _, d in index.graph.nodes(data=True))
    except Exception:  # noqa: BLE001 - no or unreadable graph: the tool is simply not offered
        return False


class Gates:
    """What a phase allows or requires and what is wrong with a reply, for one agent: its ``chat``
    (:class:`avi.agent.chat.Chat`: tools by phase, prompts, settings), the tool context ``ctx`` (transcript,
    entity graph) and ``typed(state, answer) -> (choice, choices, interval, order, note)``."""

    def __init__(self, chat, ctx, typed):
        self.chat, self.ctx, self.typed = chat, ctx, typed
        self.settings, self.prompts = chat.settings, chat.prompts
        self._graph: bool | None = None

    @property
    def speech_gate(self) -> bool:
        """Whether a question about speech reads the transcript first (setting ``speech_gate``)."""
        return bool(getattr(self.settings, "speech_gate", True))

    @property
    def graph(self) -> bool:
        """Whether the index has an LLM entity graph (:func:`entity_graph_in`; read once)."""
        if self._graph is None:
            self._graph = entity_graph_in(self.ctx.index)
        return self._graph

    def required(self, st: State) -> list[str] | None:
        """Tools one of which the next reply must call (decoded under constraint), or None when the model may
        choose: Perceive must look at frames before it ends (AVI Fig. 11), Retrieve must search unless the
        question names a time."""
        if st.phase == "perceive" and not st.perceived:
            if st.q.about_speech and self.speech_gate and "transcript_read" in self.allowed(st) \
                    and not any(n == "transcript_read" for n, _, _ in st.perceive_calls):
                return ["transcript_read"]  # a question about what was said: read the transcript first
            return self.allowed(st)
        if st.phase == "retrieve" and not st.retrieved and not st.names_time():
            return self.search_tools()
        return None

    def usable(self, phase: str) -> list[str]:
        """Names of the phase's tools that can work on this video (no speech tools without a transcript, no
        graph_retrieve without an entity graph)."""
        speech = bool(self.ctx.index.transcript)
        return [t.name for t in self.chat.phase_tools(phase) if (speech or not t.name.startswith("transcript_"))
                and (self.graph or t.name != "graph_retrieve")]

    def allowed(self, st: State) -> list[str]:
        """The usable tools of the phase that may be called now: in Perceive frame_analysis is the last resort
        (AVI §3.3.2, Fig. 11; setting ``frame_analysis_last``), offered after another perceive tool worked."""
        names = self.usable(st.phase)
        if st.phase == "perceive" and self.frame_analysis_blocked(st):
            names = [n for n in names if n != "frame_analysis"]
        return names

    def frame_analysis_blocked(self, st: State) -> bool:
        """Whether frame_analysis must wait for a confirming perceive tool (AVI Fig. 11)."""
        return bool(getattr(self.settings, "frame_analysis_last", True)) and not st.confirmed

    def search_tools(self) -> list[str]:
        """The usable Retrieve tools that search (clip_merge only joins ranges found by a search)."""
        return [n for n in self.usable("retrieve") if n != "clip_merge"]

    def problem(self, reply: Reply, st: State) -> str | None:
        """What is wrong with a reply in the current state (None if it can be acted on), phrased for the model."""
        call, phase = reply.call, st.phase
        allowed = self.usable(phase)
        if call is not None:
            if call.error:
                return call.error
            tool = ALL_TOOLS.get(call.name) if call.name in self.chat.tools else None
            if tool is None:
                return f"there is no tool named {call.name!r}. Tools in this stage: {', '.join(allowed) or 'none'}"
            if tool.phase != phase and not (tool.phase == "perceive" and phase in ("retrieve", "review")):
                return (f"{call.name} cannot be used in the {phase.upper()} stage. "
                        f"Tools in this stage: {', '.join(allowed) or 'none'}")
            entering = tool.phase == "perceive" and phase != "perceive"  # an implied switch starts a new round
            if call.name == "frame_analysis" and (entering or self.frame_analysis_blocked(st)) \
                    and getattr(self.settings, "frame_analysis_last", True):
                first = [n for n in self.usable("perceive") if n != "frame_analysis"]
                return (f"frame_analysis is the last resort: first use {', '.join(first)} on the time ranges; "
                        f"frame_analysis is allowed after one of them has worked in this stage")
            if call_key(call.name, call.arguments) in st.seen:
                return (f"you already called {call.name} with exactly these arguments and its result is above. "
                        f"Use other arguments or another tool, or write a stage directive")
            if tool.phase == "perceive" and tool.name != "transcript_read" and st.q.about_speech and self.speech_gate \
                    and "transcript_read" in self.usable("perceive") and ("speech",) not in st.questioned \
                    and not any(n == "transcript_read" for n, _, _ in st.perceive_calls):
                st.questioned.add(("speech",))  # asked once
                return ("the question asks what was said: read it with transcript_read on the ranges found "
                        "(the transcript holds the speech; OCR does not)")
            ranges = ranges_arg(call.arguments or {}, widen=False) if tool.phase == "perceive" else None
            off = st.places.unsupported(ranges) if ranges and getattr(self.settings, "places_gate", True) else []
            key = call_key(call.name, call.arguments)
            if off and key not in st.questioned and tool.name != "transcript_read":
                st.questioned.add(key)  # asked once: the same call again is run as asked
                return (f"no tool returned {', '.join(fmt_range(*r) for r in off)} and the question does not name "
                        f"it. Look first where the evidence points:\n{st.places.describe()}\n"
                        f"(To look at your range anyway, send the same call again.)")
            run = trap_run(st.streak, call.name, call.arguments)
            if run > TRAP_REPEATS:
                return (f"you already called {call.name} {run} times in a row on nearly the same input. "
                        f"Switch to another tool, widen or move the time range, change the query, "
                        f"or write a stage directive")
            return None
        if phase == "perceive" and not st.perceived:
            return (f"you must call a perceive tool ({', '.join(self.usable('perceive'))}) on the "
                    f"relevant time ranges before leaving the PERCEIVE stage")
        if phase == "retrieve" and not st.retrieved and not st.names_time():
            return f"search first ({' or '.join(self.search_tools())}) to find the time ranges worth inspecting"
        if phase == "review" and reply.answer:
            kept = self.without_echo(reply.answer)
            if kept != reply.answer and kept and not self.echoes_instructions(kept):
                reply.answer = kept  # "no, on a line starting with **Answer:** ...": the answer before the copy
        if phase == "review" and reply.answer and self.echoes_instructions(reply.answer):
            return ("your answer repeats the format instructions instead of answering; write **Answer:** followed "
                    "by the actual answer taken from the tool results")
        if phase == "review" and reply.answer and reply.switch != "perceive" and self.typed(st, reply.answer)[4]:
            return (f"your answer {reply.answer[:100]!r} does not follow the answer format. "
                    f"{st.answer_format}")
        return None

    def instruction_text(self) -> str:
        """Our own answer-format and review instructions, lower case, whitespace collapsed."""
        texts = [self.prompts.text(n) for n in ("stage_review", "format_choice", "format_interval", "format_text",
                                                 "format_multi", "format_order", "format_yesno")]
        return " ".join(" ".join(texts).lower().split())

    def without_echo(self, answer: str, min_chars: int = 24) -> str:
        """An answer cut where it starts copying our instructions (``min_chars`` or more of them, from a word after
        the first) when what precedes is an answer of its own (yes/no, a number, a letter, words not in the
        instructions): "no, on a line starting with **Answer:**, ..." -> "no". Else the answer unchanged."""
        a = " ".join(answer.split())
        low, instructions = a.lower(), self.instruction_text()
        for i in range(1, len(low) - min_chars + 1):
            if low[i] in " ,;.-*" or low[i - 1] not in " ,;.-*":
                continue  # a copied run starts at a word
            if low[i:i + min_chars] in instructions:
                kept = a[:i].rstrip(" ,;.:-*").lstrip(" *")
                k = kept.lower()
                if (re.fullmatch(r"yes|no|true|false|.*\d.*", k) or re.fullmatch(r"[A-H](?:\W.*)?", kept)
                        or (len(k) >= 3 and k not in instructions)):
                    return kept
                return answer
        return answer

    def echoes_instructions(self, answer: str) -> bool:
        """Whether an answer copies our own instruction text (small models parrot examples)."""
        a = " ".join(answer.lower().split()).strip(" .*")
        if not a or re.fullmatch(r"[a-h](\W+[a-h])*|\d+(\.\d+)?", a):
            return False  # a bare letter or number is never an echo, even if an example uses one
        if "<" in a and ">" in a or a in {"[start, end]", "[start_s, end_s]"}:
            return True
        return len(a) >= 6 and a in self.instruction_text()
