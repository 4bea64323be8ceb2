"""Speech tools (beyond AVI; DVD and AgentCVR show what transcripts are worth).

``transcript_search`` (Retrieve) finds where something was said;
``transcript_read`` (Perceive) returns what was said in given time ranges, the
audio counterpart of looking at frames.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from avi.tools.base import VIDEO_TEXT_NOTE, Observation, Query, TimeRanges, ToolContext, clip_ranges, tool
from avi.video.timecode import fmt_range

_NO_SPEECH = "this video has no speech transcript (no audio track, no speech found, or transcripts are off)"


@tool("retrieve")
def transcript_search(ctx: ToolContext, query: Query, top_k: Annotated[int, Field(ge=1, le=32)] = 8) -> Observation:
    """Search what was said in the video for a text query; returns the top_k most similar transcript lines in time order.

    Args:
        query: words or a topic to look for in the speech.
        top_k: how many transcript lines to return.
    """
    query = query.strip()
    if not query:
        raise ValueError("query is empty; give words or a topic to look for")
    if not ctx.index.transcript:
        raise ValueError(_NO_SPEECH)
    hits = ctx.index.search_transcript(query, ctx.backends.embedder, top_k=top_k)
    best = hits[:3]  # ranked by similarity, before the time-order sort
    hits.sort(key=lambda h: h[0].start_s)
    lines = [f'{len(hits)} transcript lines most similar to "{query}" (time order; {VIDEO_TEXT_NOTE}):']
    lines += [f'{fmt_range(seg.start_s, seg.end_s)} sim {sim:.2f}: "{seg.text}"' for seg, sim in hits]
    if len(hits) > 1:
        lines.append("Most similar first: " + ", ".join(fmt_range(seg.start_s, seg.end_s) for seg, _ in best))
    return Observation("\n".join(lines), {"query": query, "segments": [
        {**seg.to_dict(), "similarity": round(sim, 4)} for seg, sim in hits]})


@tool("perceive")
def transcript_read(ctx: ToolContext, time_ranges: TimeRanges) -> Observation:
    """Read what was said (the speech transcript) during the given time ranges.

    Args:
        time_ranges: where to listen, [[start_s, end_s], ...] in seconds.
    """
    ranges, notes = clip_ranges(ctx, time_ranges)
    if not ctx.index.transcript:
        raise ValueError(_NO_SPEECH)
    said = [seg for seg in ctx.index.transcript
            if any(seg.start_s < e + 1e-6 and seg.end_s > s - 1e-6 for s, e in ranges)]
    where = ", ".join(fmt_range(s, e) for s, e in ranges)
    source = ", ".join(sorted({seg.source for seg in ctx.index.transcript}))
    if not said:
        text = f"transcript_read ({source}) in {where}: nothing was said there."
        return Observation(text + ("\nNote: " + "; ".join(notes) if notes else ""), {"segments": []}, notes=notes)
    body = "\n".join(f'{fmt_range(seg.start_s, seg.end_s)}: "{seg.text}"' for seg in said)
    text = f"transcript_read ({source}) in {where}. Said ({VIDEO_TEXT_NOTE}):\n{body}"
    return Observation(text + ("\nNote: " + "; ".join(notes) if notes else ""),
                       {"segments": [seg.to_dict() for seg in said]},
                       evidence=[[seg.start_s, seg.end_s] for seg in said], notes=notes)
