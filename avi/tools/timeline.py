"""Coarse-to-fine Perceive tools (VideoSeek, arXiv 2603.20185, §3.2): ``overview`` and ``skim``.

VideoSeek's agent spends a frame budget coarse to fine: ``overview`` looks at 16α frames spread over the whole
video, ``skim`` at 4α frames inside one range it picked, ``focus`` looks closely at a short clip (in avi: the
other perceive tools on short ranges). Both tools here return a **timeline**: on cpu one line per thing
measured with the spans of sampled frames it is seen in, so the model sees where a thing starts and ends (where the
measured signal changes) without reading every frame.

What a frame "looks like" comes from the profile's cheap perception, at low resolution
(:data:`TIMELINE_SHORT_SIDE`):

* cpu: the detector's classes with counts, the text OCR reads, dominant colours and flat shapes
  (:func:`avi.backends.frame_analyzer.measure_frame`); things that a word of the ``query`` names (an object
  class, a word of the text, a colour, a shape) are marked, and their spans are the observation's evidence;
* gpu: one VLM call over all sampled frames (each labelled with its time) asked for one line per frame
  (``prompts/timeline_vlm.md``).

The frames are counted against the question's frame budget (:mod:`avi.budget`).
"""

from __future__ import annotations

import re

import cv2

from avi.backends.captioner import normalise_text
from avi.backends.coco_detector import coco_classes_for
from avi.backends.frame_analyzer import measure_frame
from avi.budget import overview_frames, skim_frames
from avi.tools.base import VIDEO_TEXT_NOTE, Observation, Query, TimeRanges, ToolContext, clip_ranges, tool
from avi.video.analysis import COLOUR_NAMES
from avi.video.decode import Frame
from avi.video.timecode import fmt_range, fmt_time

#: short side in pixels of the frames a timeline measures (VideoSeek's overview and skim use 256 px; OCR needs a
#: little more to read captions and signs)
TIMELINE_SHORT_SIDE = 360


def low_res(frame: Frame) -> Frame:
    """``frame`` scaled down to :data:`TIMELINE_SHORT_SIDE` pixels on its short side (unchanged if smaller)."""
    h, w = frame.image.shape[:2]
    scale = TIMELINE_SHORT_SIDE / min(h, w)
    if scale >= 1:
        return frame
    image = cv2.resize(frame.image, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=cv2.INTER_AREA)
    return Frame(frame.t_s, image)


def uniform_times(ranges: list[list[float]], n: int) -> list[float]:
    """``n`` times spread evenly over ``ranges`` (seconds), each at the middle of its share of the total length,
    so that no two are the same frame and the ends of a range are not over-weighted. Shape: ``(min(n, ...),)``."""
    total = sum(e - s for s, e in ranges)
    if n <= 0 or not ranges:
        return []
    if total <= 0:
        return [ranges[0][0]]
    out = []
    for k in range(n):
        at = (k + 0.5) * total / n
        for s, e in ranges:
            if at <= e - s + 1e-9:
                out.append(round(s + at, 3))
                break
            at -= e - s
    return out


def query_terms(query: str) -> tuple[set[str], set[str], set[str]]:
    """(object classes, colour names, words of three or more letters) the query names."""
    words = re.findall(r"[a-z0-9']+", query.lower())
    classes = {c for w in words for c in coco_classes_for(w)}
    classes |= {c for a, b in zip(words, words[1:]) for c in coco_classes_for(f"{a} {b}")}
    colours = {COLOUR_NAMES[w] for w in words if w in COLOUR_NAMES}
    return classes, colours, {w for w in words if len(w) >= 3}


def measure_low_res(ctx: ToolContext, frame: Frame) -> dict:
    """:func:`avi.backends.frame_analyzer.measure_frame` of ``frame`` at :func:`low_res`, with the context's OCR
    and detector (the timelines' and the tree search's cheap perception); text in the question's script."""
    return measure_frame(ctx.backends.ocr, ctx.backends.detector, low_res(frame), script=ctx.scope.text_script)


def _things(row: dict) -> dict[str, int]:
    """What one measured frame shows, as ``{thing: count}``: detector classes (people as ``person``), legible
    texts (``text "..."``, three or more letters or digits: shorter reads are mostly texture), shapes and the
    dominant colour (``mostly <colour>``)."""
    things = {"person": row["people"]} if row["people"] else {}
    things.update(row["objects"])
    for t in row["text"]:
        if sum(ch.isalnum() for ch in t) >= 3:
            things[f'text "{normalise_text(t)}"'] = 1
    for k in row.get("shape_kinds", ()):
        things[k] = things.get(k, 0) + 1
    if row["colours"]:
        things[f"mostly {row['colours'][0]}"] = 1
    return things


def spans(times: list[float], present: list[bool], gap_frames: int = 1) -> list[tuple[int, int]]:
    """Index spans ``(first, last)`` of the sampled frames where a thing is present, a gap of up to
    ``gap_frames`` frames without it bridged (detectors and OCR miss a thing now and then)."""
    out: list[list[int]] = []
    for i, p in enumerate(present):
        if not p:
            continue
        if out and i - out[-1][1] <= gap_frames + 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return [(a, b) for a, b in out]


def _matches(thing: str, terms: tuple[set[str], set[str], set[str]]) -> bool:
    classes, colours, words = terms
    if thing in classes:
        return True
    if thing.startswith("mostly "):
        return thing[7:] in colours
    if thing.startswith('text "'):
        return bool(words & set(re.findall(r"[a-z0-9']+", thing[6:])))
    colour, _, kind = thing.partition(" ")
    return bool(kind) and (colour in colours or kind in words or kind + "s" in words)


#: most frames a skim measures past each end of its range to follow a query-marked thing still seen there
FOLLOW_FRAMES = 4


def follow_edge(ctx: ToolContext, name: str, t_s: float, step_s: float, direction: int, max_frames: int,
                ) -> tuple[float, list[float], bool]:
    """Follow ``name`` (a :func:`_things` key) from ``t_s`` outward (``direction`` +1 later, -1 earlier) one frame
    every ``step_s`` seconds, at most ``max_frames`` frames (what the question's frame budget allows) and
    :data:`FOLLOW_FRAMES`, until a frame without it or the end of the video.

    Returns:
        (last time in seconds it was seen, the times looked at, True when it was still seen at the last one).
    """
    last, looked = t_s, []
    for k in range(1, min(FOLLOW_FRAMES, max_frames) + 1):
        at = round(t_s + direction * k * step_s, 3)
        if not 0.0 <= at <= ctx.duration_s:
            break
        frames = ctx.video.frames_at([at])
        if not frames:
            break
        looked.append(frames[0].t_s)
        if not _things(measure_low_res(ctx, frames[0])).get(name):
            return last, looked, False
        last = frames[0].t_s
    return last, looked, bool(looked) and last == looked[-1]


def _measured_timeline(ctx: ToolContext, frames: list[Frame], query: str, follow: tuple | None = None,
                       ) -> tuple[list[str], dict, list]:
    """One line per thing measured (object class, text, shape, dominant colour): the spans of sampled frames
    where it is seen, with its count per frame; lines, trace data and evidence ranges (the spans of the things
    the query names). With ``follow = (start_s, end_s, step_s)`` (a skim's one range), a query-marked thing
    seen at the first or last sampled frame is followed past that end of the range (:func:`follow_edge`), so
    its span is not cut where the skim happened to stop; the frames it took are in the trace data's
    ``follow_s``."""
    rows = [measure_low_res(ctx, f) for f in frames]
    times = [r["t_s"] for r in rows]
    per_frame = [_things(r) for r in rows]
    names = list(dict.fromkeys(k for things in per_frame for k in things))
    terms = query_terms(query)
    entries, evidence, followed = [], [], []
    left = ctx.frames_left
    allowed = (lambda: FOLLOW_FRAMES) if left is None else (lambda: left - len(frames) - len(followed))
    for name in names:
        counts = [things.get(name, 0) for things in per_frame]
        found = spans(times, [n > 0 for n in counts])
        hit = _matches(name, terms)
        parts = []
        for a, b in found:
            seen = [n for n in counts[a:b + 1] if n]
            lo, hi = min(seen), max(seen)
            how = f"{len(seen)} of {b - a + 1} frames" if len(seen) < b - a + 1 else \
                f"{len(seen)} frame{'s' if len(seen) > 1 else ''}"
            if not name.startswith(("text ", "mostly ")):  # things that can be counted
                how += f", {lo}" + (f"–{hi}" if hi > lo else "") + " per frame"
            first, last, past = times[a], times[b], []
            if hit and follow:
                start_s, end_s, step_s = follow
                if a == 0 and start_s > 0:
                    first, looked, more = follow_edge(ctx, name, first, step_s, -1, allowed())
                    followed += looked
                    if looked:
                        past.append(f"seen from {fmt_time(first)}{' or earlier' if more else ''}, before the range")
                if b == len(times) - 1 and end_s < ctx.duration_s:
                    last, looked, more = follow_edge(ctx, name, last, step_s, +1, allowed())
                    followed += looked
                    if looked:
                        past.append(f"seen until {fmt_time(last)}{' or later' if more else ''}, past the range")
            if past:
                how += "; followed one frame every " + f"{step_s:.1f}s: " + ", ".join(past)
            parts.append((fmt_time(times[a]) if a == b else fmt_range(times[a], times[b])) + f" ({how})")
            if hit:
                evidence.append([first, last])
        entries.append((times[found[0][0]], f"{name}: " + "; ".join(parts) + ("  <- query" if hit else "")))
    lines = [line for _, line in sorted(entries, key=lambda e: e[0])] or ["nothing measured in these frames"]
    return lines, {"rows": rows, "frames_s": times, "follow_s": sorted(set(followed))}, evidence


def _vlm_timeline(ctx: ToolContext, frames: list[Frame], query: str) -> tuple[list[str], dict, list]:
    from avi.prompts import PromptLibrary

    prompt = PromptLibrary(ctx.settings.prompts_dir).render("timeline_vlm", query=query or "(none)")
    result = ctx.backends.frame_analyzer.analyze([low_res(f) for f in frames], prompt)
    return [result.text.strip()], {"vlm": result.data}, []


def _timeline(ctx: ToolContext, name: str, ranges: list[list[float]], wanted: int, query: str,
              notes: list[str]) -> Observation:
    cap = ctx.frame_cap(wanted)
    if cap < wanted:
        notes.append(f"the question's frame budget ({ctx.frame_budget} frames) had {cap} left: {name} looked at "
                     f"{cap} of its {wanted} frames")
    times = uniform_times(ranges, cap)
    frames = ctx.video.frames_at(times)
    if not frames:
        raise ValueError(f"no frames could be decoded in {', '.join(fmt_range(s, e) for s, e in ranges)}")
    measured = getattr(ctx.backends, "vlm", None) is None  # cpu: measured; gpu: the VLM describes the frames
    step = sum(e - s for s, e in ranges) / max(1, len(frames))
    if measured:
        follow = (ranges[0][0], ranges[0][1], step) if name == "skim" and len(ranges) == 1 else None
        lines, data, evidence = _measured_timeline(ctx, frames, query, follow)
    else:
        lines, data, evidence = _vlm_timeline(ctx, frames, query)
    head = (f"{name} of {', '.join(fmt_range(s, e) for s, e in ranges)}: {len(frames)} frames, one every "
            f"{step:.1f}s, at low resolution; "
            + ("per thing measured (object, text, shape, main colour), the times it is seen"
               if measured else "what each frame shows")
            + f" (text {VIDEO_TEXT_NOTE}):")
    text = head + "\n" + "\n".join(lines)
    if notes:
        text += "\nNote: " + "; ".join(notes)
    data.update(alpha=ctx.alpha, step_s=round(step, 3), query=query)
    looked = sorted({f.t_s for f in frames} | set(data.get("follow_s", ())))
    return Observation(text, data, looked, evidence, notes=notes)


@tool("perceive")
def overview(ctx: ToolContext, query: Query = "") -> Observation:
    """A coarse timeline of the whole video (what is shown when); use it first when nothing says where to look.

    Args:
        query: optional words to mark in the timeline (objects, text, colours the question asks about).
    """
    ranges = [[0.0, ctx.duration_s]]
    return _timeline(ctx, "overview", ranges, overview_frames(ctx.alpha), query.strip(), [])


@tool("perceive")
def skim(ctx: ToolContext, time_ranges: TimeRanges, query: Query = "") -> Observation:
    """A denser timeline inside one stretch of the video, to find where something starts and ends.

    Args:
        time_ranges: the stretch to skim, [[start_s, end_s]] in seconds (longer than a few seconds).
        query: optional words to mark in the timeline (objects, text, colours the question asks about).
    """
    ranges, notes = clip_ranges(ctx, time_ranges)
    return _timeline(ctx, "skim", ranges, skim_frames(ctx.alpha), query.strip(), notes)
