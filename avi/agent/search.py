"""The host's search before the first model step: ``clip_retrieve`` with the question's words (``host_retrieve``:
two model steps fewer) and the budgeted tree search (``perceive_strategy = "tree"``)."""

from __future__ import annotations

import dataclasses

from avi.agent.grounding import Place
from avi.agent.state import State
from avi.tools.retrieve.common import BEST_FIRST
from avi.tools.tree_search import tree_search
from avi.trace import HOST_STEP, Trace, host_tool_call


def host_retrieve(st: State, trace: Trace, tools: dict, ctx, prompts, add_places) -> str:
    """Run ``clip_retrieve`` with the question's search query before the first model step: its hits become the
    places to look (``add_places(st, tool, obs)``) and the agent opens in Perceive (questions about the whole video
    keep the model's Retrieve stage). Returns the result's text for the model ("" when nothing was found)."""
    tool = tools.get("clip_retrieve")
    query = st.q.search_query
    if tool is None or not query or st.q.whole_video:
        return ""
    # a shorter result than the model's own search: the hits' ranges are listed again as the Perceive places
    limit = int(getattr(ctx.settings, "host_retrieve_max_chars", 800))
    small = dataclasses.replace(ctx, settings=ctx.settings.model_copy(
        update={"retrieve_max_chars": min(limit, int(ctx.settings.retrieve_max_chars))}))
    obs = host_tool_call(trace, tool, small, {"query": query, "top_k": 16}, iteration=0, phase="retrieve",
                         note="the host searched the clips for the question; the agent opens in Perceive")
    if obs.error or not obs.data.get("clips"):
        return ""
    st.retrieved += 1
    add_places(st, tool.name, obs)
    st.phase = "perceive"
    trace.add(kind="stage_switch", switch_to="perceive", iteration=0, phase="retrieve",
              notes=[HOST_STEP, "searched by the host: Perceive first, no Retrieve step"])
    text = "\n".join(line for line in obs.text.splitlines() if not line.startswith(BEST_FIRST))
    return prompts.render("host_search", result=text)


def host_tree(st: State, trace: Trace, ctx) -> None:
    """The host's budgeted tree search (:mod:`avi.tools.tree_search`, EEA) over the ranges the question names,
    else the whole video: its best segments replace the search hits as the Perceive places, when its frames
    showed something the question names (else it ranked by caption similarity alone, coarser than the hits)."""
    named = [p.span for p in st.places.items if p.source == "question"]
    args = {"question": st.question, "time_ranges": named or [[0.0, ctx.duration_s]]}
    obs = host_tool_call(trace, tree_search, ctx, args, iteration=0, phase=st.phase,
                         note="the host searched the video as a tree (perceive_strategy = tree)")
    if obs.error or not obs.evidence or not obs.data.get("measured"):
        return
    st.places.items = [p for p in st.places.items if p.source == "question"]
    for s, e, h in obs.data["best"]:
        st.places.items.append(Place([s, e], "tree_search", h, ""))
