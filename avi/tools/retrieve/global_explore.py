"""``global_explore`` (AVI §3.3.1): a query-focused overview of the whole video with candidate segments. On the
gpu profile it is generated at question time from the segment summaries (one LLM call, cached per query), as the
paper does; on the cpu profile the hierarchical summary is ranked by relevance to the query (windows of captions
when the index has no summary)."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from avi.errors import AviError
from avi.index.stage_schemas import Summary
from avi.prompts import PromptLibrary
from avi.replies import strip_think
from avi.tools.base import Observation, Query, ToolContext, tool
from avi.tools.retrieve.common import (
    FALLBACK_SEGMENT_S,
    SUMMARY_WEIGHT,
    cached_vectors,
    caption_vectors,
    captions_of,
    fit_lines,
    max_chars,
    pending_stage,
    query_vector,
    shorten,
    with_stage_note,
)
from avi.video.timecode import fmt_range

log = logging.getLogger(__name__)

OVERVIEW_MAX_TOKENS = 700
"""global_explore (gpu profile): completion budget of the generated overview, in tokens."""

OVERVIEW_SEGMENT_CHARS = 600
"""global_explore (gpu profile): most characters of one segment summary sent to the LLM."""

OVERVIEW_PROMPT_CHARS = 24000
"""global_explore (gpu profile): most characters of segment lines sent (lowest-ranked segments left out first)."""

_OVERVIEWS: OrderedDict[tuple, str] = OrderedDict()
_OVERVIEWS_MAX = 64
_OVERVIEWS_LOCK = threading.Lock()


def load_summary(index: Any) -> dict | None:
    """The index's hierarchical summary (``summary.json``, see :mod:`avi.index.summary`), or None.

    Uses ``index.summary`` when the index object has one, else reads
    ``<index.path>/summary.json``. None when there is none, or it is unreadable or of the wrong shape
    (:class:`avi.index.stage_schemas.Summary`; opening the index rebuilds such a file, this catches one damaged
    since).
    """
    s = getattr(index, "summary", None)
    if isinstance(s, dict):
        return s
    path = getattr(index, "path", None)
    if path is None:
        return None
    try:
        summary = json.loads((path / "summary.json").read_text())
        Summary.model_validate(summary)  # shape and types: a damaged file is no summary, never a traceback
        return summary
    except (OSError, ValueError):
        return None


@tool("retrieve")
def global_explore(ctx: ToolContext, query: Query) -> Observation:
    """Overview of the whole video: its summary and its parts most related to a query, with candidate time ranges.

    AVI §3.3.1 ``global_explore``. Ranked (cpu profile, and the gpu profile's
    candidates): each
    segment of the index's hierarchical summary (:mod:`avi.index.summary`; video
    summary + segment summaries with their time ranges) is scored by
    ``SUMMARY_WEIGHT * cos(query, segment summary) + (1 - SUMMARY_WEIGHT) * caption score``,
    where the caption score is the mean of the 3 best query-caption cosines of
    the clips whose midpoint lies in the segment; a segment whose summary failed at
    build time is scored and shown by its captions. Without a summary (index built
    with ``summary_llm`` off, or every summary call failed) the segments are
    :data:`FALLBACK_SEGMENT_S` (60 s) windows scored by their captions alone and
    shown by their caption lines most similar to the query; the text says so.

    On the gpu profile (``settings.resolved_profile() == "gpu"``) and with segment
    summaries, the overview is *generated* at question time, as AVI §3.3.1 describes
    (``global_explore(q) -> G_summary``, "a query-focused traversal of the entire video
    timeline, generating a comprehensive summary"): one chat call to the orchestrator
    (``ctx.backends.llm``) with the ``global_explore`` prompt, the video summary and
    every segment summary with its time range (each cut to :data:`OVERVIEW_SEGMENT_CHARS`,
    all within :data:`OVERVIEW_PROMPT_CHARS`, lowest-ranked segments left out first),
    temperature 0, at most :data:`OVERVIEW_MAX_TOKENS` tokens. The reply is cached in
    this process per (index, LLM model, query), so asking again costs nothing. The
    candidates are the segments whose time ranges the reply names after "Relevant
    parts:" (else the 3 best ranked); the ranking follows the generated text. When the
    call fails (server error, context overflow) the ranked overview is returned with a
    note. The cpu profile keeps the ranking: the generated overview was not measured
    better with the cpu profile's 1.5B orchestrator, and it costs one more LLM call per
    question on 2 cores.

    Args:
        query: the question or topic to focus the overview on.

    Returns:
        Observation with the video summary, the segments ranked by score (each
        with its best-matching clip) and the 3 best segments as candidates;
        ``data["segments"]`` holds ``{start_s, end_s, score, summary_sim,
        caption_score, best_clip, text}`` best first; evidence is the candidates.
        Generated (gpu): the overview text first; ``data["generated"]`` holds it
        (None when ranked), ``data["cached"]`` whether it came from the cache.

    Raises:
        ValueError: empty query, or an index without captions.
        LLMUnavailableError: the LLM server is gone (gpu, generated overview).
    """
    query = query.strip()
    if not query:
        raise ValueError("query is empty; give the question or topic to focus on")
    caps = captions_of(ctx)
    if not caps:
        raise ValueError("this index has no clip captions to explore")
    stage = pending_stage(ctx, "summary")  # an index whose summary is pending: built now, on first use (issue 38)
    q = query_vector(ctx, query)
    cap_sims = caption_vectors(ctx, caps) @ q
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
            shown = [f"{fmt_range(caps[i].start_s, caps[i].end_s)} {shorten(caps[i].text, 140)}"
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
        head = (f'global_explore "{shorten(query, 80)}": video summary and its {len(rows)} segments ranked by '
                f"similarity to the query (summary + captions):")
    else:
        why = "its summary is not built yet" if stage is not None and not stage.built \
            else "built with summary_llm off"
        head = (f'global_explore "{shorten(query, 80)}": this index has no LLM summary ({why}); '
                f"{len(rows)} segment{'s' if len(rows) != 1 else ''} of up to {FALLBACK_SEGMENT_S:g}s ranked by "
                "caption similarity, each shown by its captions closest to the query:")
    lines = [head]
    video = str(summary.get("video") or "").strip()
    if has_summary and video and not (len(segs) == 1 and video == segs[0][2]):
        lines.append(f"Video: {shorten(video, 500)}")
    per_seg = 260 if has_summary else 300
    for rank, r in enumerate(rows, 1):
        best = f", best clip {fmt_range(*r['best_clip'])}" if r["best_clip"] and has_summary else ""
        lines.append(f"{rank}. {fmt_range(r['start_s'], r['end_s'])} score {r['score']:.2f}{best}: "
                     f"{shorten(r['text'], per_seg)}")
    generated, cached, note = None, False, None
    if has_summary and ctx.settings.resolved_profile() == "gpu":
        try:
            generated, cached = _overview(ctx, query, video, rows)
        except AviError as exc:
            if type(exc).__name__ == "LLMUnavailableError":
                raise
            note = f"the generated overview failed ({shorten(str(exc), 160)}); ranked summaries instead"
            log.warning("global_explore: %s", note)
    if generated is not None:
        named = _named_segments(generated, rows)
        cands = named[:3] or cands
        head = (f'global_explore "{shorten(query, 80)}": overview of the whole video generated for this query from '
                f"its {len(rows)} segment summaries:")
        lines = [head, shorten(generated, max(400, max_chars(ctx) // 2))]
        lines += [f"{fmt_range(r['start_s'], r['end_s'])}: {shorten(r['text'], 200)}" for r in cands]
    elif note:
        lines.insert(1, f"Note: {note}.")
    tail = ["Candidate segments (best first): " + ", ".join(fmt_range(r["start_s"], r["end_s"]) for r in cands)
            + ". Confirm by looking at them (perceive tools)."]
    if stage is not None and not stage.built:
        tail.insert(0, f"Note: {stage.note}.")
    return with_stage_note(Observation(fit_lines(lines, max_chars(ctx), tail),
                                       {"query": query, "has_summary": has_summary, "video_summary": video or None,
                                        "segments": rows, "generated": generated, "cached": cached},
                                       evidence=[[r["start_s"], r["end_s"]] for r in cands]), stage)


def _overview(ctx: ToolContext, query: str, video: str, rows: list[dict]) -> tuple[str, bool]:
    """The generated overview for ``query`` and whether it came from the cache (see :func:`global_explore`)."""
    llm = ctx.backends.llm
    chosen, size = [], 0
    for r in rows:  # best ranked first, so the least relevant are the ones left out
        line = f"{fmt_range(r['start_s'], r['end_s'])} {shorten(r['text'], OVERVIEW_SEGMENT_CHARS)}"
        if chosen and size + len(line) + 1 > OVERVIEW_PROMPT_CHARS:
            break
        chosen.append((r["start_s"], line))
        size += len(line) + 1
    segments = "\n".join(line for _, line in sorted(chosen))
    prompts = PromptLibrary(ctx.settings.prompts_dir)
    text = prompts.render("global_explore", duration=f"{ctx.duration_s:.0f}", video=shorten(video or "(none)", 1500),
                          segments=segments, query=query)
    key = (str(getattr(ctx.index, "path", id(ctx.index))), str(getattr(llm, "model", "")), query,
           hashlib.sha1(text.encode("utf-8", "replace")).hexdigest())
    with _OVERVIEWS_LOCK:
        if key in _OVERVIEWS:
            _OVERVIEWS.move_to_end(key)
            return _OVERVIEWS[key], True
    # thinking off: a Qwen3 that thinks first can spend the whole budget in <think> (issue 37)
    res = llm.chat([{"role": "user", "content": text}], max_tokens=OVERVIEW_MAX_TOKENS, temperature=0.0, seed=0,
                   thinking=False)
    out = strip_think(res.content or "")
    if not out:
        raise AviError("the LLM replied with an empty overview")
    with _OVERVIEWS_LOCK:
        _OVERVIEWS[key] = out
        while len(_OVERVIEWS) > _OVERVIEWS_MAX:
            _OVERVIEWS.popitem(last=False)
    return out, False


def _named_segments(text: str, rows: list[dict]) -> list[dict]:
    """The rows whose time range (as :func:`fmt_range` writes it) the text names after "Relevant parts:", in the
    order named; [] when it names none."""
    m = re.search(r"relevant parts:(.*)", text, re.I | re.S)
    if not m:
        return []
    part = m.group(1)
    found = []
    for r in rows:
        pos = part.find(fmt_range(r["start_s"], r["end_s"]))
        if pos >= 0:
            found.append((pos, r))
    return [r for _, r in sorted(found, key=lambda x: x[0])]


# ===================================================================== graph_retrieve
