"""The agent's tools and the one place that maps phases to tool sets (AVI Eq. 8).

Retrieve tools search the database (captions, summary, entity graph,
transcript); Perceive tools look at frames or read the speech of given ranges;
Review has no tools (the agent answers or goes back to Perceive). The eight
AVI tools (§3.3) plus the two transcript tools and the perception memory's ``memory_query`` (beyond AVI).
"""

from __future__ import annotations

from avi.tools.base import Observation, QuestionScope, Tool, ToolContext, tool
from avi.tools.boundary import boundary_detect
from avi.tools.memory import memory_query
from avi.tools.perceive import frame_analysis, object_detect, text_extract
from avi.tools.retrieve import clip_merge, clip_retrieve, global_explore, graph_retrieve
from avi.tools.timeline import overview, skim
from avi.tools.transcript import transcript_read, transcript_search

PHASES = ("retrieve", "perceive", "review")

PHASE_TOOLS: dict[str, list[Tool]] = {
    "retrieve": [clip_retrieve, global_explore, graph_retrieve, clip_merge, transcript_search],
    "perceive": [text_extract, object_detect, boundary_detect, frame_analysis, transcript_read, memory_query],
    "review": [],
}

#: coarse-to-fine Perceive tools (VideoSeek's overview and skim), offered when ``perceive_strategy = "timeline"``
TIMELINE_TOOLS: list[Tool] = [overview, skim]

ALL_TOOLS: dict[str, Tool] = {t.name: t for tools in (*PHASE_TOOLS.values(), TIMELINE_TOOLS) for t in tools}


def tools_for(phase: str, strategy: str = "agent") -> list[Tool]:
    """Tools the agent may call in ``phase``; ``strategy`` (``Settings.perceive_strategy``) ``"timeline"`` puts
    ``overview`` and ``skim`` before the focus tools of Perceive."""
    if phase == "perceive" and strategy == "timeline":
        return [*TIMELINE_TOOLS, *PHASE_TOOLS[phase]]
    return PHASE_TOOLS[phase]


__all__ = ["ALL_TOOLS", "PHASES", "PHASE_TOOLS", "TIMELINE_TOOLS", "Observation", "QuestionScope", "Tool",
           "ToolContext", "tool", "tools_for"]
