"""The agent's tools and the one place that maps phases to tool sets (AVI Eq. 8).

Retrieve tools search the database; Perceive tools look at frames; Review has
no tools (the agent answers or goes back to Perceive).
"""

from __future__ import annotations

from avi.tools.base import Observation, Tool, ToolContext, tool
from avi.tools.perceive import frame_analysis, object_detect, text_extract
from avi.tools.retrieve import clip_retrieve

PHASES = ("retrieve", "perceive", "review")

PHASE_TOOLS: dict[str, list[Tool]] = {
    "retrieve": [clip_retrieve],
    "perceive": [text_extract, object_detect, frame_analysis],
    "review": [],
}

ALL_TOOLS: dict[str, Tool] = {t.name: t for tools in PHASE_TOOLS.values() for t in tools}


def tools_for(phase: str) -> list[Tool]:
    """Tools the agent may call in ``phase``."""
    return PHASE_TOOLS[phase]


__all__ = ["ALL_TOOLS", "PHASES", "PHASE_TOOLS", "Observation", "Tool", "ToolContext", "tool", "tools_for"]
