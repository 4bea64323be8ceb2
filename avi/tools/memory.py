"""``memory_query``: the perception memory as a Perceive tool (issue 53, item 4), on both profiles.

The same typed query the memory route decodes (:class:`avi.memory.query.MemoryQuery`), called by the model with the
time ranges it wants; the host evaluates it over what the index's tools measured on every sampled frame
(:mod:`avi.memory.evaluate`) and returns the measured value with where it was seen. On the gpu profile the memory
holds what Grounding-DINO, OCR and the VLM captioner's boxes filled.
"""

from __future__ import annotations

from typing import Literal

from avi.index.memory_stage import ensure_memory
from avi.memory.evaluate import evaluate
from avi.memory.query import EXPRESSIONS, OPS, POSTURES, REGIONS, TARGETS, MemoryQuery, TimeScope
from avi.tools.base import Observation, TimeRanges, ToolContext, clip_ranges, tool
from avi.video.analysis import MEASURED_COLOURS


@tool("perceive")
def memory_query(ctx: ToolContext, target: Literal[TARGETS], op: Literal[OPS],  # type: ignore[valid-type]
                 label: str | None = None, pattern: str | None = None,
                 colour: Literal[MEASURED_COLOURS] | None = None,  # type: ignore[valid-type]
                 posture: Literal[POSTURES] | None = None,  # type: ignore[valid-type]
                 expression: Literal[EXPRESSIONS] | None = None,  # type: ignore[valid-type]
                 region: Literal[REGIONS] = "any",  # type: ignore[valid-type]
                 time_ranges: TimeRanges | None = None) -> Observation:
    """Measure from the perception memory (every sampled frame's detector boxes, people, on-screen text, speech,
    cuts, shapes and colours): count, find when, read or check a thing without looking at frames again.

    Args:
        target: what is measured: object, person, face, text (on screen), speech, cut, shape or frame (the picture).
        op: exists, count, max_count, span, first, last, read, colour, order or unsupported.
        label: the detector class (objects), or the shape kind (circle, square, rectangle, triangle).
        pattern: words to find in the on-screen text or the speech.
        colour: the thing's colour, as a condition.
        posture: a person's posture, as a condition.
        expression: a person's facial expression, as a condition.
        region: where in the picture: any, left, right, top, bottom, centre or a corner.
        time_ranges: where to measure, [[start_s, end_s]] (one range, or their hull); the whole video when left out.
    """
    notes: list[str] = []
    scope = TimeScope()
    if time_ranges:
        ranges, notes = clip_ranges(ctx, time_ranges)
        scope = TimeScope(start_s=min(a for a, _ in ranges), end_s=max(b for _, b in ranges))
    mem, how = ensure_memory(ctx.index, ctx.settings, ctx.backends)
    if mem is None:
        raise ValueError(f"no perception memory for this video: {how}")
    try:
        query = MemoryQuery(target=target, noun=label or pattern or target, label=label, op=op, pattern=pattern,
                            colour=colour, posture=posture, expression=expression, region=region, time=scope)
        result = evaluate(mem, query)
    finally:
        mem.close()
    text = result.describe()
    if notes:
        text += "\nNote: " + "; ".join(notes)
    return Observation(text, {"memory": result.to_dict(), "memory_note": how},
                       evidence=[list(map(float, e[:2])) for e in result.evidence[:16]], notes=notes)
