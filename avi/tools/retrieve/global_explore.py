"""``global_explore`` (AVI §3.3.1): the hierarchical summary ranked by relevance to a query, with candidate
segments (windows of captions when the index has no summary)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from avi.tools.base import Observation, Query, ToolContext, tool
from avi.tools.retrieve.common import (
    FALLBACK_SEGMENT_S,
    SUMMARY_WEIGHT,
    _caption_vectors,
    _captions,
    _fit,
    _max_chars,
    _query_vec,
    _short,
    cached_vectors,
)
from avi.video.timecode import fmt_range


def load_summary(index: Any) -> dict | None:
    """The index's hierarchical summary (``summary.json``, see :mod:`avi.index.summary`), or None.

    Uses ``index.summary`` when the index object has one, else reads
    ``<index.path>/summary.json``. None when there is none or it is unreadable.
    """
    s = getattr(index, "summary", None)
    if isinstance(s, dict):
        return s
    path = getattr(index, "path", None)
    if path is None:
        return None
    try:
        return json.loads((path / "summary.json").read_text())
    except (OSError, ValueError):
        return None


@tool("retrieve")
def global_explore(ctx: ToolContext, query: Query) -> Observation:
    """Overview of the whole video: its summary and its parts most related to a query, with candidate time ranges.

    AVI §3.3.1 ``global_explore``. The query focus comes from ranking, not from
    the LLM (nothing is generated at question time, which keeps it cheap): each
    segment of the index's hierarchical summary (:mod:`avi.index.summary`; video
    summary + segment summaries with their time ranges) is scored by
    ``SUMMARY_WEIGHT * cos(query, segment summary) + (1 - SUMMARY_WEIGHT) * caption score``,
    where the caption score is the mean of the 3 best query-caption cosines of
    the clips whose midpoint lies in the segment; a segment whose summary failed at
    build time is scored and shown by its captions. Without a summary (index built
    with ``summary_llm`` off, or every summary call failed) the segments are
    :data:`FALLBACK_SEGMENT_S` (60 s) windows scored by their captions alone and
    shown by their caption lines most similar to the query; the text says so.

    Args:
        query: the question or topic to focus the overview on.

    Returns:
        Observation with the video summary, the segments ranked by score (each
        with its best-matching clip) and the 3 best segments as candidates;
        ``data["segments"]`` holds ``{start_s, end_s, score, summary_sim,
        caption_score, best_clip, text}`` best first; evidence is the candidates.

    Raises:
        ValueError: empty query, or an index without captions.
    """
    query = query.strip()
    if not query:
        raise ValueError("query is empty; give the question or topic to focus on")
    caps = _captions(ctx)
    if not caps:
        raise ValueError("this index has no clip captions to explore")
    q = _query_vec(ctx, query)
    cap_sims = _caption_vectors(ctx, caps) @ q
    summary = load_summary(ctx.index) or {}
    seg_rows = [s for s in summary.get("segments") or [] if str(s.get("summary", "")).strip()]
    has_summary = bool(seg_rows)
    if has_summary:
        # parts whose summary failed at build time are kept, shown by their captions like the fallback
        gaps = [(float(f["start_s"]), float(f["end_s"]), "") for f in summary.get("failed") or []
                if f.get("start_s") is not None and f.get("end_s") is not None]
        segs = sorted([(float(s["start_s"]), float(s["end_s"]), str(s["summary"])) for s in seg_rows] + gaps)
        texts = [t for _, _, t in segs if t]
        sims_by_text = dict(zip(texts, cached_vectors(ctx.index, ctx.backends.embedder, "summary", texts) @ q))
        sum_sims = [sims_by_text[t] if t else None for _, _, t in segs]
    else:
        dur = max(ctx.duration_s, caps[-1].end_s)
        n = max(1, int(np.ceil(dur / FALLBACK_SEGMENT_S - 1e-9)))
        segs = [(k * FALLBACK_SEGMENT_S, min((k + 1) * FALLBACK_SEGMENT_S, dur), "") for k in range(n)]
        sum_sims = [None] * len(segs)
    mids = [(c.start_s + c.end_s) / 2 for c in caps]
    rows = []
    for k, (s, e, text) in enumerate(segs):
        last = k == len(segs) - 1
        inside = [i for i, m in enumerate(mids) if s <= m < e or (last and m >= e)]
        ranked = sorted(inside, key=lambda i: -cap_sims[i])
        cap_score = float(np.mean([cap_sims[i] for i in ranked[:3]])) if ranked else None
        ss = None if sum_sims[k] is None else float(sum_sims[k])
        if ss is not None and cap_score is not None:
            score = SUMMARY_WEIGHT * ss + (1 - SUMMARY_WEIGHT) * cap_score
        else:
            score = ss if ss is not None else (cap_score if cap_score is not None else -1.0)
        if not text:
            shown = [f"{fmt_range(caps[i].start_s, caps[i].end_s)} {_short(caps[i].text, 140)}"
                      for i in ranked[:2] if caps[i].text.strip()]
            text = ("(no summary) " if has_summary else "") + (" | ".join(shown) or "(no captions)")
        best = [caps[ranked[0]].start_s, caps[ranked[0]].end_s] if ranked else None
        rows.append({"start_s": s, "end_s": e, "score": round(score, 4),
                     "summary_sim": None if ss is None else round(ss, 4),
                     "caption_score": None if cap_score is None else round(cap_score, 4),
                     "best_clip": best, "text": text})
    rows.sort(key=lambda r: (-r["score"], r["start_s"]))
    cands = rows[:3]
    if has_summary:
        head = (f'global_explore "{_short(query, 80)}": video summary and its {len(rows)} segments ranked by '
                f"similarity to the query (summary + captions):")
    else:
        head = (f'global_explore "{_short(query, 80)}": this index has no LLM summary (built with summary_llm off); '
                f"{len(rows)} segment{'s' if len(rows) != 1 else ''} of up to {FALLBACK_SEGMENT_S:g}s ranked by "
                "caption similarity, each shown by its captions closest to the query:")
    lines = [head]
    video = str(summary.get("video") or "").strip()
    if has_summary and video and not (len(segs) == 1 and video == segs[0][2]):
        lines.append(f"Video: {_short(video, 500)}")
    per_seg = 260 if has_summary else 300
    for rank, r in enumerate(rows, 1):
        best = f", best clip {fmt_range(*r['best_clip'])}" if r["best_clip"] and has_summary else ""
        lines.append(f"{rank}. {fmt_range(r['start_s'], r['end_s'])} score {r['score']:.2f}{best}: "
                     f"{_short(r['text'], per_seg)}")
    tail = ["Candidate segments (best first): " + ", ".join(fmt_range(r["start_s"], r["end_s"]) for r in cands)
            + ". Confirm by looking at them (perceive tools)."]
    return Observation(_fit(lines, _max_chars(ctx), tail),
                       {"query": query, "has_summary": has_summary, "video_summary": video or None,
                        "segments": rows},
                       evidence=[[r["start_s"], r["end_s"]] for r in cands])


# ===================================================================== graph_retrieve
