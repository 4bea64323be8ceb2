"""Answers read from what the frames look like (issue 14): colours measured on detection boxes and frames, the
shot scale, the kind of a shape, and which way a thing moves sideways.

Each function reads the question (what it asks) and measurements (the perceive tools' observation data, pixel
statistics of frames, the video's shots) and returns the measured answer or None; the agent
(:mod:`avi.agent.answers`, :mod:`avi.agent.measured_answers`) records in the trace when a measured answer replaces
the model's. Times are seconds; boxes are pixel xyxy.
"""

from __future__ import annotations

import re

from avi.agent.measured import the_label
from avi.video.analysis import COLOUR_SYNONYMS

__all__ = ["COLOUR_SYNONYMS"]


# ----------------------------------------------------------------------------- colours, measured


COLOUR_WORDS = frozenset(
    "red orange yellow green cyan blue purple pink black white gray grey brown beige silver gold violet navy "
    "maroon turquoise teal magenta crimson scarlet".split())
"""Colour names an answer may hold (the measured names of :func:`avi.video.analysis.colour_names` and more)."""


def asks_colour(question: str) -> bool:
    """Whether a question asks for a colour ("what colour is ...", "which color are ...")."""
    return bool(re.search(r"\b(?:what|which)\s+colou?rs?\b|\bcolou?r\s+of\s+the\b", question or "", re.I))


def names_colour(text: str) -> bool:
    """Whether a text holds a colour name."""
    return bool(COLOUR_WORDS & set(re.findall(r"[a-z]+", (text or "").lower())))


def measured_colour(steps: list[tuple[str, dict]], question: str) -> tuple[str, str, float] | None:
    """The dominant colour object_detect measured on the best box of the label the question is about.

    Args:
        steps: ``(tool, observation data)`` of the successful perceive calls (``object_detect`` data carries
            ``summary[label]["colours_at"] = {"t_s", "boxes": [{"box", "score", "colours"}]}``).

    Returns:
        ``(label, colour, t_s)`` of the highest-scoring box that has a colour, or None when nothing was
        measured or the label is ambiguous.
    """
    per_label: dict[str, list[tuple[float, float, str]]] = {}
    for tool, data in steps:
        if tool != "object_detect":
            continue
        for label, summary in (data.get("summary") or {}).items():
            at = summary.get("colours_at") or {}
            for b in at.get("boxes") or []:
                if b.get("colours"):
                    per_label.setdefault(label, []).append((float(b.get("score", 0.0)), float(at.get("t_s", 0.0)),
                                                            str(b["colours"][0])))
    label = the_label(per_label, question)
    if label is None:
        return None
    score, t_s, colour = max(per_label[label])
    return label, colour, t_s


def colours_named(text: str) -> set[str]:
    """The measured colour names (:func:`avi.video.analysis.colour_names`' vocabulary) a text names, e.g.
    "yellow-orange" -> {"yellow", "orange"}, "dark grey" -> {"gray"}."""
    words = re.findall(r"[a-z]+", (text or "").lower())
    return {COLOUR_SYNONYMS.get(w, w) for w in words if w in COLOUR_WORDS or w in COLOUR_SYNONYMS}


def colour_options(question: str, options: dict[str, str]) -> dict[str, set[str]] | None:
    """For a multiple-choice colour question ("what colour is ..." with every option naming a colour), the
    measured colour names of each option; None for any other question."""
    if not asks_colour(question) or len(options) < 2:
        return None
    named = {k: colours_named(v) for k, v in options.items()}
    return named if all(named.values()) else None


def about_background(question: str) -> bool:
    """Whether a colour question asks about the background (the frame's dominant colour answers it)."""
    return bool(re.search(r"\bbackground\b|\bcolou?rs?\s+(?:is|was|does)\s+the\s+(?:whole\s+)?screen\b",
                          question or "", re.I))


def frame_colour_shares(images: list, top: int = 4, min_share: float = 0.03) -> dict[str, float]:
    """The mean share (0-1) of each measured colour name over frames (:func:`avi.video.analysis.colour_names`
    on each RGB uint8 ``(H, W, 3)`` image, its ``top`` names of at least ``min_share`` of the pixels)."""
    from avi.video.analysis import colour_names

    totals: dict[str, float] = {}
    for image in images:
        for name, share in colour_names(image, top=top, min_share=min_share):
            totals[name] = totals.get(name, 0.0) + share
    return {k: v / len(images) for k, v in sorted(totals.items(), key=lambda kv: -kv[1])} if images else {}


def colour_choice(named: dict[str, set[str]], shares: dict[str, float], box_colour: str | None = None,
                  min_share: float = 0.03, margin: float = 1.5) -> tuple[str, str] | None:
    """The option a colour measurement supports, as ``(letter, why)``.

    Args:
        named: each option's measured colour names (:func:`colour_options`).
        shares: mean share of each colour over the frames of the range asked about (:func:`frame_colour_shares`).
        box_colour: the dominant colour measured on the thing's own detector box, which decides alone when
            exactly one option names it.
        min_share: an option is supported only when one of its colours covers at least this share.
        margin: the best option's share must be this many times the runner-up's.

    Returns:
        None when no option, or more than one, is supported (the option scores decide then).
    """
    if box_colour:
        hits = [k for k, cs in named.items() if box_colour in cs]
        if len(hits) == 1:
            return hits[0], f"the measured colour of its box is {box_colour}"
    support = {k: max(shares.get(c, 0.0) for c in cs) for k, cs in named.items()}
    ranked = sorted(support.items(), key=lambda kv: -kv[1])
    (best, s1), (_, s2) = ranked[0], ranked[1]
    if s1 < min_share or s1 < margin * s2:
        return None
    top = ", ".join(f"{c} {round(100 * s)}%" for c, s in list(shares.items())[:4])
    return best, f"colours measured in the frames asked about: {top}"


# ----------------------------------------------------------------------------- shot scale, measured

_SCALE_WORDS = (("close-up", re.compile(r"\bclose[-\s]?ups?\b|\bextreme\s+close\b", re.I)),
                ("wide", re.compile(r"\bwide(?:[-\s]angle)?\s+(?:view|shot)\b|\bestablishing\s+shot\b|\blong\s+shot\b",
                                    re.I)),
                ("medium", re.compile(r"\bmedium(?:[-\s]close)?\s+shot\b", re.I)),
                ("black", re.compile(r"\b(?:black|blank|empty|dark)\s+screen\b|\bfade\s+to\s+black\b", re.I)))
"""Option words naming a shot scale (film terms) or a black screen, and the measured kind they name."""


def scale_options(options: dict[str, str]) -> dict[str, str] | None:
    """For multiple-choice options of which at least one names a shot scale (close-up, wide view or shot,
    medium shot) or a black screen, each such option's kind (``close-up``, ``wide``, ``medium``, ``black``);
    None when no option names one. An option naming two kinds is left out."""
    kinds = {}
    for k, text in options.items():
        hit = [kind for kind, rx in _SCALE_WORDS if rx.search(text or "")]
        if len(hit) == 1:
            kinds[k] = hit[0]
    return kinds or None


def scale_kind(scale: str, black_share: float) -> str:
    """The kind of one frame: ``black`` when at least 90 % of its pixels are black, else the first word of its
    :func:`avi.backends.box_words.shot_scale` (``close-up``, ``medium``, ``wide``; empty without people)."""
    if black_share >= 0.9:
        return "black"
    return scale.split(" ")[0] if scale else ""


def scale_choice(kinds: dict[str, str], measured: list[str]) -> tuple[str, str] | None:
    """The option the measured shot kinds support, as ``(letter, kind)``: the kind seen in most of the measured
    frames (:func:`scale_kind`; at least half of them) when exactly one option names it; None otherwise."""
    seen = [m for m in measured if m]
    if not seen:
        return None
    top = max(set(seen), key=seen.count)
    if seen.count(top) * 2 < len(measured):
        return None
    hits = [k for k, kind in kinds.items() if kind == top]
    return (hits[0], top) if len(hits) == 1 else None


# ----------------------------------------------------------------------------- shapes, measured

_WHAT_SHAPE = re.compile(r"\bwhat\s+(?:kind\s+of\s+)?shape\b|\bwhich\s+shape\b", re.I)


def asks_shape(question: str) -> bool:
    """Whether a question asks for the geometric shape of something ("What shape is the yellow sign?")."""
    return bool(_WHAT_SHAPE.search(question or ""))


def shape_answer(question: str, shapes: list[dict]) -> tuple[str, str] | None:
    """The kind of the shape a "what shape" question is about, from measured shapes.

    Args:
        question: the question; its colour words (:data:`avi.video.analysis.COLOUR_NAMES`) narrow the shapes,
            and "big"/"large" or "small"/"little" pick the largest or smallest.
        shapes: ``{"kind", "colour", "box"}`` dicts (pixel xyxy) measured in the frames the question is about.

    Returns:
        ``(kind, why)`` of the kind most of the matching shapes have (the largest or smallest when the question
        says so), or None when no shape matches.
    """
    from avi.video.analysis import COLOUR_NAMES

    words = re.findall(r"[a-z]+", (question or "").lower())
    colours = {COLOUR_NAMES[w] for w in words if w in COLOUR_NAMES}
    pool = [s for s in shapes if not colours or s.get("colour") in colours]
    if not pool:
        return None

    def area(s: dict) -> float:
        x1, y1, x2, y2 = s["box"]
        return (x2 - x1) * (y2 - y1)

    if {"big", "large", "largest", "biggest", "huge"} & set(words):
        pick = max(pool, key=area)
        return pick["kind"], f"the largest {pick['colour']} shape measured is a {pick['kind']}"
    if {"small", "little", "smallest", "tiny"} & set(words):
        pick = min(pool, key=area)
        return pick["kind"], f"the smallest {pick['colour']} shape measured is a {pick['kind']}"
    kinds = [s["kind"] for s in pool]
    top = max(set(kinds), key=kinds.count)
    return top, f"{kinds.count(top)} of {len(kinds)} {'/'.join(sorted(colours)) or 'measured'} shapes are {top}s"


# ----------------------------------------------------------------------------- sideways motion, measured

_SIDEWAYS = re.compile(r"\b(?:to\s+the\s+)?(?:left|right)\b\s+or\s+(?:to\s+the\s+)?(?:left|right)\b|"
                       r"\bwhich\s+(?:way|direction)\b", re.I)


def asks_direction(question: str) -> bool:
    """Whether a question asks which way something moves sideways ("to the left or to the right?")."""
    return bool(_SIDEWAYS.search(question or ""))


def sideways_motion(steps: list[tuple[str, dict]], question: str, min_move: float = 0.05) -> tuple[str, str] | None:
    """Which way the thing a question is about moves across the frame, from object_detect's boxes over time.

    The label is the one the question is about (:func:`the_label`); one box per frame is followed from the
    best box of its first frame to the nearest box in each later frame (within a quarter of the frame's width),
    and a least-squares line through the box centres gives the speed in pixels per second.

    Args:
        steps: ``(tool, observation data)``; object_detect data carries ``detections`` (``label``, ``box`` xyxy
            pixels, ``t_s``, ``score``, ``frame_size``).
        min_move: the smallest movement over the frames measured, as a fraction of the frame's width.

    Returns:
        ``("left" | "right", what was measured)``, or None when nothing was followed over at least a second or
        it moved less than ``min_move``.
    """
    per_label: dict[str, list[dict]] = {}
    for tool, data in steps:
        if tool == "object_detect":
            for d in data.get("detections") or []:
                per_label.setdefault(str(d.get("label")), []).append(d)
    label = the_label(per_label, question)
    if label is None:
        return None
    by_t: dict[float, list[dict]] = {}
    for d in per_label[label]:
        by_t.setdefault(float(d["t_s"]), []).append(d)
    times = sorted(by_t)
    width = float((by_t[times[0]][0].get("frame_size") or [640])[0])
    cur = max(by_t[times[0]], key=lambda d: d.get("score", 0.0))
    path = []
    for t in times:
        cands = by_t[t] if t != times[0] else [cur]
        near = min(cands, key=lambda d: abs(_cx(d) - _cx(cur)))
        if abs(_cx(near) - _cx(cur)) > 0.25 * width:
            continue
        cur = near
        path.append((t, _cx(cur)))
    if len(path) < 2 or path[-1][0] - path[0][0] < 1.0:
        return None
    ts = [t for t, _ in path]
    xs = [x for _, x in path]
    mt, mx = sum(ts) / len(ts), sum(xs) / len(xs)
    slope = sum((t - mt) * (x - mx) for t, x in path) / sum((t - mt) ** 2 for t in ts)
    moved = slope * (ts[-1] - ts[0])
    if abs(moved) < min_move * width:
        return None
    way = "right" if slope > 0 else "left"
    return way, (f"the {label}'s box moved {abs(moved):.0f} px to the {way} over {ts[-1] - ts[0]:.1f}s "
                 f"({len(path)} frames)")


def _cx(d: dict) -> float:
    return (float(d["box"][0]) + float(d["box"][2])) / 2
