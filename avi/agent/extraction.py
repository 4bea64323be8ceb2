"""The extraction pass: a reply that describes a tool call in prose is turned into the call by one
constrained request (small orchestrators write "I will call text_extract on 0-5 s" instead of the call)."""

from __future__ import annotations

from avi.agent.parse import (
    Reply,
    parse_reply,
)
from avi.agent.state import State
from avi.agent.trace import Trace


class CallExtraction:
    """Part of :class:`avi.agent.loop.Agent` (see the module docstring); uses the agent's ``llm``, ``ctx``,
    ``prompts`` and ``settings``."""

    def _extract_call(self, st: "State", trace: Trace, reply: Reply, common: dict, require: list[str] | None):
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
