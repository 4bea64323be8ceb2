"""The answer read for its type (choice, multi, interval, order, text), the structured final call, and the
forced answer after the last iteration (AVI Algorithm 1, line 29)."""

from __future__ import annotations

import json

from avi.agent.parse import extract_choice, extract_choices, extract_interval, extract_order, find_answer
from avi.agent.state import State
from avi.backends.llm import ContextOverflowError
from avi.replies import split_thought
from avi.trace import Trace


class TypedAnswers:
    """The answer read for its type, the structured final answer and the forced answer of one agent (its
    :class:`avi.agent.chat.Chat`, and the tool context ``ctx``: the video's length bounds an interval)."""

    def __init__(self, chat, ctx):
        self.chat, self.ctx = chat, ctx

    def schema(self, st: State) -> dict | None:
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

    def structured(self, st: State, trace: Trace) -> dict | None:
        """A typed answer through one call constrained by :meth:`schema` (issue 5): ``{"choice"}``, ``{"choices"}``,
        ``{"interval"}`` or ``{"order"}`` (``"answer"`` too when the text changes); None when the setting is off,
        the type is text or the reply is unusable (the regex read stands)."""
        schema = self.schema(st)
        if schema is None or not getattr(self.chat.settings, "structured_answer", True):
            return None
        prompt = self.chat.prompts.render("final_answer", question=st.question, options=st.options_text,
                                          answer=st.answer)
        try:
            res = self.chat.ask_json(st.history, prompt, schema)
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

    def typed(self, st: State, answer: str | None):
        """The answer read for its type: ``(choice, choices, interval, order, note)``; ``note`` says why a typed
        answer cannot be read as such (no answer is then reported rather than a guess; issue 5)."""
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

    def forced(self, st: State, trace: Trace) -> str | None:
        """The answer after the last iteration (Algorithm 1, line 29): asked once more, without a tool call; a
        reply without ``**Answer:**`` gives the candidate answered earlier, else its first line."""
        prompt = self.chat.prompts.render("forced_answer", question=st.question, options=st.options_text,
                                          answer_format=st.answer_format)
        candidate = st.candidate
        res = self.chat.step(st.history, [{"role": "user", "content": prompt}])
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
