"""The mutable state of one agent run (AVI §3.4: messages, phase, evidence)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from avi.agent.grounding import Places
from avi.agent.question import ParsedQuestion


@dataclass
class State:
    """Mutable state of one run (AVI §3.4: messages, phase, evidence); ``q`` is the question, parsed once."""

    q: ParsedQuestion
    phase: str = "retrieve"
    history: list[dict] = field(default_factory=list)
    iteration: int = 0
    perceived: int = 0  # successful perceive calls since Perceive was (re-)entered
    confirmed: int = 0  # of those, calls of tools other than frame_analysis (AVI Fig. 11)
    retrieved: int = 0  # successful retrieve calls
    evidence: list[list[float]] = field(default_factory=list)
    looked: list[list[float]] = field(default_factory=list)
    seen: set = field(default_factory=set)
    streak: list = field(default_factory=list)  # the last run of near-identical tool calls (trap detection)
    answer: str | None = None
    candidate: str | None = None
    answer_format: str = ""
    evidence_notes: list[str] = field(default_factory=list)
    places: Places = field(default_factory=Places)  # where to look: the question's time words, search hits
    perceive_calls: list = field(default_factory=list)  # (tool, arguments, data + evidence) of successful calls
    questioned: set = field(default_factory=set)  # perceive calls questioned once for unsupported ranges
    repeats: int = 0  # model calls that repeated an earlier call exactly (not re-asked; see Agent._decide)
    measured: tuple | None = None  # (answer, letter or None) measured by the host before any LLM step
    unsupported: list = field(default_factory=list)  # labels object_detect reported it has no class for
    memory: Any = None  # the perception-memory route of this question (avi.agent.memory_route.Routed), None when off

    @property
    def question(self) -> str:
        """The question text (for the prompts)."""
        return self.q.text

    @property
    def options(self) -> dict[str, str]:
        return self.q.options

    @property
    def options_text(self) -> str:
        return self.q.options_text

    @property
    def kind(self) -> str:
        """The answer type."""
        return self.q.kind

    def perceive_data(self) -> list[tuple[str, dict]]:
        """``(tool, observation data)`` of the successful perceive calls, in order."""
        return [(n, d) for n, _, d in self.perceive_calls]

    def names_time(self) -> bool:
        """Whether the question says where to look (a time, or time words such as "in the last minute")."""
        return self.q.mentions_time or any(p.source == "question" for p in self.places.items)


def evidence_note(observation: str, limit: int = 400) -> str:
    """One perceive result as a compact line for the Review message."""
    text = " ".join(observation.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def compact_history(history: list[dict], keep_last: int = 4) -> None:
    """Shorten, in place, the tool results older than the last ``keep_last`` messages so the conversation fits the
    context again (the first message and the model's own turns are kept whole)."""
    for msg in history[1:-keep_last]:
        content = msg.get("content")
        is_result = msg["role"] == "tool" or (msg["role"] == "user" and isinstance(content, str)
                                              and content.startswith("Result of "))
        if is_result and isinstance(content, str) and len(content) > 300:
            msg["content"] = content[:280] + "\n…(older result shortened)"
