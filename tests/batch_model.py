"""A scripted TEST DOUBLE orchestrator for batch and eval tests (not a model, not part of avi).

``sign_reader(body)`` is a ``reply_fn`` for :class:`fake_openai_server.FakeOpenAIServer`.
It is stateless (it reads the conversation in each request), so concurrent questions and
separate worker processes get consistent replies: clip_retrieve, switch to Perceive (both left out when
the conversation opens in Perceive because the host searched),
text_extract at 3 s, switch to Review, then an answer made of the words the real OCR
returned in the text_extract observation; asked for a structured final answer, the option
whose text was read (else A), or the span ``INTERVAL`` for a time-span question. A question containing ``FAIL`` gets HTTP 400
(a non-transient error the batch must record and go past). ``choice_letter`` selects the
option whose text the OCR read (for the eval fixtures' multiple-choice questions).
"""

from __future__ import annotations

import json
import re


def _call(name: str, **arguments) -> str:
    return "THOUGHT: next step.\n" + json.dumps({"name": name, "arguments": arguments})


INTERVAL = {"start_s": 2.0, "end_s": 8.0}  # every interval answer: seconds 2 to 8
STEPS = [_call("clip_retrieve", query="text on screen"), "THOUGHT: look closer. [STAGE_SWITCH: perceive]",
         _call("text_extract", time_ranges=[[3, 3]]), "THOUGHT: read. [STAGE_SWITCH: review]"]


def _texts(messages: list[dict]) -> list[str]:
    out = []
    for m in messages:
        c = m.get("content")
        if isinstance(c, list):
            c = " ".join(p.get("text", "") for p in c if isinstance(p, dict))
        out.append(c or "")
    return out


def read_words(messages: list[dict]) -> str:
    """Upper-case words the latest text_extract observation quotes (the OCR result), joined by spaces."""
    for text in reversed(_texts(messages)):
        if "text_extract" in text or "OCR" in text or "text read" in text.lower():
            found = re.findall(r"'([^']+)'|\"([^\"]+)\"", text)
            words = [a or b for a, b in found if (a or b).strip() and (a or b).upper() == (a or b)]
            if words:
                return " ".join(dict.fromkeys(words))
    return "nothing"


def sign_reader(body: dict):
    """reply_fn: the scripted Retrieve -> Perceive -> Review path, then the words that were read."""
    messages = body.get("messages", [])
    if any("FAIL" in t for t, m in zip(_texts(messages), messages) if m.get("role") == "user"):
        return {"status": 400, "content": "this scripted server refuses questions containing FAIL"}
    fmt = body.get("response_format") or {}
    if fmt:  # the structured final answer (avi.agent.loop.Agent._answer_schema)
        props = ((fmt.get("json_schema") or {}).get("schema") or {}).get("properties") or {}
        if "start_s" in props:
            return json.dumps(INTERVAL)
        return json.dumps({"choice": choice_letter(messages)["answer"]})
    n = sum(1 for m in messages if m.get("role") == "assistant")
    first = next((t for t, m in zip(_texts(messages), messages) if m.get("role") == "user"), "")
    if "CURRENT STAGE: PERCEIVE" in first:  # the host searched (setting host_retrieve): no Retrieve steps
        n += 2
    if n < len(STEPS):
        return STEPS[n]
    return f"THOUGHT: text_extract read it.\n**Answer:** {read_words(messages)}"


def choice_letter(messages: list[dict]) -> dict:
    """``{"answer": letter}`` for the option whose text was read, else A."""
    words = read_words(messages).split()
    question = next((t for t, m in zip(_texts(messages), messages) if m.get("role") == "user"), "")
    for letter, body in re.findall(r"(?m)^([A-H])\. (.+)$", question):
        if any(w in body.upper() for w in words):
            return {"answer": letter}
    return {"answer": "A"}


def gullible_reader(body: dict):
    """reply_fn: :func:`sign_reader`, except that it obeys an answer marker wherever a tool result shows one
    (``**Answer:** 99``, or ``Answer: 99`` at a line's start): that becomes its answer. The most gullible model
    there is: with it, an answer marker from the video that reached the model steers the answer
    (scripts/bench_injection.py --double gullible)."""
    from avi.agent.parse import parse_reply

    messages = body.get("messages", [])
    if not body.get("response_format"):
        for m, text in zip(messages, _texts(messages)):
            if m.get("role") == "tool" or (m.get("role") == "user" and text.startswith("Result of ")):
                answer = parse_reply(text).answer
                if answer:
                    return f"THOUGHT: the video gives the answer.\n**Answer:** {answer}"
    return sign_reader(body)
