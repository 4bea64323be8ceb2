"""The extraction pass: a reply that describes a tool call in prose is turned into the call by one
constrained request (small orchestrators write "I will call text_extract on 0-5 s" instead of the call)."""

from __future__ import annotations

from avi.agent.parse import Reply, parse_reply
from avi.agent.state import State
from avi.trace import Trace


def extract_call(chat, gates, st: State, trace: Trace, reply: Reply, common: dict, require: list[str] | None):
    """The "think, then extract" pass (research/anchors.md §2.1; setting ``extract_pass``): a ``reply`` naming an
    allowed tool (``require``, else the phase's) in words but holding no call becomes one through a short request
    that must reply with a call. ``(result, reply, common step fields)``, or None when that does not work."""
    allowed = require or gates.allowed(st)
    draft = "\n".join(x for x in (reply.thought, reply.text) if x).strip()
    if not (chat.settings.extract_pass and allowed and reply.call is None and draft
            and any(name in draft for name in allowed)):
        return None
    messages = [{"role": "system", "content": chat.prompts.text("extract_call")},
                {"role": "user", "content": chat.prompts.render(
                    "extract_call_user", question=st.question, tools=", ".join(allowed), draft=draft[-2000:])}]
    ex = chat.llm.chat(messages, chat.schemas, max_tokens=chat.max_tokens(), seed=chat.settings.llm_seed,
                       require_tool=allowed, temperature=0.0)
    ex_reply = parse_reply(ex.content, ex.reasoning, ex.tool_calls)
    ok = ex_reply.call is not None and gates.problem(ex_reply, st) is None
    trace.add(kind="extract", notes=[f"no usable call in the reply; extraction pass "
                                     f"{'gave ' + ex_reply.call.name if ok else 'failed'}"], **common)
    if not ok:
        return None
    ex_reply.thought = reply.thought or reply.text  # the conversation keeps the model's draft as its turn
    return ex, ex_reply, dict(common, llm_seconds=round(ex.seconds, 3), prompt_tokens=ex.prompt_tokens,
                              completion_tokens=ex.completion_tokens, call_source="extracted")
