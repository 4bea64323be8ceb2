"""``boundary_detect``: where an event starts and ends (AVI §3.3.2, Perceive phase).

The paper computes "frame-level similarity scores using a CLIP model" and returns
``[t_start, t_end]``. Two methods, one observation shape:

* **clip** (a :class:`~avi.backends.clip_scorer.FrameTextScorer` is configured):
  frames are sampled at the index rate (2 fps) over the ranges, each is scored
  against the event text (cosine similarity), the curve is smoothed with a
  centred moving average over :data:`SMOOTH_WINDOW` frames (within each range),
  thresholded at :func:`half_range_threshold`, and the contiguous run of frames
  above the threshold with the largest area above it wins.
* **shots** (cpu fallback, no CLIP weights): the video's hard cuts
  (:mod:`avi.video.shots`, PySceneDetect on every frame; without it, shot changes
  from HSV colour histograms of the sampled frames,
  :func:`avi.video.analysis.frame_stats`) split the ranges into shots; each
  shot is scored by the embedding similarity between the event and (a) the
  captions of the clips it overlaps (overlap-weighted) and (b) a short
  description of the shot itself: what the detector sees in its middle frame
  (classes with position and size), its dominant colours and its on-screen text
  (what the index's OCR read inside the shot; shots where the index read no
  frame get OCR on their middle frame). The best run of shots is chosen with the
  run rule, above :func:`median_max_threshold` (robust to one unrelated shot);
  its bounds are shot boundaries.

Times are seconds. A sampled frame stands for the time nearer to it than to its
neighbours, so a segment's bounds are the midpoints to the first frames outside
it (clipped to the requested range): with frames every 0.5 s they are within
±0.25 s of the true change. Shot boundaries are the cut times of the shot list
(to the frame), or without it the midpoints between the last sampled frame of
one shot and the first of the next.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from avi.backends.box_words import box_words, shot_scale
from avi.backends.detector import all_detections
from avi.backends.ocr import read_lines
from avi.errors import AviError
from avi.tools.base import Observation, Query, TimeRanges, ToolContext, clip_ranges, sample_times, tool
from avi.video.analysis import colour_names, frame_stats
from avi.video.spans import merge_spans
from avi.video.timecode import fmt_range

SMOOTH_WINDOW = 3
"""Frames in the centred moving average of the similarity curve (odd)."""
THRESHOLD_FRACTION = 0.5
"""Threshold = min + THRESHOLD_FRACTION * (max - min) of the (smoothed) scores."""
WEAK_SPREAD = 0.02
"""A max - min spread of cosine similarities below this is reported as weak evidence."""
CAPTION_WEIGHT = 0.5
"""cpu fallback: weight of the clip-caption similarity against the shot description's."""
MAX_LISTED_SHOTS = 8
"""cpu fallback: with this many shots or fewer, the observation lists each shot with its description."""
MAX_SHOT_OBJECTS = 4
"""cpu fallback: at most this many detected classes (largest box first) describe a shot's middle frame."""
MAX_OCR_SHOTS = 6
"""cpu fallback: at most this many shots the index never OCR'd (the longest first) get OCR on their middle frame."""

BOUNDARY_DEFAULT_MAX_FRAMES = 240


# --------------------------------------------------------------------- curve helpers


def assign_groups(times: list[float], ranges: list[list[float]]) -> list[int]:
    """Index of the (merged, sorted) range each time belongs to: the one containing it, else the nearest.

    Decoded frame times can fall a frame outside the requested range; they stay with their range.
    """
    groups = []
    for t in times:
        dist = [0.0 if s <= t <= e else min(abs(t - s), abs(t - e)) for s, e in ranges]
        groups.append(int(np.argmin(dist)))
    return groups


def moving_average(values: np.ndarray, groups: list[int], window: int = SMOOTH_WINDOW) -> np.ndarray:
    """Centred moving average of ``values`` over ``window`` samples, never across groups.

    At a group's edges the window is truncated (the mean of the samples that exist),
    so a step edge stays where it is: ``[0, 0, 1, 1]`` becomes ``[0, 1/3, 2/3, 1]``.

    Args:
        values: shape (n,).
        groups: length n; samples with different group ids are never averaged together.
        window: odd number of samples (1 = no smoothing).

    Returns:
        float64 array of shape (n,).
    """
    values = np.asarray(values, dtype=np.float64)
    half = max(0, int(window) // 2)
    out = np.empty_like(values)
    g = np.asarray(groups)
    for i in range(len(values)):
        lo, hi = max(0, i - half), min(len(values), i + half + 1)
        idx = [j for j in range(lo, hi) if g[j] == g[i]]
        out[i] = values[idx].mean()
    return out


def median_max_threshold(values: np.ndarray, fraction: float = THRESHOLD_FRACTION) -> float:
    """``median + fraction * (max - median)`` of ``values``: the threshold for shot scores (cpu fallback).

    Shots are few (often under ten), and one shot that shares nothing with the event (a black frame, an
    aerial view) drags the minimum down, so that :func:`half_range_threshold` lets ordinary neighbours of the
    best shot join its run. The median is not moved by such an outlier. It still always keeps the peak, and a
    flat set of scores gives the whole range.
    """
    values = np.asarray(values, dtype=np.float64)
    mid, hi = float(np.median(values)), float(values.max())
    return mid + fraction * (hi - mid)


def half_range_threshold(values: np.ndarray, fraction: float = THRESHOLD_FRACTION) -> float:
    """``min + fraction * (max - min)`` of ``values`` (the half-maximum rule for ``fraction=0.5``).

    Chosen over ``mean + k * std`` because it is scale-free across CLIP models (whose
    cosine similarities live in different narrow bands), always keeps the peak, and
    does not cut into an event that fills most of the range (where the mean is high).
    A flat curve gives ``min``: every sample is "above", and the whole range is returned.
    """
    values = np.asarray(values, dtype=np.float64)
    lo, hi = float(values.min()), float(values.max())
    return lo + fraction * (hi - lo)


def unit_spans(times: list[float], groups: list[int], ranges: list[list[float]]) -> list[tuple[float, float]]:
    """The time span each sample stands for: midpoints to its neighbours in the same group,
    the group's range bounds at its ends (seconds)."""
    spans = []
    n = len(times)
    for i, t in enumerate(times):
        rs, re = ranges[groups[i]]
        start = rs if i == 0 or groups[i - 1] != groups[i] else (times[i - 1] + t) / 2
        end = re if i == n - 1 or groups[i + 1] != groups[i] else (t + times[i + 1]) / 2
        start, end = min(max(start, rs), re), max(min(end, re), rs)
        spans.append((round(start, 3), round(max(start, end), 3)))
    return spans


@dataclass(frozen=True)
class Run:
    """A contiguous run of samples at or above the threshold within one group.

    Attributes:
        first, last: sample indices (inclusive).
        start_s, end_s: the run's time bounds in seconds.
        area: sum over its samples of ``(score - threshold) * weight``.
        peak: highest score in the run; ``peak_s``: the time of that sample.
    """

    first: int
    last: int
    start_s: float
    end_s: float
    area: float
    peak: float
    peak_s: float


def runs_above(scores: np.ndarray, threshold: float, groups: list[int], spans: list[tuple[float, float]],
               times: list[float], weights: np.ndarray | None = None) -> list[Run]:
    """All runs of samples with ``score >= threshold`` (never spanning two groups), best first.

    Best = largest area above the threshold (so a long moderate run can beat a short
    spike, and a higher run beats an equally long lower one); ties go to the higher
    peak, then the longer run (total weight: a flat curve gives the longest range),
    then the earlier run.

    Args:
        scores: shape (n,); ``weights``: shape (n,) (default 1 per sample).
    """
    scores = np.asarray(scores, dtype=np.float64)
    weights = np.ones(len(scores)) if weights is None else np.asarray(weights, dtype=np.float64)
    above = scores >= threshold - 1e-12
    runs: list[tuple[Run, float]] = []
    i = 0
    while i < len(scores):
        if not above[i]:
            i += 1
            continue
        j = i
        while j + 1 < len(scores) and above[j + 1] and groups[j + 1] == groups[i]:
            j += 1
        seg = slice(i, j + 1)
        k = i + int(np.argmax(scores[seg]))
        runs.append((Run(i, j, spans[i][0], spans[j][1], float(np.sum((scores[seg] - threshold) * weights[seg])),
                         float(scores[k]), float(times[k])), float(weights[seg].sum())))
        i = j + 1
    runs.sort(key=lambda rw: (-round(rw[0].area, 9), -round(rw[0].peak, 9), -rw[1], rw[0].start_s))
    return [r for r, _ in runs]


# --------------------------------------------------------------------- the two methods


def _clip_curve(scorer, frames, event: str, groups: list[int]) -> dict:
    raw = np.asarray(scorer.score([f.image for f in frames], event), dtype=np.float64)
    if raw.shape != (len(frames),):
        raise AviError(f"{scorer.name} returned scores of shape {raw.shape} for {len(frames)} frames")
    smoothed = moving_average(raw, groups, SMOOTH_WINDOW)
    return {"raw": raw, "smoothed": smoothed, "weights": None, "units": None}


def _shot_objects(ctx: ToolContext, frame) -> tuple[str, str]:
    """What the detector sees in a shot's middle frame: ``("person (centre, very large); face (centre, large)",
    shot scale)``, one box per class, largest first, at most :data:`MAX_SHOT_OBJECTS`; the scale is
    :func:`~avi.backends.box_words.shot_scale`. Empty strings without a detector."""
    det = getattr(ctx.backends, "detector", None)
    if det is None:
        return "", ""
    dets = all_detections(det, frame)
    best: dict[str, object] = {}
    for d in dets:
        name = d.cls or d.label
        if name not in best or d.score > best[name].score:
            best[name] = d
    area = {k: (d.box[2] - d.box[0]) * (d.box[3] - d.box[1]) for k, d in best.items()}
    names = sorted(best, key=lambda k: -area[k])[:MAX_SHOT_OBJECTS]
    return ("; ".join(f"{k} ({box_words(best[k].box, best[k].frame_size)})" for k in names),
            shot_scale(dets, frame.image.shape[0]))


def _short(text: str, limit: int = 140) -> str:
    return text if len(text) <= limit else text[:limit - 3].rstrip() + "..."


def _shot_description(texts: list[str], image: np.ndarray, objects: str = "", scale: str = "") -> str:
    parts = []
    if scale:
        parts.append(f"A {scale}.")
    if objects:
        parts.append(f"Seen: {objects}.")
    if texts:
        parts.append("On-screen text: " + "; ".join(f'"{t}"' for t in texts) + ".")
    colours = colour_names(image)
    if colours:
        parts.append("Dominant colours: " + ", ".join(f"{n} {round(100 * s)}%" for n, s in colours) + ".")
    return " ".join(parts) or "No on-screen text."


def _shot_curve(ctx: ToolContext, frames, event: str, groups: list[int], ranges: list[list[float]]) -> dict:
    times = [f.t_s for f in frames]
    # 1. shots: split every range at its hard cuts. The video's shot list (every frame, avi.video.shots) places
    #    a cut to the frame; without it, the colour-histogram changes of the sampled frames, at their midpoints.
    shot_list = ctx.shot_list() if hasattr(ctx, "shot_list") else None
    shot_of = [0] * len(frames)
    shots: list[dict] = []
    boundaries: list[float] = []
    for g, (rs, re) in enumerate(ranges):
        idx = [i for i in range(len(frames)) if groups[i] == g]
        if not idx:
            continue
        if shot_list is not None:
            edges = shot_list.cuts_in(rs, re)
            start, members = rs, []
            for i in idx:
                while edges and times[i] >= edges[0] - 1e-6:
                    if members:  # a shot shorter than the sampling step has no frame: it joins the next one
                        shots.append({"start_s": start, "end_s": edges[0], "frames": members})
                        boundaries.append(edges[0])
                        start, members = edges[0], []
                    edges.pop(0)
                members.append(i)
            shots.append({"start_s": start, "end_s": re, "frames": members})
            continue
        # frame_stats' default cut threshold: the same shot changes as the perception captions report
        cuts = set(frame_stats([times[i] for i in idx], [frames[i].image for i in idx]).shot_changes_s) \
            if len(idx) > 1 else set()
        start, members = rs, []
        for pos, i in enumerate(idx):
            if pos > 0 and times[i] in cuts:
                b = round((times[idx[pos - 1]] + times[i]) / 2, 3)
                shots.append({"start_s": start, "end_s": b, "frames": members})
                boundaries.append(b)
                start, members = b, []
            members.append(i)
        shots.append({"start_s": start, "end_s": re, "frames": members})
    for k, shot in enumerate(shots):
        for i in shot["frames"]:
            shot_of[i] = k
    # 2. what each shot shows: on-screen text and dominant colours. The text comes from the OCR the index
    #    already ran (perception captions keep each text with the time it was read); shots without an OCR'd
    #    frame of the index inside them (short ones) get OCR on their middle frame, the longest first.
    captions = list(getattr(ctx.index, "captions", None) or [])
    index_ocr = [(float(d["t_s"]), str(d["text"])) for c in captions for d in (c.data or {}).get("ocr", [])
                 if isinstance(d, dict) and "t_s" in d and "text" in d]
    index_ocr_frames = [float(t) for c in captions for t in (c.data or {}).get("ocr_frames_s", [])]

    def inside(t: float, shot: dict) -> bool:
        return shot["start_s"] <= t < shot["end_s"] or (t == shot["end_s"] == ranges[-1][1])

    ocr = getattr(ctx.backends, "ocr", None)
    uncovered = [k for k, sh in enumerate(shots) if not any(inside(t, sh) for t in index_ocr_frames)]
    uncovered.sort(key=lambda k: shots[k]["start_s"] - shots[k]["end_s"])  # longest first
    live = set(uncovered[:MAX_OCR_SHOTS]) if ocr is not None else set()
    ocr_frames_s = []
    for k, shot in enumerate(shots):
        mid = frames[shot["frames"][len(shot["frames"]) // 2]]
        texts = [text for t, text in index_ocr if inside(t, shot)]
        if k in live:
            ocr_frames_s.append(mid.t_s)
            texts += [line.text for line in read_lines(ocr, mid, (), ctx.scope.text_script)
                      if sum(ch.isalnum() for ch in line.text) >= 2]
        shot["text"] = list(dict.fromkeys(texts))
        shot["objects"], shot["scale"] = _shot_objects(ctx, mid)
        shot["description"] = _shot_description(shot["text"], mid.image, shot["objects"], shot["scale"])
    # 3. score: similarity of the event with the overlapping clips' captions and with the shot's description
    overlaps = []
    for shot in shots:
        ov = [(c, min(c.end_s, shot["end_s"]) - max(c.start_s, shot["start_s"])) for c in captions]
        ov = [(c, w) for c, w in ov if w > 1e-6]
        if not ov:  # a zero-length shot (a [t, t] range): the clip containing it
            ov = [(c, 1.0) for c in captions if c.start_s <= shot["start_s"] <= c.end_s][:1]
        overlaps.append(ov)
    cap_texts = list(dict.fromkeys(c.text for ov in overlaps for c, _ in ov))
    vecs = ctx.backends.embedder.embed([event] + cap_texts + [s["description"] for s in shots])
    q = vecs[0]
    cap_sim = {t: float(v @ q) for t, v in zip(cap_texts, vecs[1:1 + len(cap_texts)])}
    desc_sim = [float(v @ q) for v in vecs[1 + len(cap_texts):]]
    scores = []
    for k, shot in enumerate(shots):
        ov = overlaps[k]
        shot["description_similarity"] = round(desc_sim[k], 4)
        if ov:
            w = np.array([x for _, x in ov])
            cs = float(np.dot(w, [cap_sim[c.text] for c, _ in ov]) / w.sum())
            shot["caption_similarity"] = round(cs, 4)
            shot["clips"] = [c.clip_index for c, _ in ov]
            score = CAPTION_WEIGHT * cs + (1 - CAPTION_WEIGHT) * desc_sim[k]
        else:
            score = desc_sim[k]
        shot["score"] = round(score, 4)
        scores.append(score)
    step = 1.0 / ctx.settings.fps
    return {"raw": np.array([scores[shot_of[i]] for i in range(len(frames))]), "smoothed": None,
            "cut_method": shot_list.method if shot_list is not None else "colour histograms of the sampled frames",
            "shots": shots, "shot_of": shot_of, "boundaries": boundaries, "ocr_frames_s": ocr_frames_s,
            "unit_scores": np.array(scores),
            "weights": np.array([max(s["end_s"] - s["start_s"], step) for s in shots])}


# --------------------------------------------------------------------- the tool


@tool("perceive")
def boundary_detect(ctx: ToolContext, time_ranges: TimeRanges, event: Query) -> Observation:
    """Find when an event starts and ends inside the given time ranges; returns [t_start, t_end] in seconds.

    Args:
        time_ranges: where to search, [[start_s, end_s], ...] in seconds (e.g. the clips retrieved for the event).
        event: a short description of what is seen during the event, e.g. "a red car drives past".
    """
    event = event.strip()
    if not event:
        raise ValueError('event is empty: describe what is seen during the event, e.g. "a red car drives past"')
    ranges, notes = clip_ranges(ctx, time_ranges)
    ranges = merge_spans(ranges, gap_s=1e-6)
    max_frames = int(getattr(ctx.settings, "boundary_max_frames", BOUNDARY_DEFAULT_MAX_FRAMES))
    times = (ctx.budget_times(ranges, max_frames, notes) if hasattr(ctx, "budget_times")
             else sample_times(ranges, ctx.settings.fps, max_frames))
    decoded = ctx.video.frames_at(times)
    frames, seen = [], set()
    for f in decoded:  # a low-frame-rate video can return one frame for two sampling times
        if f.t_s not in seen:
            seen.add(f.t_s)
            frames.append(f)
    if not frames:
        raise ValueError(f"no frames could be decoded in {', '.join(fmt_range(s, e) for s, e in ranges)}; "
                         f"try other time ranges")
    times = [f.t_s for f in frames]
    groups = assign_groups(times, ranges)

    scorer = None
    try:
        scorer = getattr(ctx.backends, "clip_scorer", None)
    except AviError as exc:  # configured but not loadable: say so and use the fallback
        notes.append(f"CLIP scorer unavailable ({exc}); used the shot-based fallback")
    if scorer is not None:
        method = "clip"
        curve = _clip_curve(scorer, frames, event, groups)
        unit_scores, weights = curve["smoothed"], None
        u_groups, u_times, spans = groups, times, unit_spans(times, groups, ranges)
        how = f"CLIP frame–text similarity, {scorer.name}"
    else:
        method = "shots"
        curve = _shot_curve(ctx, frames, event, groups, ranges)
        shots = curve["shots"]
        unit_scores, weights = curve["unit_scores"], curve["weights"]
        u_groups = [groups[s["frames"][0]] for s in shots]
        u_times = [times[s["frames"][len(s["frames"]) // 2]] for s in shots]
        spans = [(s["start_s"], s["end_s"]) for s in shots]
        cut_how = "hard cuts found on every frame" if curve["cut_method"] != "colour histograms of the sampled frames" \
            else "colour-histogram shot changes"
        how = (f"no CLIP on this profile: {cut_how} scored by similarity of the event "
               "with clip captions and the shots' on-screen text and colours; bounds are shot changes")
    threshold = half_range_threshold(unit_scores) if method == "clip" else median_max_threshold(unit_scores)
    runs = runs_above(unit_scores, threshold, u_groups, spans, u_times, weights)
    best = runs[0]
    spread = float(np.max(unit_scores) - np.min(unit_scores))
    t_start, t_end = round(best.start_s, 2), round(best.end_s, 2)

    where = f"looked at {len(frames)} frames in " + ", ".join(fmt_range(s, e) for s, e in ranges)
    lines = [f"boundary_detect ({how}) {where}."]
    if method == "shots":
        b = curve["boundaries"]
        lines.append(f"{len(b)} shot change{'s' if len(b) != 1 else ''}"
                     + (" at " + ", ".join(f"{t:.1f}s" for t in b[:20]) + ("..." if len(b) > 20 else "") if b else "")
                     + f"; {len(curve['shots'])} shot{'s' if len(curve['shots']) != 1 else ''}.")
        if 1 < len(curve["shots"]) <= MAX_LISTED_SHOTS:
            lines += [f"  shot {k + 1} {fmt_range(sh['start_s'], sh['end_s'])}: {_short(sh['description'])}"
                      for k, sh in enumerate(curve["shots"])]
        n_shots = best.last - best.first + 1
        what = f"shot{'s' if n_shots > 1 else ''} {best.first + 1}" + (f"–{best.last + 1}" if n_shots > 1 else "")
        lines.append(f'Event "{event}": from {t_start:.1f}s to {t_end:.1f}s ({what}, similarity {best.peak:.3f}; '
                     f"threshold {threshold:.3f}, half-way between the median and the highest shot score).")
    else:
        lines.append(f'Event "{event}": from {t_start:.1f}s to {t_end:.1f}s (peak similarity {best.peak:.3f} at '
                     f"{best.peak_s:.1f}s; threshold {threshold:.3f}, half-way between the smoothed curve's "
                     f"min {np.min(unit_scores):.3f} and max {np.max(unit_scores):.3f}).")
    if spread < 1e-9:
        lines.append("The scores are flat: the event could not be placed inside these ranges; the whole "
                     + ("range is" if len(ranges) == 1 else "longest range is") + " returned.")
    elif spread < WEAK_SPREAD:
        lines.append(f"Weak evidence: the scores vary by only {spread:.3f}; the event may be absent from these "
                     f"ranges or fill all of them.")
    if len(runs) > 1:
        lines.append("Other candidates: " + ", ".join(f"{fmt_range(r.start_s, r.end_s)} (peak {r.peak:.3f})"
                                                      for r in runs[1:3]) + ".")
    if notes:
        lines.append("Note: " + "; ".join(notes))

    def r4(a):
        return [round(float(x), 4) for x in a]

    data = {"method": method, "event": event, "segment": [t_start, t_end], "threshold": round(threshold, 4),
            "threshold_rule": (f"min + {THRESHOLD_FRACTION} * (max - min)" if method == "clip"
                               else f"median + {THRESHOLD_FRACTION} * (max - median)"), "spread": round(spread, 4),
            "times": times, "raw": r4(curve["raw"]),
            "smoothed": r4(curve["smoothed"] if curve["smoothed"] is not None else curve["raw"]),
            "candidates": [{"segment": [round(r.start_s, 2), round(r.end_s, 2)], "area": round(r.area, 4),
                            "peak": round(r.peak, 4), "peak_s": r.peak_s} for r in runs[:5]]}
    if method == "clip":
        data.update(scorer=scorer.name, smooth_window=SMOOTH_WINDOW)
    else:
        data.update(shot_boundaries_s=curve["boundaries"], cut_method=curve["cut_method"],
                    ocr_frames_s=curve["ocr_frames_s"],
                    shots=[{k: v for k, v in s.items() if k != "frames"} | {"n_frames": len(s["frames"])}
                           for s in curve["shots"]])
    return Observation("\n".join(lines), data, times, [[t_start, t_end]], notes=notes)
