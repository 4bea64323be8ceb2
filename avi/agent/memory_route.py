"""Routing (issue 53, item 4): the parse comes first; when the query is valid and the memory covers what it asks,
the host answers from the evaluator's result; otherwise the Retrieve-Perceive-Review agent runs and receives the
result as an observation.

The host answers only where the evaluator's value has the type the question asks for (a yes/no for a yes/no
question, a number for "how many", an interval for "when", a text for "what ... written / said / colour", an
option for a multiple-choice question whose options name the measured value) and the memory covered the query: a
detector class it has, a modality that was read over the asked time. Everything else goes to the agent.

Four results are never delivered by the host, though covered and of the asked type (:func:`host_refusal`; each a
failure seen on ``tune``, where the route-off agent was right): a question that places its time by an event ("after
the man leaves", "while the slide about X is shown") when the query holds no time (the memory cannot place an event
it does not measure, so the query ran over the whole video); a "when" whose measured interval covers nearly the whole
asked scope (no moment was found); a text read that is no plain reading (no token of three letters or digits, or only
the question's own words read back; a read of the date, year, clock time or number the question asks for is one); a
measured colour the question never asked for.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from avi.agent.question import asks_colour, colours_named, is_yes_no
from avi.memory.evaluate import Result
from avi.memory.parse import Parse
from avi.memory.store import normalise


@dataclass
class HostAnswer:
    """An answer the host gives from the memory.

    Attributes:
        text: the answer as delivered (its leading statement is the answer).
        choice: the option letter (multiple choice), else None.
        interval: ``[start_s, end_s]`` (interval questions), else None.
        evidence: ``[[start_s, end_s]]`` where the target was found.
    """

    text: str
    choice: str | None = None
    interval: list[float] | None = None
    evidence: list[list[float]] = field(default_factory=list)


@dataclass
class Routed:
    """The route one question took.

    Attributes:
        route: ``host`` (answered from the memory), ``agent`` (the agent answers, with the result as an
            observation) or ``off`` (no memory for this question).
        reason: one line: why this route.
        parse: the parse (None when there was none).
        result: the evaluator's result (None without a valid query and a memory).
        answer: the host's answer (route ``host``).
        memory_note: what was done to get the memory (read, built now, or why there is none).
    """

    route: str
    reason: str
    parse: Parse | None = None
    result: Result | None = None
    answer: HostAnswer | None = None
    memory_note: str = ""

    def to_dict(self) -> dict:
        return {"route": self.route, "reason": self.reason,
                "parse": None if self.parse is None else self.parse.to_dict(),
                "result": None if self.result is None else self.result.to_dict(),
                "answer": None if self.answer is None else self.answer.__dict__, "memory": self.memory_note}

    @property
    def unsupported(self) -> bool | None:
        """Whether the parsed query asks about what no tool measures; None without a parse."""
        if self.parse is None or self.parse.query is None:
            return None
        return self.parse.query.op == "unsupported" or bool(self.result is not None and self.result.unsupported)


def question_wants(q: Any) -> str:
    """What a question asks for: ``choice``, ``interval``, ``yesno``, ``number``, ``text`` or ``other`` (multi,
    order)."""
    if q.kind in ("multi", "order"):
        return "other"
    if q.kind in ("choice", "interval"):
        return q.kind
    if is_yes_no(q.text):
        return "yesno"
    if q.asks_count:
        return "number"
    return "text"


#: an interval covering this share of the asked scope (or more) places nothing: the host gives no "when"
WHOLE_SCOPE_SHARE = 0.9
#: a read token this similar (difflib ratio) to a word of the question is the question read back, not a reading
ECHO_RATIO = 0.8

_ARTICLE = r"(?:the|a|an|his|her|their|its|he|she|they|it|someone|somebody|this|that|these|those)"
#: a time placed by an event: "after the man leaves", "while she talks", "the slide about X"
_EVENT_TIME = re.compile(rf"\b(?:after|before|until|since|between|during|while|following)\s+{_ARTICLE}\b"
                         r"|\b(?:slide|card|page|screen)\s+(?:about|on|showing|titled|listing|with)\b", re.I)
#: ... but not a time the host grounds itself ("before the end of the video", "during the first minute")
_NOT_EVENT = re.compile(rf"(?:after|before|until|since|between|during|while|following)\s+{_ARTICLE}\s+"
                        r"(?:video|clip|film|recording|end|start|beginning|first|last|opening|middle|final)\b", re.I)


def event_scoped(q: Any) -> bool:
    """Whether the question ``q`` places its time by an event ("after the man leaves the room", "while the slide
    about X is shown") rather than by a clock time or a part of the video the host grounds."""
    text = q.stem or q.text
    return any(not _NOT_EVENT.match(text, m.start()) for m in _EVENT_TIME.finditer(text))


def _plain_reading(q: Any, value: str) -> bool:
    """Whether a read text is a reading: a token of three letters or digits at least, and not only the question's
    own words read back (an OCR of the sign the question names is no answer to what else it says)."""
    tokens = normalise(value).split()
    if not any(len(t) >= 3 for t in tokens):
        return False
    asked = normalise(q.stem or q.text).split()
    return not all(any(difflib.SequenceMatcher(None, t, w).ratio() >= ECHO_RATIO for w in asked) for t in tokens)


def host_refusal(q: Any, res: Result, duration_s: float | None = None) -> str | None:
    """Why the host does not deliver the covered result ``res`` for the question ``q`` (module docstring), or None
    when it may; ``duration_s``: the video's length in seconds (None: the whole-scope check is skipped)."""
    query = res.query
    if event_scoped(q) and query.target != "speech" and query.time.start_s is None and query.time.end_s is None:
        return "the question places its time by an event the query holds no time for"
    if res.kind == "interval" and duration_s and res.value is not None:
        a, b = query.time.bounds(duration_s)
        if b > a and (float(res.value[1]) - float(res.value[0])) >= WHOLE_SCOPE_SHARE * (b - a):
            return "the measured interval covers the whole asked time: no moment was found"
    if res.kind == "text" and query.op == "read" and not query.form and not _plain_reading(q, res.value):
        return "the read text is no plain reading (too short, or the question's own words)"
    if query.op == "colour" and not asks_colour(q.text) and not q.colour_options:
        return "a colour was measured, but the question does not ask for one"
    return None


def _unique(letters: list[str]) -> str | None:
    return letters[0] if len(letters) == 1 else None


def choice_for(q: Any, res: Result) -> str | None:
    """The one option that names the measured value (a number, yes/no, a colour, the read text), or None."""
    if res.value is None or not q.options:
        return None
    if res.kind == "number":
        return _unique([k for k, v in q.option_numbers.items() if v == int(res.value)])
    if res.kind == "yesno":
        want = "yes" if res.value else "no"
        return _unique([k for k, v in q.option_yes_no.items() if v == want])
    if res.kind == "text" and res.query.op == "colour":
        return _unique([k for k, v in q.options.items() if colours_named(v) == {res.value}])
    if res.kind == "text" and res.query.op == "direction":
        return _unique([k for k, v in q.options.items() if re.search(rf"\b{res.value}(?:wards?)?\b", v, re.I)])
    if res.kind == "text":
        got = normalise(str(res.value))
        hits = [k for k, v in q.options.items() if normalise(v) and
                (re.search(rf"\b{re.escape(normalise(v))}\b", got) or
                 (len(got) >= 3 and re.search(rf"\b{re.escape(got)}\b", normalise(v))))]
        return _unique(hits)
    return None


def host_answer(q: Any, res: Result, duration_s: float | None = None) -> HostAnswer | None:
    """The answer for the question ``q`` (an :class:`avi.agent.question.ParsedQuestion`) from a covered result,
    or None when the result's type is not what the question asks for or the host does not deliver it
    (:func:`host_refusal`; ``duration_s``: the video's length in seconds)."""
    if res.value is None or not res.covered or host_refusal(q, res, duration_s):
        return None
    return _typed_answer(q, res)


def _typed_answer(q: Any, res: Result) -> HostAnswer | None:
    """:func:`host_answer` for a covered value the host may deliver: the answer of the type ``q`` asks for."""
    wants = question_wants(q)
    ev = [list(map(float, e[:2])) for e in res.evidence[:16]]
    if wants == "choice":
        letter = choice_for(q, res)
        return HostAnswer(f"{letter}. {q.options[letter]}", choice=letter, evidence=ev) if letter else None
    if wants == "interval":
        if res.kind != "interval":
            return None
        a, b = res.value
        return HostAnswer(f"[{a:.1f}s, {b:.1f}s]", interval=[float(a), float(b)], evidence=ev)
    if wants == "yesno":
        if res.kind != "yesno":
            return None
        return HostAnswer("Yes." if res.value else "No.", evidence=ev)
    if wants == "number":
        return HostAnswer(str(int(res.value)), evidence=ev) if res.kind == "number" else None
    if wants == "text":
        if res.kind == "text" and res.query.op == "direction":
            return HostAnswer(f"To the {res.value}." if res.value in ("left", "right") else f"{res.value.capitalize()}.",
                              evidence=ev)
        if res.kind == "text":
            return HostAnswer(str(res.value).strip() + ("" if str(res.value).strip().endswith(".") else "."),
                              evidence=ev)
        if res.kind == "number" and res.query.op in ("count", "max_count"):
            return HostAnswer(str(int(res.value)), evidence=ev)
    return None


def decide(q: Any, parse: Parse | None, result: Result | None, memory_note: str = "",
           duration_s: float | None = None) -> Routed:
    """The route of a question given its parse and the evaluator's result (module docstring); ``duration_s``: the
    video's length in seconds."""
    if parse is None:
        return Routed("off", "no parse", memory_note=memory_note)
    if parse.query is None:
        return Routed("agent", parse.error or "no valid query", parse, memory_note=memory_note)
    if result is None:
        return Routed("agent", f"no perception memory ({memory_note})", parse, memory_note=memory_note)
    if result.unsupported or parse.query.op == "unsupported":
        return Routed("agent", "the query asks about what no tool of this profile measures", parse, result,
                      memory_note=memory_note)
    if not result.covered:
        return Routed("agent", f"the memory does not cover the query ({result.why})", parse, result,
                      memory_note=memory_note)
    refused = host_refusal(q, result, duration_s) if result.value is not None else None
    if refused:
        return Routed("agent", refused, parse, result, memory_note=memory_note)
    ans = _typed_answer(q, result) if result.value is not None else None
    if ans is None:
        return Routed("agent", f"the measured {result.kind} is not what the question asks for "
                               f"({question_wants(q)})", parse, result, memory_note=memory_note)
    return Routed("host", "the memory covers the query", parse, result, ans, memory_note=memory_note)
