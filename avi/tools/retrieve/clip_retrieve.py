"""``clip_retrieve`` (AVI §3.3.1): top-k clips by cosine similarity of caption and query embeddings."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from avi.tools.base import Observation, Query, ToolContext, tool
from avi.tools.retrieve.common import BEST_FIRST, CAPTION_CHARS, max_chars
from avi.video.spans import merge_spans
from avi.video.timecode import fmt_range


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
    focus = ctx.scope.focus_ranges
    hits = ctx.index.search(query, ctx.backends.embedder, top_k=max(top_k, 64) if focus else top_k)
    if focus:  # the question names where to look (its time words): hits there first
        inside = [h for h in hits if any(h.caption.start_s < e + 2.5 and h.caption.end_s > s - 2.5 for s, e in focus)]
        hits = (inside + [h for h in hits if h not in inside])[:top_k]
    captioner = ctx.index.manifest.get("captioner", "")
    header = f'{len(hits)} clips most similar to "{query}" (time order; captions are hints, confirm visually)'
    if captioner.startswith("perception"):
        header += "; captions are measured (detector counts, OCR, colours), not a VLM description"
    # Issue 14: the most similar clips must reach the model. Clips are taken best first until the
    # observation budget is spent (each caption cut to what fits), then shown in time order. Clips with the
    # same caption (a slide held for a minute) share one line that lists their ranges (issue 17, item 5:
    # a repeated caption costs its range, not its text, and more distinct clips fit the budget).
    limit = min(max_chars(ctx), int(getattr(ctx.settings, "retrieve_max_chars", 1600) or 1600))
    budget = limit - len(header) - 120
    chosen, groups, used = [], {}, 0
    for h in hits:
        key = text = " ".join(h.caption.text.split())
        group = groups.get(key)
        if group is not None:
            if budget - used < 24:
                break
            group["hits"].append(h)
            chosen.append(h)
            used += 24
            continue
        room = min(CAPTION_CHARS if len(groups) < 3 else CAPTION_CHARS * 2 // 3, budget - used - 40)
        if room < 60:
            break
        if len(text) > room:
            text = text[:room - 1] + "…"
        groups[key] = {"hits": [h], "text": text}
        chosen.append(h)
        used += len(text) + 30
    lines = [header.replace(f"{len(hits)} clips", f"{len(chosen)} clips") + ":"]
    for g in sorted(groups.values(), key=lambda g: min(h.caption.start_s for h in g["hits"])):
        spans = merge_spans([[h.caption.start_s, h.caption.end_s] for h in g["hits"]], gap_s=0.05)
        lines.append(", ".join(fmt_range(a, b) for a, b in spans)
                     + f" sim {max(h.similarity for h in g['hits']):.2f}"
                     + (f" ({len(g['hits'])} clips, same caption)" if len(g["hits"]) > 1 else "") + f": {g['text']}")
    if len(hits) > len(chosen):
        lines.append(f"({len(hits) - len(chosen)} less similar clips left out)")
    if len(chosen) > 1:
        lines.append(BEST_FIRST + ", ".join(fmt_range(h.caption.start_s, h.caption.end_s) for h in chosen[:3]))
    shown = {id(h) for h in chosen}  # every hit is in the data (the places to look, the trace), shown or not
    return Observation(
        "\n".join(lines),
        {"query": query, "clips": [{"clip_index": h.caption.clip_index, "start_s": h.caption.start_s,
                                    "end_s": h.caption.end_s, "similarity": round(h.similarity, 4),
                                    "caption": h.caption.text, "shown": id(h) in shown} for h in hits]},
    )


# ===================================================================== shared helpers
