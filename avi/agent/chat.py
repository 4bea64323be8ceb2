"""The orchestrator as the agent calls it: one system prompt and tool list for the whole run (the server's KV cache
of the prefix stays valid), the completion budget, steps that fit the context, one-off JSON replies."""

from __future__ import annotations

from avi.agent.state import compact_history
from avi.backends.llm import ChatClient, ContextOverflowError
from avi.prompts import PromptLibrary
from avi.tools import PHASES, Tool, tools_for


class Chat:
    """The agent's side of the orchestrator conversation: the client ``llm``, the ``prompts``, the ``settings``
    (sampling, token budgets, ``perceive_strategy``) and the agent's ``tools`` (schemas sent with every request)."""

    def __init__(self, llm: ChatClient, prompts: PromptLibrary, settings, tools: dict[str, Tool]):
        self.llm, self.prompts, self.settings, self.tools = llm, prompts, settings, tools
        self.schemas = [t.openai_schema() for t in tools.values()]

    def phase_tools(self, phase: str) -> list[Tool]:
        """The tools of ``phase`` this agent has (:func:`avi.tools.tools_for` under ``perceive_strategy``)."""
        return [t for t in tools_for(phase, getattr(self.settings, "perceive_strategy", "agent"))
                if t.name in self.tools]

    def system(self) -> str:
        """The system prompt: the same for every run and video (the tools of each stage listed)."""
        lines = []
        for phase in PHASES:
            names = ", ".join(t.name for t in self.phase_tools(phase)) or "none (answer, or go back to PERCEIVE)"
            lines.append(f"- {phase.upper()} stage: {names}")
        return self.prompts.render("system", core_protocol=self.prompts.text("core_protocol"),
                                   tool_descriptions="\n".join(lines))

    def max_tokens(self) -> int:
        """Completion budget per step: larger when a configured endpoint thinks before it answers."""
        s = self.settings
        thinking = bool(getattr(s, "llm_base_url", None)) and getattr(s, "llm_enable_thinking", False)
        return int(s.llm_thinking_max_tokens) if thinking else int(s.llm_max_tokens)

    def step(self, history: list[dict], extra: list[dict] | None = None, require: list[str] | None = None,
             temperature: float | None = None):
        """One model reply after ``history`` (+ ``extra``); ``require``: tools one of which it must call. The tool
        list goes with every request, the forced answer's too (an unchanged prefix keeps the KV cache). When the
        context is full, old tool results are shortened in ``history`` and the request is sent once more."""
        kwargs = dict(max_tokens=self.max_tokens(), seed=self.settings.llm_seed, require_tool=require,
                      temperature=self.settings.llm_temperature if temperature is None else temperature)
        try:
            return self.llm.chat([{"role": "system", "content": self.system()}] + history + (extra or []),
                                 self.schemas, **kwargs)
        except ContextOverflowError:
            compact_history(history)
            return self.llm.chat([{"role": "system", "content": self.system()}] + history + (extra or []),
                                 self.schemas, **kwargs)

    def ask_json(self, history: list[dict], prompt: str, schema: dict):
        """A reply decoded under the JSON ``schema`` (temperature 0) to ``prompt`` after ``history``; raises
        ContextOverflowError when the conversation does not fit the context."""
        messages = [{"role": "system", "content": self.system()}] + history + [{"role": "user", "content": prompt}]
        return self.llm.chat(messages, self.schemas, max_tokens=self.max_tokens(), seed=self.settings.llm_seed,
                             temperature=0.0, json_schema=schema)
