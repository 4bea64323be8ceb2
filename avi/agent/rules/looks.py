"""Answers read from what the frames look like (issue 14): colours, the shot scale, the kind of a shape, which way
a thing moves; from the question's word set and what was measured. Times are seconds; boxes pixel xyxy."""

from __future__ import annotations

import numpy as np

from avi.agent.rules.measured import Steps, the_label


def measured_colour(steps: Steps, words: frozenset[str]) -> tuple[str, str, float] | None:
    """``(label, colour, t_s)``: the dominant colour object_detect measured on the best box of the label the
    question is about (``summary[label]["colours_at"] = {"t_s", "boxes": [{"score", "colours"}]}``); None when
    nothing was measured or the label is ambiguous."""
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
    label = the_label(per_label, words)
    if label is None:
        return None
    score, t_s, colour = max(per_label[label])
    return label, colour, t_s


def colour_choice(named: dict[str, set[str]], shares: dict[str, float], box_colour: str | None = None,
                  min_share: float = 0.03, margin: float = 1.5) -> tuple[str, str] | None:
    """``(letter, why)`` of the option a colour measurement supports: the one option naming ``box_colour`` (the
    thing's own box), else the option (``named``: its colour names) whose colour covers the largest share of the
    frames (``shares``), at least ``min_share`` and ``margin`` times the runner-up's; None otherwise."""
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

def scale_choice(kinds: dict[str, str], measured: list[str]) -> tuple[str, str] | None:
    """``(letter, kind)``: the kind (:func:`avi.backends.box_words.scale_kind`) seen in at least half of the
    measured frames, when exactly one option names it; None otherwise."""
    seen = [m for m in measured if m]
    if not seen:
        return None
    top = max(set(seen), key=seen.count)
    if seen.count(top) * 2 < len(measured):
        return None
    hits = [k for k, kind in kinds.items() if kind == top]
    return (hits[0], top) if len(hits) == 1 else None


def sideways_motion(steps: Steps, words: frozenset[str], min_move: float = 0.05) -> tuple[str, str] | None:
    """``("left" | "right", what was measured)``: which way the thing the question is about (:func:`the_label`)
    moves, from object_detect's ``detections``: one box followed from the best box of the first frame to the
    nearest box of each later one (within a quarter of the width), a least-squares line through their centres.
    None when followed for less than a second or moved less than ``min_move`` of the frame's width."""
    per_label: dict[str, list[dict]] = {}
    for tool, data in steps:
        if tool == "object_detect":
            for d in data.get("detections") or []:
                per_label.setdefault(str(d.get("label")), []).append(d)
    label = the_label(per_label, words)
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
    slope = float(np.polyfit(ts, [x for _, x in path], 1)[0])  # pixels per second
    moved = slope * (ts[-1] - ts[0])
    if abs(moved) < min_move * width:
        return None
    way = "right" if slope > 0 else "left"
    return way, (f"the {label}'s box moved {abs(moved):.0f} px to the {way} over {ts[-1] - ts[0]:.1f}s "
                 f"({len(path)} frames)")


def _cx(d: dict) -> float:
    return (float(d["box"][0]) + float(d["box"][2])) / 2
