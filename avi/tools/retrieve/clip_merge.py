"""``clip_merge`` (AVI §3.3.1): adjacent or near ranges merged when their captions agree."""

from __future__ import annotations

import numpy as np

from avi.tools.base import Observation, TimeRanges, ToolContext, clip_ranges, tool
from avi.tools.retrieve.common import (
    caption_vectors,
    captions_of,
    clips_in,
    f2,
    fit_lines,
    max_chars,
    merge_min_cosine,
    shorten,
)
from avi.video.timecode import fmt_range


@tool("retrieve")
def clip_merge(ctx: ToolContext, clips: TimeRanges) -> Observation:
    """Merge adjacent or nearby clips that show the same thing into longer ranges (for events cut across clips).

    AVI §3.3.1 ``clip_merge``. The ranges are clipped to the video and sorted by
    start; a range joins the group before it when it overlaps it, or when the gap
    between them is at most one clip length (``settings.clip_seconds``, 5 s) and
    the cosine similarity between the next range's captions and the group's
    captions (mean of the unit caption embeddings of the clips they overlap) is at
    least :func:`merge_min_cosine` (the embedder's, ``avi.config_embedders.EMBEDDER_SETTINGS``; 0.5 for MiniLM).
    A range with no caption only merges by
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
    caps = captions_of(ctx)
    vecs = caption_vectors(ctx, caps) if caps else np.zeros((0, 1))
    gap_max = float(getattr(ctx.settings, "clip_seconds", 5.0) or 5.0)
    min_cos = merge_min_cosine(ctx)

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
        cl = clips_in(caps, s, e)
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
            elif sim < min_cos:
                why = f"captions differ, similarity {f2(sim)}"
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
             f"is <= {gap_max:g}s and the captions agree, similarity >= {min_cos:.2f}; time order):"]
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
            gist = shorten(gist, 160) + " Text seen in the range: " + "; ".join(f'"{t}"' for t in missing[:6])
        ins = ",".join(f"#{k}" for k in g["inputs"])
        head = fmt_range(g["start_s"], g["end_s"])
        if len(g["inputs"]) > 1:
            sim_txt = f", similarity >= {min(g['sims']):.2f}" if g["sims"] else ", overlapping"
            head += f" merged {ins}{sim_txt}"
        else:
            head += f" {ins} alone" + (f" (near the previous one, but {g['why']})" if g["why"] else "")
        lines.append(head + (f": {shorten(gist, 260)}" if gist else ": (no caption)"))
        merged_data.append({"start_s": g["start_s"], "end_s": g["end_s"], "inputs": g["inputs"],
                            "clip_indices": [caps[j].clip_index for j in cl],
                            "similarity": round(min(g["sims"]), 4) if g["sims"] else None, "gist": gist})
    tail = ["Note: " + "; ".join(notes)] if notes else []
    return Observation(fit_lines(lines, max_chars(ctx), tail),
                       {"merged": merged_data, "threshold": min_cos, "max_gap_s": gap_max},
                       evidence=[[g["start_s"], g["end_s"]] for g in groups], notes=notes)


# ===================================================================== global_explore
