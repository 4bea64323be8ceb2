"""Retrieve tools (AVI §3.3.1): find where in the video to look.

All four work on the index alone (captions, their Chroma embeddings, the
summary, the entity graph) and never call the LLM, so they are cheap:

* ``clip_retrieve``: top-k clips by cosine similarity of caption and query embeddings;
* ``clip_merge``: merges adjacent or near ranges whose captions agree
  (gap <= one clip length, caption cosine >= :data:`MERGE_MIN_COSINE`);
* ``global_explore``: the hierarchical summary (video + segments) ranked by
  relevance to a query, with candidate segments; falls back to
  :data:`FALLBACK_SEGMENT_S` windows of captions when the index has no summary;
* ``graph_retrieve``: entity lookup in the entity graph (AVI §3.2.3, §6.2), k-hop
  traversal and importance-ranked (entity, relation, entity, time) triples.

Embeddings of captions, summaries and graph nodes are computed once per index
and embedder and kept in a small in-process cache (:func:`cached_vectors`).
All times are seconds from the start of the video.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Annotated, Any

import networkx as nx
import numpy as np
from pydantic import Field

from avi.index.graph import importance, node_text
from avi.tools.base import Observation, Query, TimeRanges, ToolContext, clip_ranges, tool
from avi.video.spans import merge_spans
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
    focus = getattr(ctx, "focus_ranges", None) or []
    hits = ctx.index.search(query, ctx.backends.embedder, top_k=max(top_k, 64) if focus else top_k)
    if focus:  # the question names where to look (its time words): hits there first
        inside = [h for h in hits if any(h.caption.start_s < e + 2.5 and h.caption.end_s > s - 2.5 for s, e in focus)]
        hits = (inside + [h for h in hits if h not in inside])[:top_k]
    captioner = ctx.index.manifest.get("captioner", "")
    header = f'{len(hits)} clips most similar to "{query}" (time order; captions are hints, confirm visually)'
    if captioner.startswith("perception"):
        header += "; captions are measured (detector counts, OCR, colours), not a VLM description"
    # Issue 14: the most similar clips must reach the model. Clips are taken best first until the
    # observation budget is spent (each caption cut to what fits), then shown in time order.
    budget = _max_chars(ctx) - len(header) - 120
    chosen, used = [], 0
    for h in hits:
        text = " ".join(h.caption.text.split())
        room = min(_CAPTION_CHARS, budget - used - 40)
        if room < 60:
            break
        if len(text) > room:
            text = text[:room - 1] + "…"
        line = f"{fmt_range(h.caption.start_s, h.caption.end_s)} sim {h.similarity:.2f}: {text}"
        chosen.append((h, line))
        used += len(line) + 1
    best = [h for h, _ in chosen[:3]]
    lines = [header.replace(f"{len(hits)} clips", f"{len(chosen)} clips") + ":"]
    lines += [line for _, line in sorted(chosen, key=lambda x: x[0].caption.start_s)]
    if len(hits) > len(chosen):
        lines.append(f"({len(hits) - len(chosen)} less similar clips left out)")
    if len(chosen) > 1:
        lines.append("Most similar first: " + ", ".join(fmt_range(h.caption.start_s, h.caption.end_s) for h in best))
    hits = [h for h, _ in chosen]
    return Observation(
        "\n".join(lines),
        {"query": query, "clips": [{"clip_index": h.caption.clip_index, "start_s": h.caption.start_s,
                                    "end_s": h.caption.end_s, "similarity": round(h.similarity, 4),
                                    "caption": h.caption.text} for h in hits]},
    )


# ===================================================================== shared helpers

MERGE_MIN_COSINE = 0.5
"""clip_merge: least cosine similarity between a group's captions (mean vector) and the next range's.
Calibrated on all-MiniLM-L6-v2: captions of one continuous scene score 0.45-0.8 against each
other (about 0.55 against the mean of the others), unrelated captions below 0.15."""

FALLBACK_SEGMENT_S = 60.0
"""global_explore: segment length (s) when the index has no LLM summary."""

SUMMARY_WEIGHT = 0.5
"""global_explore: weight of the summary similarity in a segment's score (the rest: its captions')."""

ENTITY_MIN_COSINE = 0.4
"""graph_retrieve: least query-to-entity cosine for a match (calibrated on all-MiniLM-L6-v2, where
unrelated short texts score about 0.2-0.3 and a paraphrase of an entity 0.45-0.8)."""

SEED_MARGIN = 0.1
"""graph_retrieve: entities within this cosine of the best match are also traversal seeds (at most 3)."""

_CACHE: OrderedDict[tuple, np.ndarray] = OrderedDict()
_CACHE_MAX = 32
_CACHE_LOCK = threading.Lock()


def cached_vectors(index: Any, embedder: Any, kind: str, texts: list[str],
                   compute: Callable[[], np.ndarray] | None = None) -> np.ndarray:
    """Unit embeddings of ``texts``, computed once per index, embedder and text list in this process.

    The key is (index path, embedder name, ``kind``, sha1 of the texts), so an index
    rebuilt in place or another embedder never gets stale vectors. At most
    ``_CACHE_MAX`` entries are kept (least recently used dropped).

    Args:
        index: a :class:`~avi.index.store.VideoIndex` (or anything; its ``path`` is used when present).
        embedder: the :class:`~avi.backends.embedder.Embedder`.
        kind: what the texts are (``"captions"``, ``"summary"``, ``"graph"``).
        texts: the texts, in the order of the rows returned.
        compute: returns the vectors when not cached (default: ``embedder.embed(texts)``).

    Returns:
        float64 array of shape (len(texts), dim), rows L2-normalised (zero rows stay zero).
    """
    digest = hashlib.sha1("\x1f".join(texts).encode("utf-8", "replace")).hexdigest()
    key = (str(getattr(index, "path", id(index))), str(getattr(embedder, "name", type(embedder).__name__)), kind,
           digest)
    with _CACHE_LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    if not texts:
        vecs = np.zeros((0, int(getattr(embedder, "dim", 1) or 1)))
    else:
        vecs = np.asarray(compute() if compute is not None else embedder.embed(texts), dtype=np.float64)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        vecs = vecs / np.where(norms > 0, norms, 1.0)
    with _CACHE_LOCK:
        _CACHE[key] = vecs
        while len(_CACHE) > _CACHE_MAX:
            _CACHE.popitem(last=False)
    return vecs


def _query_vec(ctx: ToolContext, query: str) -> np.ndarray:
    v = np.asarray(ctx.backends.embedder.embed([query]), dtype=np.float64)[0]
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def _captions(ctx: ToolContext) -> list:
    return sorted(ctx.index.captions, key=lambda c: (c.start_s, c.clip_index))


def _caption_vectors(ctx: ToolContext, caps: list) -> np.ndarray:
    """Unit caption embeddings, rows in the order of ``caps``: the ones stored in Chroma at build
    time when they can be read, else embedded now (same text as the build: empty -> "(no caption)")."""
    texts = [c.text or "(no caption)" for c in caps]
    embedder = ctx.backends.embedder

    def compute() -> np.ndarray:
        try:
            col = ctx.index.collection(embedder)
            got = col.get(include=["embeddings", "metadatas"])
            by_clip = {int(m["clip_index"]): e for m, e in zip(got["metadatas"], got["embeddings"])}
            if all(c.clip_index in by_clip for c in caps):
                return np.asarray([by_clip[c.clip_index] for c in caps], dtype=np.float64)
        except Exception:  # no collection (hand-made or damaged index): embed the texts instead
            pass
        return embedder.embed(texts)

    return cached_vectors(ctx.index, embedder, "captions", texts, compute)


def _clips_in(caps: list, s: float, e: float) -> list[int]:
    """Positions in ``caps`` of the clips overlapping [s, e] (the clip containing s when s == e)."""
    if e > s:
        return [i for i, c in enumerate(caps) if c.start_s < e and c.end_s > s]
    return [i for i, c in enumerate(caps) if c.start_s <= s < c.end_s or (i == len(caps) - 1 and s == c.end_s)]


def _short(text: str, n: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n - 1] + "…"


def _max_chars(ctx: ToolContext) -> int:
    return int(getattr(ctx.settings, "observation_max_chars", 2400) or 2400)


def _fit(lines: list[str], limit: int, tail: list[str] = ()) -> str:
    """Join ``lines`` (dropping those that do not fit, from the end) and ``tail`` within ``limit`` characters."""
    budget = limit - sum(len(t) + 1 for t in tail)
    out, size, dropped = [], 0, 0
    for i, line in enumerate(lines):
        if i > 0 and size + len(line) + 1 > budget - 30:
            dropped = len(lines) - i
            break
        out.append(line)
        size += len(line) + 1
    if dropped:
        out.append(f"(+{dropped} more lines left out)")
    return "\n".join(out + list(tail))


def _f2(x: float) -> str:
    return f"{x:.2f}".replace("-0.00", "0.00")


def _spans_text(spans: list[list[float]], n: int = 3) -> str:
    shown = ", ".join(fmt_range(s, e) for s, e in spans[:n])
    return shown + (f" +{len(spans) - n} more" if len(spans) > n else "")


# ===================================================================== clip_merge


@tool("retrieve")
def clip_merge(ctx: ToolContext, clips: TimeRanges) -> Observation:
    """Merge adjacent or nearby clips that show the same thing into longer ranges (for events cut across clips).

    AVI §3.3.1 ``clip_merge``. The ranges are clipped to the video and sorted by
    start; a range joins the group before it when it overlaps it, or when the gap
    between them is at most one clip length (``settings.clip_seconds``, 5 s) and
    the cosine similarity between the next range's captions and the group's
    captions (mean of the unit caption embeddings of the clips they overlap) is at
    least :data:`MERGE_MIN_COSINE` (0.5). A range with no caption only merges by
    overlap. With perception captions (cpu profile), which read alike across
    scenes, a shot change between the group's end and the next range's end (at
    least 0.25 s before it) also keeps them apart. The gist of a group is the caption of its clip nearest the
    group's mean embedding.

    Args:
        clips: time ranges to merge, [[start_s, end_s], ...] in seconds (e.g. clips from clip_retrieve).

    Returns:
        Observation whose text lists the merged ranges in time order with the
        input numbers (1-based) that went into each; ``data["merged"]`` holds
        ``{start_s, end_s, inputs, clip_indices, similarity, gist}`` per range;
        evidence is the merged ranges.

    Raises:
        ValueError: no range overlaps the video.
    """
    kept: list[tuple[int, float, float]] = []
    notes: list[str] = []
    for i, r in enumerate(clips):
        try:
            got, more = clip_ranges(ctx, [r])
        except ValueError:
            notes.append(f"#{i + 1} [{r[0]:g}, {r[1]:g}] is outside the video (0–{ctx.duration_s:.1f}s); skipped")
            continue
        kept.append((i, *got[0]))
        notes += [f"#{i + 1}: {m}" for m in more]
    if not kept:
        clip_ranges(ctx, clips)  # raises the standard "no time range overlaps the video" error
    caps = _captions(ctx)
    vecs = _caption_vectors(ctx, caps) if caps else np.zeros((0, 1))
    gap_max = float(getattr(ctx.settings, "clip_seconds", 5.0) or 5.0)

    def mean_vec(idx: list[int]) -> np.ndarray | None:
        idx = [j for j in idx if caps[j].text.strip()]
        if not idx:
            return None
        v = vecs[idx].mean(axis=0)
        n = float(np.linalg.norm(v))
        return v / n if n > 0 else None

    # Perception captions (cpu profile) read alike across scenes; there a shot change also splits.
    perception = str(ctx.index.manifest.get("captioner", "")).startswith("perception")
    cuts = sorted({float(t) for c in caps for t in c.data.get("shot_changes_s") or []}) if perception else []
    groups: list[dict] = []
    for i, s, e in sorted(kept, key=lambda x: (x[1], x[2], x[0])):
        cl = _clips_in(caps, s, e)
        v = mean_vec(cl)
        g = groups[-1] if groups else None
        sim, why = None, None
        if g is not None and s - g["end_s"] >= 0 and s - g["end_s"] <= gap_max + 1e-6:
            gv = mean_vec(sorted(g["clips"]))
            sim = round(float(gv @ v), 4) if gv is not None and v is not None else None
            cut = next((t for t in cuts if g["end_s"] - 0.25 <= t < e - 0.25), None)
            if cut is not None:
                why = f"shot change at {cut:.1f}s"
            elif sim is None:
                why = "no captions to compare"
            elif sim < MERGE_MIN_COSINE:
                why = f"captions differ, similarity {_f2(sim)}"
        overlap = g is not None and s < g["end_s"]
        if overlap or (g is not None and sim is not None and why is None):
            g["inputs"].append(i + 1)
            g["end_s"] = max(g["end_s"], e)
            g["clips"].update(cl)
            if not overlap:
                g["sims"].append(sim)
        else:
            groups.append({"start_s": s, "end_s": e, "inputs": [i + 1], "clips": set(cl), "sims": [], "why": why})
    lines = [f"clip_merge: {len(kept)} range{'s' if len(kept) != 1 else ''} -> {len(groups)} (merged when the gap "
             f"is <= {gap_max:g}s and the captions agree, similarity >= {MERGE_MIN_COSINE:.2f}; time order):"]
    merged_data = []
    for g in groups:
        cl = sorted(g["clips"])
        v = mean_vec(cl)
        with_text = [j for j in cl if caps[j].text.strip()]
        gist = ""
        if with_text:
            best = with_text[int(np.argmax(vecs[with_text] @ v))] if v is not None else with_text[0]
            gist = caps[best].text
        texts = list(dict.fromkeys(str(o.get("text", "")) for j in cl for o in caps[j].data.get("ocr") or []))
        missing = [t for t in texts if t and t not in gist]
        if missing:  # on-screen text read in other clips of the range (perception captions carry it)
            gist = _short(gist, 160) + " Text seen in the range: " + "; ".join(f'"{t}"' for t in missing[:6])
        ins = ",".join(f"#{k}" for k in g["inputs"])
        head = fmt_range(g["start_s"], g["end_s"])
        if len(g["inputs"]) > 1:
            sim_txt = f", similarity >= {min(g['sims']):.2f}" if g["sims"] else ", overlapping"
            head += f" merged {ins}{sim_txt}"
        else:
            head += f" {ins} alone" + (f" (near the previous one, but {g['why']})" if g["why"] else "")
        lines.append(head + (f": {_short(gist, 260)}" if gist else ": (no caption)"))
        merged_data.append({"start_s": g["start_s"], "end_s": g["end_s"], "inputs": g["inputs"],
                            "clip_indices": [caps[j].clip_index for j in cl],
                            "similarity": round(min(g["sims"]), 4) if g["sims"] else None, "gist": gist})
    tail = ["Note: " + "; ".join(notes)] if notes else []
    return Observation(_fit(lines, _max_chars(ctx), tail),
                       {"merged": merged_data, "threshold": MERGE_MIN_COSINE, "max_gap_s": gap_max},
                       evidence=[[g["start_s"], g["end_s"]] for g in groups], notes=notes)


# ===================================================================== global_explore


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

_ENTITY_KINDS = ("subject", "text", "super")
_SKIP_RELATIONS = ("groups", "contains")  # super -> member, scene -> entity: not entity relations


def _llm_extracted(g: nx.DiGraph) -> bool:
    return bool((g.graph.get("extraction") or {}).get("llm")) or any(
        "llm" in str(d.get("source", "")) for _, d in g.nodes(data=True))


def _entity_line(g: nx.DiGraph, n: str, w: float, sim: float, member_of: dict[str, list[str]]) -> str:
    d = g.nodes[n]
    kind = {"super": "group", "text": "on-screen text"}.get(d.get("kind"), d.get("kind"))
    parts = [f"{d.get('name', n)} ({kind}, w {w:.2f}, match {sim:.2f})"]
    if d.get("kind") == "super":
        names = [str(g.nodes[m].get("name", m)) for m in d.get("members") or [] if m in g]
        parts.append(f"members: {_short(', '.join(names), 160)}")
    attrs = [str(a) for a in d.get("attributes") or []]
    if attrs:
        parts.append("attributes: " + _short(", ".join(attrs), 140))
    if d.get("max_count"):
        parts.append(f"up to {d['max_count']} at once")
    if d.get("spans"):
        parts.append("seen " + _spans_text(d["spans"]))
    acts = d.get("actions") or []
    if acts:
        parts.append("actions: " + "; ".join(f"{a['action']} {fmt_range(a['start_s'], a['end_s'])}"
                                             for a in acts[:3]) + (f" +{len(acts) - 3} more" if len(acts) > 3 else ""))
    if member_of.get(n):
        parts.append("in " + ", ".join(str(g.nodes[s].get("name", s)) for s in member_of[n]))
    return "- " + "; ".join(parts)


@tool("retrieve")
def graph_retrieve(ctx: ToolContext, query: Query, hops: Annotated[int, Field(ge=1, le=2)] = 1,
                   top_k: Annotated[int, Field(ge=1, le=30)] = 10) -> Observation:
    """Look up people, objects or on-screen text in the entity graph; returns their facts and relations with times.

    AVI §3.3.1 ``graph_retrieve`` over the entity graph of §3.2.3/§6.2
    (:mod:`avi.index.graph`). The query is embedded and compared (cosine) with
    every entity's :func:`~avi.index.graph.node_text` (subjects, on-screen
    texts, super-nodes). The best match and the entities within
    :data:`SEED_MARGIN` of it (at most 3, each >= :data:`ENTITY_MIN_COSINE`) are
    the seeds; a super-node seed expands to its members. From the seeds the
    graph is walked ``hops`` steps along entity relations (``co_occurs``,
    ``interacts``; not scene ``contains`` or super-node ``groups``). Every entity
    reached gets the importance ``w = 0.4*freq + 0.3*centrality + 0.3*query_rel``
    (AVI eq. 11-13, :func:`~avi.index.graph.importance`, query_rel computed now),
    and every relation among them the score ``w(a) + w(b)``.

    Args:
        query: the entity to look up (a name, description or on-screen text), or a question about it.
        hops: how many relation steps to walk from the matched entities (1 or 2).
        top_k: how many entities and how many relations to return.

    Returns:
        Observation with the matched entities, the top_k entities by importance
        (kind, attributes, appearance spans, actions) and the top_k relations
        ``(entity, relation, entity, [t_start, t_end])``; ``data`` holds
        ``matches``, ``entities``, ``triples`` (with all spans) and ``llm_graph``;
        evidence is the time spans of the matched entities and returned relations.
        When nothing matches (best cosine < :data:`ENTITY_MIN_COSINE`) an error
        observation lists the nearest known entities.

    Raises:
        ValueError: empty query, or a graph without entities.
    """
    query = query.strip()
    if not query:
        raise ValueError("query is empty; name the person, object or text to look up")
    g: nx.DiGraph = ctx.index.graph
    llm_graph = _llm_extracted(g)
    ents = sorted(n for n, d in g.nodes(data=True) if d.get("kind") in _ENTITY_KINDS)
    no_llm = ("this index's entity graph was built without LLM extraction (graph_llm off), so it holds only "
              "on-screen texts and detected subject types (person, face, object classes), linked when seen together; "
              "for people, actions and interactions use clip_retrieve or frame_analysis")
    if not ents:
        raise ValueError("the entity graph of this video has no entities" + (
            "" if llm_graph else f" ({no_llm})") + "; use clip_retrieve or global_explore instead")
    vecs = cached_vectors(ctx.index, ctx.backends.embedder, "graph",
                          [f"{n}\x1e{node_text(g, n)}" for n in ents],
                          compute=lambda: ctx.backends.embedder.embed([node_text(g, n) for n in ents]))
    q = _query_vec(ctx, query)
    sims = vecs @ q
    order = np.argsort(-sims, kind="stable")
    best = float(sims[order[0]])
    sim_of = {ents[i]: float(sims[i]) for i in range(len(ents))}
    if best < ENTITY_MIN_COSINE:
        near = [ents[i] for i in order[:5]]
        listing = ", ".join(f'"{g.nodes[n].get("name", n)}" ({sim_of[n]:.2f})' for n in near)
        text = (f'graph_retrieve: no entity in the graph matches "{_short(query, 80)}" (best similarity {best:.2f} '
                f"< {ENTITY_MIN_COSINE}). Nearest known entities: {listing}. Query one of these names, or use "
                "clip_retrieve for things that are not entities.")
        if not llm_graph:
            text += f"\nNote: {no_llm}."
        return Observation(text, {"query": query, "unknown": True, "best_similarity": round(best, 4),
                                  "nearest": [{"node": n, "name": g.nodes[n].get("name", n),
                                               "similarity": round(sim_of[n], 4)} for n in near],
                                  "llm_graph": llm_graph}, error=True)
    seeds = [ents[i] for i in order[:3] if sims[i] >= max(ENTITY_MIN_COSINE, best - SEED_MARGIN)]
    start: list[str] = []
    for n in seeds:
        if g.nodes[n].get("kind") == "super":
            start += [m for m in g.nodes[n].get("members") or [] if m in g]
        else:
            start.append(n)
    walk = nx.Graph()
    walk.add_nodes_from(n for n in ents if g.nodes[n].get("kind") != "super")
    walk.add_edges_from((a, b) for a, b, d in g.edges(data=True)
                        if d.get("relation") not in _SKIP_RELATIONS and a in walk and b in walk)
    dist: dict[str, int] = {}
    for n in dict.fromkeys(start):
        for m, k in nx.single_source_shortest_path_length(walk, n, cutoff=hops).items():
            dist[m] = min(dist.get(m, k), k)
    for n in seeds:
        dist.setdefault(n, 0)  # super-node seeds are reported too
    row = {n: i for i, n in enumerate(ents)}
    w = importance(g, q, {n: vecs[row[n]] for n in dist})
    triples, seen = [], set()
    for a, b, d in g.edges(data=True):
        rel = d.get("relation", "related")
        if rel in _SKIP_RELATIONS or a not in dist or b not in dist or a == b:
            continue
        key = (frozenset((a, b)), rel) if rel == "co_occurs" else (a, b, rel)
        if key in seen:
            continue
        seen.add(key)
        spans = merge_spans([list(map(float, sp)) for sp in d.get("spans") or []])
        triples.append({"source": a, "source_name": g.nodes[a].get("name", a), "relation": rel, "target": b,
                        "target_name": g.nodes[b].get("name", b), "descriptions": list(d.get("descriptions") or []),
                        "spans": spans, "t": [spans[0][0], spans[-1][1]] if spans else None,
                        "score": round(w[a] + w[b], 4)})
    triples.sort(key=lambda t: (-t["score"], t["t"][0] if t["t"] else 0.0, t["source"], t["target"]))
    triples = triples[:top_k]
    member_of: dict[str, list[str]] = {}
    for n, d in g.nodes(data=True):
        if d.get("kind") == "super":
            for m in d.get("members") or []:
                member_of.setdefault(m, []).append(n)
    ranked = sorted(dist, key=lambda n: (-w[n], n))[:top_k]
    seed_txt = ", ".join(f'"{g.nodes[n].get("name", n)}" ({sim_of[n]:.2f})' for n in seeds)
    head = (f'graph_retrieve "{_short(query, 80)}": matched {seed_txt}; {len(dist)} entities within {hops} '
            f"hop{'s' if hops > 1 else ''}, ranked by importance w (frequency, centrality, query relevance):")
    ent_lines = [_entity_line(g, n, w[n], sim_of[n], member_of) for n in ranked]
    rel_lines = ["Relations (most important first):"] if triples else ["No relations to other entities within reach."]
    for t in triples:
        rel = t["relation"] + (f": {_short('; '.join(t['descriptions']), 100)}" if t["descriptions"] else "")
        arrow = f"-[{rel}]-" if t["relation"] == "co_occurs" else f"-[{rel}]->"
        rel_lines.append(f"({t['source_name']}) {arrow} ({t['target_name']}) at {_spans_text(t['spans'])}")
    tail = [f"Note: {no_llm}."] if not llm_graph else []
    # entities get at most 55% of the room, so the relations are never all cut off
    room = _max_chars(ctx) - len(head) - sum(len(t) + 1 for t in tail) - 2
    ent_block = _fit(ent_lines, int(room * 0.55))
    text = "\n".join([head, ent_block, _fit(rel_lines, room - len(ent_block) - 1)] + tail)
    evidence = merge_spans([list(map(float, sp)) for n in seeds for sp in g.nodes[n].get("spans") or []]
                           + [sp for t in triples for sp in t["spans"]])
    return Observation(text, {
        "query": query, "hops": hops, "llm_graph": llm_graph,
        "matches": [{"node": n, "name": g.nodes[n].get("name", n), "similarity": round(sim_of[n], 4)} for n in seeds],
        "entities": [{"node": n, "name": g.nodes[n].get("name", n), "kind": g.nodes[n].get("kind"),
                      "hop": dist[n], "importance": round(w[n], 4), "similarity": round(sim_of[n], 4),
                      "attributes": list(g.nodes[n].get("attributes") or []),
                      "spans": g.nodes[n].get("spans") or [], "actions": g.nodes[n].get("actions") or []}
                     for n in ranked],
        "triples": triples}, evidence=evidence)
