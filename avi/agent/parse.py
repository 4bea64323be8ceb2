"""Parsing the orchestrator's replies (AVI §3.3, Fig. 9-12): thoughts, tool calls (native ``tool_calls``, else
the first ``{"name": ..., "arguments": {...}}`` object in the text: llama.cpp does not print Qwen's
``<tool_call>`` tags), ``[STAGE_SWITCH: …]`` directives and ``**Answer:**``, and the answer read for its type
(letters, interval, order). Tolerant but never guessing: what cannot be read is a complaint sent back to the model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from avi.replies import iter_json_objects, loads_lenient, split_thought

_SWITCH = re.compile(r"\[\s*STAGE[_ ]?SWITCH\s*:\s*([A-Za-z]+)\s*\]", re.I)
_ANSWER = re.compile(r"\*\*\s*(?:final\s+)?answer\s*:?\s*\*\*\s*:?\s*(.+)", re.I | re.S)
_ANSWER_BOLD = re.compile(r"\*\*\s*(?:final\s+)?answer\s*:\s*([^*\n]+?)\s*\*\*", re.I)
_ANSWER_PLAIN = re.compile(r"(?:^|\n)\s*(?:final\s+)?answer\s*:\s*(.+)", re.I | re.S)
_PHASES = {"retrieve": "retrieve", "retrieval": "retrieve", "perceive": "perceive", "perception": "perceive",
           "review": "review"}


@dataclass
class ParsedCall:
    """A tool call found in a reply: the ``name`` as written, the decoded ``arguments`` (None when unusable), the
    ``error`` phrased for the model (None if well-formed) and the ``raw`` JSON span ("" for native calls)."""

    name: str
    arguments: dict | None
    error: str | None = None
    raw: str = ""


_NAME_KEYS = ("name", "tool", "tool_name", "function")
_ARG_KEYS = ("arguments", "parameters", "args", "input")


def _call_from_obj(obj: dict) -> ParsedCall | None:
    if isinstance(obj.get("function"), dict):  # OpenAI-style {"type": "function", "function": {...}}
        obj = obj["function"]
    name = next((obj[k] for k in _NAME_KEYS if isinstance(obj.get(k), str)), None)
    if name is None:
        return None
    args = next((obj[k] for k in _ARG_KEYS if k in obj), None)
    if args is None:
        rest = {k: v for k, v in obj.items() if k not in _NAME_KEYS and k != "type"}
        args = rest
    return coerce_arguments(name, args)


def coerce_arguments(name: str, args) -> ParsedCall:
    """Turn raw arguments (dict or JSON string) into a :class:`ParsedCall`."""
    if isinstance(args, str):
        decoded = loads_lenient(args) if args.strip() else {}
        if not isinstance(decoded, dict):
            return ParsedCall(name, None, f"the arguments of {name} are not a JSON object: {args[:200]!r}")
        args = decoded
    if not isinstance(args, dict):
        return ParsedCall(name, None, f"the arguments of {name} must be a JSON object, got {type(args).__name__}")
    return ParsedCall(name, args)


def find_tool_call(text: str) -> ParsedCall | None:
    """The first tool call written in ``text`` (``error`` set when something that looks like a call could not be
    decoded), or None."""
    for start, end, obj in iter_json_objects(text):
        call = _call_from_obj(obj)
        if call is not None:
            call.raw = text[start:end]
            return call
    if "<tool_call>" in text or re.search(r'\{\s*"?name"?\s*:', text):
        return ParsedCall("", None, "a tool call was started but is not valid JSON; write exactly one object "
                                    '{"name": <tool name>, "arguments": {...}} with double-quoted keys')
    return None


def find_stage_switch(text: str) -> str | None:
    """The phase named by the last ``[STAGE_SWITCH: …]`` directive, or None."""
    found = [_PHASES.get(m.lower()) for m in _SWITCH.findall(text or "")]
    found = [f for f in found if f]
    return found[-1] if found else None


def find_answer(text: str, *, lenient: bool = False) -> str | None:
    """The text after ``**Answer:**`` (first paragraph), or None; ``lenient``: a plain ``Answer:`` line too."""
    text = text or ""
    m = _ANSWER_BOLD.search(text) or _ANSWER.search(text) or (_ANSWER_PLAIN.search(text) if lenient else None)
    if not m:
        return None
    ans = m.group(1).strip()
    ans = re.split(r"\n\s*\n", ans)[0].strip()
    ans = _SWITCH.sub("", ans).strip().strip("*").strip()
    return ans or None


def extract_choice(answer: str | None, options: dict[str, str]) -> str | None:
    """The option letter an answer picks (``B``, ``(B)``, ``B.``, ``B) text``, ``Option B``, else an answer equal
    to one option's text), or None."""
    if not answer or not options:
        return None
    a = answer.strip()
    m = re.match(r"^(option\s+)?(\()?([A-Za-z])(\))?(?=$|[\s.):,])(.*)$", a, re.I | re.S)
    if m and m.group(3).upper() in options:
        letter, rest = m.group(3), m.group(5)
        marked = m.group(1) or m.group(2) or m.group(4)
        # A lower-case letter followed by words is an article ("a purple van"), not a choice.
        if letter.isupper() or marked or not re.match(r"^\s+[A-Za-z]", rest):
            return letter.upper()
    norm = a.lower().strip(" .")
    for letter, body in options.items():
        if body.lower().strip(" .") == norm:
            return letter
    return None


_LETTER_LIST = re.compile(r"^\W*[A-H](?:\W+(?:(?:and|then)\W+)?[A-H])*\W*$")
_ITEM_SPLIT = re.compile(r"\s*(?:->|→|=>|>|,|;|\n|\band then\b|\bthen\b|\band\b)\s*", re.I)
_NUMBERED = re.compile(r"(?:^|\s)\(?\d+[.)]\s+")


def _letters(answer: str, options: dict[str, str]) -> list[str] | None:
    """Option letters in the order written (``"A, C"``, ``"C -> A -> B"``, ``"B. blue, C. green"``), or None
    unless every part names an option."""
    a = answer.strip().rstrip(".")
    a = re.sub(r"^(?:options?|letters?)\s*:?\s*", "", a, flags=re.I)
    if _LETTER_LIST.match(a):
        found = re.findall(r"[A-H]", a)
    else:
        found = [extract_choice(part, options) for part in _ITEM_SPLIT.split(a) if part.strip(" .()")]
    if not found or any(x is None or x not in options for x in found):
        return None
    return found


def extract_choices(answer: str | None, options: dict[str, str]) -> list[str] | None:
    """The letters a multi-select answer picks (``"A, C"``, ``"A and C"``, ``"(A) (C)"``), sorted; None unless
    every part names an option."""
    if not answer or not options:
        return None
    found = _letters(answer, options)
    return sorted(set(found)) if found else None


def extract_order(answer: str | None, options: dict[str, str]) -> list[str] | None:
    """The sequence an ordering answer gives, first to last (at least two items), or None: with options their
    letters (``"C -> A -> B"``), each once; without, the items (``"dog, cat"``, ``"1. dog 2. cat"``)."""
    if not answer:
        return None
    if options:
        found = _letters(answer, options)
        return found if found and len(found) >= 2 and len(set(found)) == len(found) else None
    text = answer.strip()
    parts = _NUMBERED.split(text) if len(_NUMBERED.findall(text)) >= 2 else _ITEM_SPLIT.split(text)
    items = [p.strip(" .") for p in parts if p.strip(" .")]
    return items if len(items) >= 2 else None


_NUM = r"(\d+(?:\.\d+)?|\d+:\d{1,2}(?::\d{1,2})?(?:\.\d+)?)"
_INTERVAL = re.compile(rf"\[\s*{_NUM}\s*s?\s*(?:,|-|–|to)\s*{_NUM}\s*s?\s*\]", re.I)


def extract_interval(answer: str | None) -> list[float] | None:
    """``[start_s, end_s]`` from an answer such as ``[12.5s, 20.0s]`` or ``[0:12, 0:20]``."""
    from avi.video.timecode import parse_time

    if not answer:
        return None
    m = _INTERVAL.search(answer)
    if not m:
        return None
    a, b = parse_time(m.group(1)), parse_time(m.group(2))
    return [min(a, b), max(a, b)]


@dataclass
class Reply:
    """Everything found in one model reply: the ``thought`` (``<think>`` blocks or the server's reasoning), the
    visible ``text``, a tool ``call``, the phase a directive names (``switch``), the ``answer`` after
    ``**Answer:**``, whether the call was ``native``, how many further calls were ignored, host ``notes``."""

    thought: str
    text: str
    call: ParsedCall | None
    switch: str | None
    answer: str | None
    native: bool = False
    extra_calls: int = 0
    notes: list[str] = field(default_factory=list)


def parse_reply(content: str | None, reasoning: str | None = None, native_calls: list | None = None) -> Reply:
    """Interpret a chat completion: its ``content``, the server's separate ``reasoning`` and its ``tool_calls``
    as ``[(name, arguments)]``."""
    thought, text = split_thought(content)
    if reasoning:
        thought = (reasoning.strip() + "\n" + thought).strip()
    call = None
    native = False
    extra = 0
    if native_calls:
        name, args = native_calls[0]
        call = coerce_arguments(name, args)
        native = True
        extra = len(native_calls) - 1
    else:
        call = find_tool_call(text)
    # Text before a written call is the model's thought for this step.
    visible = text
    if call is not None and call.raw:
        visible = text.replace(call.raw, "").replace("<tool_call>", "").replace("</tool_call>", "").strip()
    if not thought:
        thought = visible
    return Reply(thought, text, call, find_stage_switch(text), find_answer(text), native, extra)


def phase_call_as_directive(reply: Reply) -> Reply:
    """Read a "tool call" named after a stage (``{"name": "review"}``, ``stage_switch`` with a stage argument) as
    the directive it means: small models write directives as calls, and a retry costs a model turn."""
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
