"""The host's own search for a question (setting ``host_retrieve``; issue 17, item 5): the query made from the
question, and which questions keep the model's Retrieve stage.

The 1.5B orchestrator's Retrieve stage almost always makes one ``clip_retrieve`` call whose query is a fragment of
the question, then writes the stage switch: two model steps (about a quarter of a question's time on two cores)
that a host call with the question's own words replaces.
"""

from __future__ import annotations

import re

from avi.agent.choice import question_stem

_LEAD = re.compile(
    r"^\s*(?:during\s+which\s+time\s+span|at\s+what\s+time|in\s+which\s+part\s+of\s+the\s+video|what\s+time|"
    r"how\s+many|how\s+much|how\s+long|how\s+often|when|what|which|who|whom|whose|where|why|how)\b\s*"
    r"(?:is|are|was|were|does|do|did|can|could|has|have)?\s*", re.I)

_WHOLE = re.compile(
    r"\b(?:whole|entire)\s+video\b|\bthroughout\b|\bwhat\s+is\s+(?:the|this)\s+video\s+about\b|\bsummar|"
    r"\bin\s+what\s+order\b|\border\s+(?:of|in\s+which)\b|\bsequence\b|\bhow\s+often\b|\bhow\s+many\s+times\b|"
    r"\bmost\s+of\s+the\s+video\b|\boverall\b", re.I)


def search_query(question: str, max_chars: int = 200) -> str:
    """The words of a question worth searching the captions with: the stem without its options, its leading
    question words ("During which time span is", "How many") and its question mark, at most ``max_chars``
    characters ("During which time span is the woman in a black coat on the lawn?" -> "the woman in a black coat
    on the lawn")."""
    stem = " ".join(question_stem(question or "").split())
    stem = _LEAD.sub("", stem, count=1).strip().rstrip("?").strip()
    return stem[:max_chars].strip()


def whole_video_question(question: str) -> bool:
    """Whether a question is about the whole video (what it is about, the order of events, how often something
    happens): those keep the model's Retrieve stage, whose global_explore reads the video summary."""
    return bool(_WHOLE.search(question_stem(question or "")))
