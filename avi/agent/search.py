"""The host's own search for a question (setting ``host_retrieve``; issue 17, item 5): the query made from the
question, and which questions keep the model's Retrieve stage.

The 1.5B orchestrator's Retrieve stage almost always makes one ``clip_retrieve`` call whose query is a fragment of
the question, then writes the stage switch: two model steps (about a quarter of a question's time on two cores)
that a host call with the question's own words replaces.
"""

from __future__ import annotations

import dataclasses
import re

from avi.agent.choice import question_stem
from avi.agent.grounding import Place
from avi.agent.state import State
from avi.agent.trace import HOST_STEP, Trace, host_tool_call
from avi.agent.tree_search import tree_search
from avi.tools.retrieve.common import BEST_FIRST

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


class HostSearch:
    """Part of :class:`avi.agent.loop.Agent`: the host's search before the first model step; uses the agent's
    ``tools``, ``ctx``, ``prompts`` and ``_add_places``."""

    def _host_retrieve(self, st: "State", trace: Trace) -> str:
        """Run ``clip_retrieve`` for the question before the first model step (setting ``host_retrieve``): its
        hits become the places to look and the agent opens in Perceive, saving the model's Retrieve call and its
        stage switch (issue 17, item 5: two steps of prompt reading and decoding). Questions about the whole
        video (:func:`whole_video_question`) keep the model's Retrieve stage, where global_explore is.

        Returns:
            the text that shows the model the search result ("" when nothing was searched or found).
        """
        tool = self.tools.get("clip_retrieve")
        query = search_query(st.question)
        if tool is None or not query or whole_video_question(st.question):
            return ""
        args = {"query": query, "top_k": 16}
        # a shorter result than the model's own search: the hits' ranges are listed again as the Perceive places
        limit = int(getattr(self.ctx.settings, "host_retrieve_max_chars", 800))
        ctx = dataclasses.replace(self.ctx, settings=self.ctx.settings.model_copy(
            update={"retrieve_max_chars": min(limit, int(self.ctx.settings.retrieve_max_chars))}))
        obs = host_tool_call(trace, tool, ctx, args, iteration=0, phase="retrieve",
                             note="the host searched the clips for the question; the agent opens in Perceive")
        if obs.error or not obs.data.get("clips"):
            return ""
        st.retrieved += 1
        self._add_places(st, tool.name, obs)
        st.phase = "perceive"
        trace.add(kind="stage_switch", switch_to="perceive", iteration=0, phase="retrieve",
                  notes=[HOST_STEP, "searched by the host: Perceive first, no Retrieve step"])
        # the hits, best first, are listed again as the places to look: the result's own best-first line goes
        text = "\n".join(line for line in obs.text.splitlines() if not line.startswith(BEST_FIRST))
        return self.prompts.render("host_search", result=text)

    def _host_tree(self, st: "State", trace: Trace) -> None:
        """Setting ``perceive_strategy = "tree"``: the host's budgeted tree search (:mod:`avi.agent.tree_search`,
        EEA) over the ranges the question names, else the whole video, before the first model step; its best
        segments replace the search hits as the Perceive places (the tree has fused the hits' similarities with
        what it measured). When its frames showed nothing the question names, the tree was ranked by caption
        similarity alone (coarser than the clip search) and the search hits stay the places. Nothing happens under
        the other strategies or when the search fails."""
        if getattr(self.settings, "perceive_strategy", "agent") != "tree":
            return
        named = [p.span for p in st.places.items if p.source == "question"]
        args = {"question": st.question, "time_ranges": named or [[0.0, self.ctx.duration_s]]}
        obs = host_tool_call(trace, tree_search, self.ctx, args, iteration=0, phase=st.phase,
                             note="the host searched the video as a tree (perceive_strategy = tree)")
        if obs.error or not obs.evidence or not obs.data.get("measured"):
            return
        st.places.items = [p for p in st.places.items if p.source == "question"]
        for s, e, h in obs.data["best"]:
            st.places.items.append(Place([s, e], "tree_search", h, ""))
