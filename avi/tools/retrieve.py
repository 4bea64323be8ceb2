"""Retrieve tools (AVI §3.3.1): find where in the video to look.

Implemented here: ``clip_retrieve``. ``clip_merge``, ``global_explore`` and
``graph_retrieve`` come with the tools issue.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from avi.tools.base import Observation, Query, ToolContext, tool
from avi.video.timecode import fmt_range

_CAPTION_CHARS = 320  # per clip in the LLM's context; the trace keeps full captions


@tool("retrieve")
def clip_retrieve(ctx: ToolContext, query: Query, top_k: Annotated[int, Field(ge=1, le=64)] = 16) -> Observation:
    """Search the clip captions for a text query; returns the top_k most similar 5 s clips in time order.

    Args:
        query: what to look for, in words (objects, text, actions, people).
        top_k: how many clips to return.
    """
    query = query.strip()
    if not query:
        raise ValueError("query is empty; describe what to look for")
    hits = ctx.index.search(query, ctx.backends.embedder, top_k=top_k)
    hits.sort(key=lambda h: h.caption.start_s)
    captioner = ctx.index.manifest.get("captioner", "")
    header = f'{len(hits)} clips most similar to "{query}" (time order; captions are hints, confirm visually)'
    if captioner.startswith("perception"):
        header += "; captions are measured (detector counts, OCR, colours), not a VLM description"
    lines = [header + ":"]
    for h in hits:
        text = h.caption.text
        if len(text) > _CAPTION_CHARS:
            text = text[:_CAPTION_CHARS - 1] + "…"
        lines.append(f"{fmt_range(h.caption.start_s, h.caption.end_s)} sim {h.similarity:.2f}: {text}")
    return Observation(
        "\n".join(lines),
        {"query": query, "clips": [{"clip_index": h.caption.clip_index, "start_s": h.caption.start_s,
                                    "end_s": h.caption.end_s, "similarity": round(h.similarity, 4),
                                    "caption": h.caption.text} for h in hits]},
    )
