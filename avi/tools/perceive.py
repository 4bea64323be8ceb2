"""Perceive tools (AVI §3.3.2): look at the frames themselves.

Implemented here: ``text_extract``, ``object_detect`` and ``frame_analysis``;
``boundary_detect`` is in :mod:`avi.tools.boundary`. Every tool samples frames at
the index's rate (2 fps) inside the requested ranges, thinned uniformly to a
per-call cap, and reports which frames it looked at.
"""

from __future__ import annotations

import statistics

from avi.backends.box_words import box_words
from avi.backends.captioner import normalise_text
from avi.backends.coco_detector import coco_classes_for, text_regions
from avi.backends.ocr import read_lines
from avi.tools.base import (
    VIDEO_TEXT_NOTE,
    Observation,
    Question,
    StrList,
    TimeRanges,
    ToolContext,
    clip_ranges,
    tool,
)
from avi.tools.track_lines import track_report
from avi.video.analysis import box_colours
from avi.video.timecode import fmt_range


def _frames(ctx: ToolContext, time_ranges: list[list[float]], max_frames: int):
    ranges, notes = clip_ranges(ctx, time_ranges)
    frames = ctx.video.frames_at(ctx.budget_times(ranges, max_frames, notes))
    return ranges, notes, frames


def _where(ranges: list[list[float]], times: list[float]) -> str:
    if len(times) <= 6:
        return "looked at the frame" + ("s" if len(times) > 1 else "") + " at " + ", ".join(f"{t:.1f}s" for t in times)
    return f"looked at {len(times)} frames in " + ", ".join(fmt_range(s, e) for s, e in ranges)


def neighbour_gap(times: list[float], fps: float) -> float:
    """Seconds within which two sampled frames count as neighbours: one and a half sampling steps of the index
    rate, or of the frames' own usual spacing when a frame cap thinned them (a 60 s range read at 16 frames
    has them ~4 s apart; with the index step alone no two of them were neighbours, so text seen in every frame
    was reported once per frame and single-frame detections were all dropped)."""
    step = 1.0 / fps
    ts = sorted(times)
    gaps = sorted(b - a for a, b in zip(ts, ts[1:]) if b > a)
    usual = gaps[len(gaps) // 2] if gaps else step
    return 1.5 * max(step, usual) + 1e-6


def count_runs(times: list[float], counts: list[int], gap_s: float) -> str:
    """A per-frame count series as runs: neighbouring frames (at most two ``gap_s`` apart) with the same count
    are one entry, ``"2 at 35.0s–40.0s (11 frames)"``; a lone frame stays ``"3 at 37.5s"``. Every frame's count can
    be read back from the runs, at a fraction of the tokens of one entry per frame.

    Args:
        times: frame times in seconds, ascending, one per count.
        counts: objects found per frame.
        gap_s: neighbour distance in seconds (see ``neighbour_gap``).
    """
    runs: list[list] = []  # [count, first t, last t, frames]
    for t, n in zip(times, counts):
        if runs and runs[-1][0] == n and t - runs[-1][2] <= 2 * gap_s:
            runs[-1][2], runs[-1][3] = t, runs[-1][3] + 1
        else:
            runs.append([n, t, t, 1])
    return ", ".join(f"{n} at {a:.1f}s" if k == 1 else f"{n} at {a:.1f}s–{b:.1f}s ({k} frames)" for n, a, b, k in runs)


def _with_notes(text: str, notes: list[str]) -> str:
    return text + ("\nNote: " + "; ".join(notes) if notes else "")


#: a read of fewer than two letters or digits is kept only at this score (OCR finds glyphs in texture)
SINGLE_GLYPH_SCORE = 0.9
#: two reads whose normalised texts are at least this similar (difflib ratio) are one text read differently
VARIANT_SIMILARITY = 0.7


def _legible(run: dict) -> bool:
    return sum(ch.isalnum() for ch in run["text"]) >= 2 or run["score"] >= SINGLE_GLYPH_SCORE


def merge_variants(runs: list[dict], gap_s: float = 5.0) -> list[dict]:
    """Merge OCR runs that are one text read differently in different frames ("CAMPRODON", "CAMPMODON",
    "MPRODON") into one run named by its most typical read.

    Runs of at least four characters, with different normalised texts at least :data:`VARIANT_SIMILARITY`
    similar (difflib ratio), and at most ``gap_s`` seconds apart, join one group (single link); the same text
    seen again later stays a separate run (it may be shown twice). The group's text is its medoid: the read
    with the highest summed similarity to the group (itself included), weighted by frames and score (a read
    cut at the edge, or a one-off misread, is rarely the medoid). Its span covers every member; the other
    reads are listed as ``variants``.

    Args:
        runs: ``{"text", "first_s", "last_s", "frames", "score", "box"}`` dicts (seconds, pixel xyxy).
        gap_s: the largest time gap between two runs that can be one text read differently (the other reads
            stay listed as variants, so two similar texts merged by mistake are still both in the observation).

    Returns:
        the merged runs (a lone run unchanged).
    """
    from difflib import SequenceMatcher

    keys = [normalise_text(r["text"]).replace(" ", "") for r in runs]
    parent = list(range(len(runs)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    sim = {}
    for i in range(len(runs)):
        for j in range(i + 1, len(runs)):
            apart = max(runs[i]["first_s"], runs[j]["first_s"]) - min(runs[i]["last_s"], runs[j]["last_s"])
            if min(len(keys[i]), len(keys[j])) >= 4 and keys[i] != keys[j] and apart <= gap_s:
                r = SequenceMatcher(None, keys[i], keys[j]).ratio()
                sim[i, j] = sim[j, i] = r
                if r >= VARIANT_SIMILARITY:
                    parent[find(i)] = find(j)
    groups: dict[int, list[int]] = {}
    for i in range(len(runs)):
        groups.setdefault(find(i), []).append(i)
    out = []
    for members in groups.values():
        if len(members) == 1:
            out.append(runs[members[0]])
            continue
        best = max(members, key=lambda i: (sum((1.0 if j == i else sim.get((i, j), 0.0)) * runs[j]["frames"]
                                               * runs[j]["score"] for j in members), runs[i]["score"]))
        merged = dict(runs[best])
        merged.update(first_s=min(runs[i]["first_s"] for i in members), last_s=max(runs[i]["last_s"] for i in members),
                      frames=sum(runs[i]["frames"] for i in members),
                      variants=list(dict.fromkeys(runs[i]["text"] for i in members if keys[i] != keys[best])))
        out.append(merged)
    return out


def _text_lines(runs: list[dict]) -> list[str]:
    """One line per distinct text (``normalise_text``), in the order texts first appear, with every time span
    it was read in: a slide shown twice costs the model one line, not two (issue 17, item 5: fewer prompt
    tokens per question). Score is the best read's; spans are seconds, one decimal."""
    groups: dict[str, list[dict]] = {}
    for r in runs:
        groups.setdefault(normalise_text(r["text"]) or r["text"], []).append(r)
    lines = []
    for group in groups.values():
        best = max(group, key=lambda r: r["score"])
        spans = ", ".join(f"{r['first_s']:.1f}s" + (f"–{r['last_s']:.1f}s" if r["last_s"] > r["first_s"] else "")
                          for r in group)
        variants = list(dict.fromkeys(v for r in group for v in r.get("variants") or ()))
        reads = sum(r["frames"] for r in group)
        lines.append(f'"{best["text"]}" at {spans} (score {best["score"]:.2f}'
                     + (f"; {reads} reads, also read as " + ", ".join(f'"{v}"' for v in variants[:4])
                        if variants else "") + ")")
    return lines


@tool("perceive")
def text_extract(ctx: ToolContext, time_ranges: TimeRanges) -> Observation:
    """Read on-screen text (OCR) in frames of the given time ranges; repeated text is merged across neighbouring frames.

    Args:
        time_ranges: where to read, [[start_s, end_s], ...] in seconds; [t, t] reads the frame at t.
    """
    cap = min(ctx.settings.perceive_max_frames, ctx.scope.text_frames or ctx.settings.perceive_max_frames)
    ranges, notes, frames = _frames(ctx, time_ranges, cap)
    ocr, script = ctx.backends.ocr, ctx.scope.text_script
    detect_all = ctx.backends.detector.detect_all  # cpu: vehicle/screen boxes to read closely
    step = 1.0 / ctx.settings.fps
    join_s = max(2.5 * step, neighbour_gap([f.t_s for f in frames], ctx.settings.fps))
    # De-duplicate across neighbouring frames: one entry per text per run of frames.
    runs: list[dict] = []
    open_runs: dict[str, dict] = {}
    lines_all = []
    for f in frames:
        seen = set()
        for line in read_lines(ocr, f, text_regions(detect_all(f)) if detect_all is not None else (), script):
            key = normalise_text(line.text)
            if not key or key in seen:
                continue
            seen.add(key)
            lines_all.append(line.to_dict())
            run = open_runs.get(key)
            if run is not None and f.t_s - run["last_s"] <= join_s + 1e-6:
                run["last_s"] = f.t_s
                run["frames"] += 1
                if line.score > run["score"]:
                    run.update(text=line.text, score=line.score, box=list(line.box))
            else:
                run = {"text": line.text, "first_s": f.t_s, "last_s": f.t_s, "frames": 1, "score": line.score,
                       "box": list(line.box)}
                runs.append(run)
                open_runs[key] = run
    times = [f.t_s for f in frames]
    spacing = sorted(b - a for a, b in zip(times, times[1:]))[len(times) // 2 - 1] if len(times) > 2 else step
    runs = merge_variants([r for r in runs if _legible(r)], gap_s=max(5.0, 3 * spacing))
    runs.sort(key=lambda r: (r["first_s"], r["box"][1]))
    head = f"text_extract ({ocr.name}{', ' + script + ' script' if script else ''}) " \
        f"{_where(ranges, [f.t_s for f in frames])}"
    if not runs:
        return Observation(_with_notes(head + ". No text found.", notes), {"lines": []},
                           [f.t_s for f in frames], notes=notes)
    body = _text_lines(runs)
    evidence = [[r["first_s"], r["last_s"]] for r in runs]
    return Observation(_with_notes(head + f". Text found ({VIDEO_TEXT_NOTE}):\n" + "\n".join(body), notes),
                       {"texts": [{**r, "score": round(r["score"], 3)} for r in runs], "lines": lines_all},
                       [f.t_s for f in frames], evidence, notes=notes)


#: a label seen in one sampled frame only (no neighbour agrees) is reported as present only above this score
SINGLE_FRAME_SCORE = 0.5


def _agreed(seq: list[tuple[float, list]], gap_s: float) -> list[tuple[float, list]]:
    """Per frame, the boxes that a neighbouring frame (within ``gap_s``) agrees with, or that score high alone."""
    out = []
    for i, (t, dets) in enumerate(seq):
        neighbour = any(abs(t2 - t) <= gap_s and d2 for j, (t2, d2) in enumerate(seq) if j != i)
        out.append((t, [d for d in dets if neighbour or d.score >= SINGLE_FRAME_SCORE]))
    return out


def _people_readings(ctx: ToolContext, frame, dets: list) -> dict:
    """What the people models read about the person boxes among ``dets`` (one frame's detections of an asked
    label): ``{index in dets: PersonReading}``; {} without a people reader (gpu profile, ``people_models`` off, models
    not installed) or without a person box. The frame's other COCO objects are what a hand can be on."""
    people = getattr(ctx.backends, "people", None) if getattr(ctx.settings, "people_models", False) else None
    if people is None or frame is None or not any((d.cls or d.label) == "person" for d in dets):
        return {}
    from avi.backends.detector import all_detections

    others = [d for d in all_detections(ctx.backends.detector, frame) if (d.cls or d.label) != "person"]
    readings = people.read(frame.image, list(dets) + others)
    by_box = {tuple(r.box): r for r in readings}
    return {i: by_box[tuple(d.box)] for i, d in enumerate(dets) if tuple(d.box) in by_box}


@tool("perceive")
def object_detect(ctx: ToolContext, time_ranges: TimeRanges, objects: StrList) -> Observation:
    """Detect and count objects named in words (e.g. ["person"]) in frames of the given time ranges; says where they are.

    Args:
        time_ranges: where to look, [[start_s, end_s], ...] in seconds; [t, t] looks at the frame at t.
        objects: names of the objects to find, e.g. ["person", "face"].
    """
    det = ctx.backends.detector
    labels = list(dict.fromkeys(o.strip().lower() for o in objects if o.strip()))
    unsupported = [label for label in labels if not det.supports(label)]
    supported = [label for label in labels if label not in unsupported]
    ranges, notes = clip_ranges(ctx, time_ranges)
    known = det.class_list  # closed-set detectors list their labels
    vocabulary = f"{det.vocabulary}: {', '.join(known)}" if known else det.vocabulary
    if not supported:  # nothing this backend can find: say so without decoding frames
        text = (f"object_detect ({det.name}): no class for {', '.join(unsupported)} (this profile detects "
                f"{vocabulary}). Nothing was looked at; use text_extract or frame_analysis instead.")
        return Observation(_with_notes(text, notes), {"unsupported": unsupported}, error=True, notes=notes)
    frames = ctx.video.frames_at(ctx.budget_times(ranges, ctx.settings.perceive_max_frames, notes))
    batch = det.detect_batch  # Grounding-DINO: one forward pass for many frames
    results = batch(frames, supported) if batch is not None else [det.detect(f, supported) for f in frames]
    image_at = {f.t_s: f.image for f in frames}
    frame_at = {f.t_s: f for f in frames}
    index_tracks = (getattr(ctx.index, "tracks", None) or []) if getattr(ctx.settings, "detect_tracks", False) \
        else []  # the index's object tracks (cpu captioner; issue 36)
    by_label: dict[str, list[tuple[float, list]]] = {label: [] for label in supported}
    for f, res in zip(frames, results):
        for label in supported:
            by_label[label].append((f.t_s, [d for d in res.detections if d.label == label]))
    gap_s = neighbour_gap([f.t_s for f in frames], ctx.settings.fps)  # neighbouring sampled frames
    head = f"object_detect ({det.name}) {_where(ranges, [f.t_s for f in frames])}"
    body, evidence, summary, boxes = [], [], {}, []
    for label, seq in by_label.items():
        kept = _agreed(seq, gap_s) if len(seq) > 1 else seq
        for _, dets in kept:
            boxes += [d.to_dict() for d in dets]
        ns = [len(dets) for _, dets in kept]
        present = [t for t, dets in kept if dets]
        classes = sorted({d.cls for _, dets in kept for d in dets if d.cls and d.cls != label})
        summary[label] = {"max": max(ns), "median": statistics.median(ns), "frames_with": len(present),
                          "per_frame": [[t, n] for t, n in zip([t for t, _ in kept], ns)]}
        name = label + (f" (class {', '.join(classes)})" if classes else "")
        dropped = sum(len(d) for _, d in seq) - sum(ns)
        if not present:
            body.append(f"{name}: none found" + (f" ({dropped} weak box{'es' if dropped > 1 else ''} in single "
                                                 f"frames ignored)" if dropped else ""))
            continue
        if len(kept) == 1:
            body.append(f"{name}: {ns[0]} found at {kept[0][0]:.1f}s")
        else:
            per_frame = count_runs([t for t, _ in kept], ns, gap_s)
            body.append(f"{name} count per frame: {per_frame}; at most {max(ns)} in one frame "
                        f"(median {statistics.median(ns):g}); present in {len(present)} of {len(kept)} frames")
        t_max, dets_max = max(kept, key=lambda item: (len(item[1]), -item[0]))
        image = image_at.get(t_max)
        colours = [box_colours(image, d.box) if image is not None else [] for d in dets_max[:6]]
        readings = _people_readings(ctx, frame_at.get(t_max), dets_max[:6])
        summary[label]["colours_at"] = {"t_s": t_max, "boxes": [
            {"box": [round(v, 1) for v in d.box], "score": round(d.score, 3), "colours": c,
             **({"person": readings[i].to_dict()} if i in readings else {})}
            for i, (d, c) in enumerate(zip(dets_max[:6], colours))]}
        where = "; ".join(f"{box_words(d.box, d.frame_size)} (score {d.score:.2f}"
                          + (", " + " and ".join(c) if c else "")
                          + (f"; {readings[i].describe()}" if i in readings and readings[i].describe() else "") + ")"
                          for i, (d, c) in enumerate(zip(dets_max[:6], colours)))
        body.append(f"  where at {t_max:.1f}s: {where}")
        evidence.append([min(present), max(present)])
        if index_tracks:
            track_classes = {d.cls or d.label for _, dets in kept for d in dets} | set(coco_classes_for(label))
            lines, records = track_report(label, index_tracks, track_classes, ranges, image_at)
            body += lines
            if records:
                summary[label]["tracks"] = records
    if unsupported:  # the short vocabulary: the full class list is for a call that found no class at all
        body.append(f"no class for {', '.join(unsupported)} (this profile detects {det.vocabulary})")
    return Observation(_with_notes(head + ". Result:\n" + "\n".join(body), notes),
                       {"summary": summary, "detections": boxes, "unsupported": unsupported},
                       [f.t_s for f in frames], evidence, notes=notes)


@tool("perceive")
def frame_analysis(ctx: ToolContext, time_ranges: TimeRanges, question: Question) -> Observation:
    """Analyse frames of the given time ranges in detail for a specific question (the most expensive tool; use it last).

    Args:
        time_ranges: all promising ranges, [[start_s, end_s], ...] in seconds.
        question: what to find out from these frames.
    """
    ranges, notes, frames = _frames(ctx, time_ranges, ctx.settings.frame_analysis_max_frames)
    analyzer = ctx.backends.frame_analyzer
    result = analyzer.analyze(frames, question, script=ctx.scope.text_script) if ctx.scope.text_script \
        else analyzer.analyze(frames, question)
    head = f"frame_analysis ({analyzer.name}) {_where(ranges, [f.t_s for f in frames])}"
    return Observation(_with_notes(head + ".\n" + result.text, notes), result.data, [f.t_s for f in frames],
                       [[s, e] for s, e in ranges], notes=notes)
