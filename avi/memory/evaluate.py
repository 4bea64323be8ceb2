"""The host evaluator: plain code over a perception memory, one function per operation of a
:class:`~avi.memory.query.MemoryQuery`, each returning a :class:`Result` with the value, the rows it rests on and
whether the memory covered what the query asks over its time scope (issue 53).

Conventions (thresholds set on the ``tune`` split; ``bench/memory``):

* a frame *shows* the target when at least one box matches (label, region by the box centre, colour by the box's
  main colour, person attributes by the people readings); shapes, text lines, utterances and cuts match by kind,
  pattern words or time;
* *seen* (``exists``) needs the target in :data:`MIN_FRAMES` sampled frames, or once with a box scoring at least
  :data:`SURE_SCORE` (the perception captioner's rule for naming a class);
* a count at a moment is read in the sampled frame nearest to it; over a range, people and objects are counted as
  distinct person subjects or tracks, each seen in :data:`MIN_FRAMES` frames with one box scoring at least
  :data:`SURE_SCORE`, shapes as the most at once, text lines and utterances as distinct matches, cuts as cuts
  (shots, when the noun names shots or scenes: the cuts plus one);
* ``max_count`` is the largest count seen in :data:`MIN_FRAMES` frames (one frame's spike is detector noise);
* runs of frames are merged across gaps of up to :data:`GAP_S`; an interval's edge within :data:`SNAP_S` of a
  cut moves onto the cut;
* a "no" (``exists`` false) is only given where the modality was read over the whole scope: every sampled frame
  for boxes, shapes and pixels, every clip's OCR frames for text, a transcript for speech; people attributes are
  read on one frame per second with a person and never give a "no".
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from avi.memory.match import (
    MAX_ROWS,
    MIN_FRAMES,
    PERSON_WORDS,
    SURE_SCORE,
    FrameMatch,
    as_row,
    best_sentence,
    box_label,
    cuts_of,
    form_match,
    matches,
    merge_runs,
    pattern_words,
    runs,
    scope_covered,
    sentences_of,
    snap,
    split_at_cuts,
    text_hits,
    text_spans,
)
from avi.memory.query import OTHER, MemoryQuery
from avi.memory.store import Memory, normalise


@dataclass
class Result:
    """What the evaluator found for one query.

    Attributes:
        query: the query evaluated.
        kind: the value's type: ``yesno`` (bool), ``number`` (int), ``interval`` (``[start_s, end_s]``), ``text``
            (str), ``order`` (list of str) or ``none`` (no value).
        value: the answer value, or None.
        covered: the memory measured what the query asks over its scope (a target the tools have, a modality
            that was read there); False: the value is absent or not to be trusted as an answer.
        why: why there is no (covered) value, one line; empty otherwise.
        rows: the rows the value rests on (at most :data:`MAX_ROWS`), as dicts.
        evidence: ``[[start_s, end_s]]`` where the target was found.
        unsupported: the query asks about what no tool of this profile measures.
    """

    query: MemoryQuery
    kind: str
    value: Any
    covered: bool
    why: str = ""
    rows: list[dict] = field(default_factory=list)
    evidence: list[list[float]] = field(default_factory=list)
    unsupported: bool = False

    def to_dict(self) -> dict:
        return {"query": self.query.model_dump(mode="json"), "kind": self.kind, "value": self.value,
                "covered": self.covered, "why": self.why, "rows": self.rows[:MAX_ROWS],
                "evidence": self.evidence, "unsupported": self.unsupported}

    def describe(self) -> str:
        """The result as one observation for the model (what was measured, not a decision)."""
        head = f"Perception memory query: {self.query.short()}"
        if self.unsupported:
            return f"{head}\nNo tool of this profile measures what it asks ({self.why})."
        if self.value is None:
            return f"{head}\nNo measured value: {self.why}."
        shown = self.value
        if self.kind == "interval":
            shown = f"[{self.value[0]:.1f}s, {self.value[1]:.1f}s]"
        elif self.kind == "yesno":
            shown = "yes" if self.value else "no"
        where = "; ".join(f"{a:.1f}-{b:.1f}s" for a, b in self.evidence[:8])
        trust = "" if self.covered else f" (not a full measurement: {self.why})"
        return f"{head}\nMeasured: {shown}{trust}." + (f" Seen at: {where}." if where else "")


# ------------------------------------------------------------------------------------------------ operations



def op_exists(mem: Memory, q: MemoryQuery) -> Result:
    """Whether the target is seen (read, heard) in the scope; with ``compare``, whether its count satisfies it at
    some sampled frame (at the scope's moment for a moment)."""
    if q.target in ("text", "speech"):
        hits = text_hits(mem, q)
        covered, why = scope_covered(mem, q)
        if hits:
            return Result(q, "yesno", True, True, rows=hits[:MAX_ROWS],
                          evidence=[[h["start_s"], h["end_s"]] for h in hits[:8]])
        return Result(q, "yesno", False if covered else None, covered, why or "")
    if q.target == "cut":
        a, b = q.time.bounds(mem.duration_s)
        cuts = [c for c in cuts_of(mem) if a < c < b]
        n = len(cuts)
        value = q.compare.holds(n) if q.compare else n > 0
        return Result(q, "yesno", value, True, rows=[{"cut_s": c} for c in cuts[:MAX_ROWS]],
                      evidence=[[c, c] for c in cuts[:8]])
    fr = FrameMatch(mem, q)
    if not fr.ok:
        return _no_target(q, fr.why, "yesno")
    if q.time.is_moment and q.compare is not None:
        t = fr.nearest(q.time.start_s)
        if t is None:
            return Result(q, "yesno", None, False, "no sampled frame at that moment")
        n = fr.count(t)
        return Result(q, "yesno", q.compare.holds(n), True, rows=fr.rows([t]) or [{"t_s": t, "count": n}],
                      evidence=[[t, t]])
    shown = fr.shown()
    sure = any(r["score"] >= SURE_SCORE for t in shown for r in fr.by_t.get(t, []) if "score" in r.keys())
    if len(shown) >= MIN_FRAMES or (shown and (sure or fr.kind in ("frames", "shapes"))):
        return Result(q, "yesno", True, True, rows=fr.rows(shown), evidence=runs(shown, mem.fps))
    covered, why = scope_covered(mem, q, fr)
    return Result(q, "yesno", False if covered else None, covered, why, rows=fr.rows(shown),
                  evidence=runs(shown, mem.fps))


def _no_target(q: MemoryQuery, why: str, kind: str) -> Result:
    unsupported = q.target in ("object",) and ((q.label or "").lower() in ("", OTHER)) and \
        not any(w in PERSON_WORDS for w in normalise(q.noun).split())
    return Result(q, kind, None, False, why or "not measured", unsupported=unsupported)


def op_count(mem: Memory, q: MemoryQuery) -> Result:
    """How many at the scope's moment; over a range, distinct ones (module docstring)."""
    if q.target == "cut":
        a, b = q.time.bounds(mem.duration_s)
        cuts = [c for c in cuts_of(mem) if a < c < b]
        n = len(cuts) + (1 if counts_shots(q) else 0)  # the scope's shots: one more than the cuts inside it
        return Result(q, "number", n, True, rows=[{"cut_s": c} for c in cuts[:MAX_ROWS]],
                      evidence=[[c, c] for c in cuts[:8]])
    if q.target in ("text", "speech"):
        hits = text_hits(mem, q)
        covered, why = scope_covered(mem, q)
        if q.target == "speech" and q.pattern:
            words = pattern_words(q.pattern)
            n = sum(len(re.findall(r"\b" + re.escape(words[0]), h["norm"])) for h in hits) if words else len(hits)
        else:
            n = len({h["norm"] for h in hits})
        return Result(q, "number", n if (hits or covered) else None, covered, why, rows=hits[:MAX_ROWS],
                      evidence=[[h["start_s"], h["end_s"]] for h in hits[:8]])
    fr = FrameMatch(mem, q)
    if not fr.ok:
        return _no_target(q, fr.why, "number")
    if q.time.is_moment:
        t = fr.nearest(q.time.start_s)
        if t is None:
            return Result(q, "number", None, False, "no sampled frame at that moment")
        n = fr.count(t)
        return Result(q, "number", n, True, rows=fr.rows([t]) or [{"t_s": t, "count": 0}], evidence=[[t, t]])
    if fr.kind in ("boxes", "people"):
        ids, best = Counter(), Counter()
        for t in fr.times:
            for r in fr.by_t.get(t, []):
                key = r["subject"] or r["track"]
                if key:
                    ids[key] += 1
                    best[key] = max(best[key], r["score"] or 0.0)
        # a distinct one is seen in MIN_FRAMES frames and named once with SURE_SCORE (the captioner's rule):
        # a weak box at the picture's edge in two frames is no one
        distinct = [k for k, n in ids.items() if n >= MIN_FRAMES and best[k] >= SURE_SCORE]
        if distinct:
            return Result(q, "number", len(distinct), True, rows=[{"id": k, "frames": ids[k]} for k in distinct][:MAX_ROWS],
                          evidence=runs(fr.shown(), mem.fps))
    return _most(mem, q, fr, "number")


#: a count of these (not of "cuts", "changes", "transitions") counts shots: the cuts inside the scope plus one
SHOT_WORDS = frozenset("shot shots scene scenes take takes view views".split())
_CUT_WORDS = frozenset("cut cuts change changes transition transitions switch switches".split())


def counts_shots(q: MemoryQuery) -> bool:
    """Whether a cut count asks for shots ("how many different shots"): its noun names shots or scenes and no
    change between them."""
    words = set(normalise(q.noun or "").split())
    return bool(words & SHOT_WORDS) and not words & _CUT_WORDS


def _most(mem: Memory, q: MemoryQuery, fr: FrameMatch, kind: str) -> Result:
    counts = Counter(fr.count(t) for t in fr.times)
    if not fr.times:
        return Result(q, kind, None, False, "no sampled frame in that time")
    robust = max((n for n, k in counts.items() if k >= MIN_FRAMES), default=max(counts))
    at = [t for t in fr.times if fr.count(t) == robust]
    return Result(q, kind, robust, True, rows=fr.rows(at[:3]) or [{"t_s": t, "count": robust} for t in at[:3]],
                  evidence=runs(at, mem.fps))


def op_max_count(mem: Memory, q: MemoryQuery) -> Result:
    """The largest count seen in at least :data:`MIN_FRAMES` sampled frames of the scope."""
    if q.target in ("text", "speech", "cut"):
        return op_count(mem, q)
    fr = FrameMatch(mem, q)
    if not fr.ok:
        return _no_target(q, fr.why, "number")
    return _most(mem, q, fr, "number")



def _interval(mem: Memory, q: MemoryQuery, which: str) -> Result:
    cuts = cuts_of(mem)
    if q.target in ("text", "speech"):
        hits = text_hits(mem, q)
        if not hits:
            covered, why = scope_covered(mem, q)
            return Result(q, "interval", None, False, why or "not read in that time")
        if q.target == "speech":
            spans = [[h["start_s"], h["end_s"]] for h in hits]
        else:
            spans = text_spans(mem, hits, cuts)
        spans = merge_runs(spans)
    else:
        fr = FrameMatch(mem, q)
        if not fr.ok:
            return _no_target(q, fr.why, "interval")
        shown = fr.shown()
        if fr.kind == "boxes" and len(shown) < MIN_FRAMES:
            shown = []
        spans = [snap(s, cuts, mem.duration_s) for s in split_at_cuts(runs(shown, mem.fps), cuts)]
        if not spans:
            return Result(q, "interval", None, False, "not seen in that time")
        hits = fr.rows(shown)
    pick = {"first": spans[0], "last": spans[-1]}.get(which) or max(spans, key=lambda s: s[1] - s[0])
    return Result(q, "interval", [round(pick[0], 2), round(pick[1], 2)], True, rows=hits[:MAX_ROWS], evidence=spans)




def op_span(mem: Memory, q: MemoryQuery) -> Result:
    """When the target is seen: its longest run in the scope, snapped to cuts."""
    return _interval(mem, q, "longest")


def op_first(mem: Memory, q: MemoryQuery) -> Result:
    """The first run in which the target is seen."""
    return _interval(mem, q, "first")


def op_last(mem: Memory, q: MemoryQuery) -> Result:
    """The last run in which the target is seen."""
    return _interval(mem, q, "last")


def op_read(mem: Memory, q: MemoryQuery) -> Result:
    """The text read on screen (``target`` text) or the speech heard (``speech``) in the scope: with a pattern, the
    line holding its words (the utterance holding the most of them), else the most confidently read line; with a
    ``form``, only lines holding that form (:func:`~avi.memory.match.form_match`), and of a line only that part
    (of an utterance, its first sentence holding it)."""
    if q.target not in ("text", "speech"):
        return Result(q, "text", None, False, "read needs on-screen text or speech")
    hits = text_hits(mem, q)
    if not hits and q.pattern and q.target == "speech":  # the most pattern words, when no utterance holds them all
        words = pattern_words(q.pattern)
        a, b = q.time.bounds(mem.duration_s)
        scored = [(sum(matches(r["norm"], [w]) for w in words), as_row(r)) for r in
                  mem.rows("SELECT * FROM speech WHERE end_s >= ? AND start_s <= ?", (a, b))]
        scored = [s for s in scored if s[0] > 0]
        if scored:
            best = max(s[0] for s in scored)
            hits = [r for n, r in scored if n == best]
    if hits and q.form:  # only what has the asked form ("what date": a line holding a date)
        formed = [h for h in hits if form_match(h["text"], q.form) is not None]
        if not formed and q.target == "text" and q.pattern:  # "the year on the slide about X": its other lines
            clips = sorted({h["clip"] for h in hits})
            formed = [as_row(r) for r in mem.rows(f"SELECT * FROM texts WHERE clip IN ({','.join('?' * len(clips))})"
                                                  " ORDER BY t_s", tuple(clips))
                      if form_match(r["text"], q.form) is not None]
        hits = formed
        if not hits:
            return Result(q, "text", None, False, f"no {q.form} read there")
    if not hits:
        covered, why = scope_covered(mem, q)
        return Result(q, "text", None, False, why or "nothing read there")
    if q.target == "text":
        best = max(hits, key=lambda h: (h.get("score") or 0.0, len(h["text"])))
        value = form_match(best["text"], q.form)
    else:
        best = hits[0]
        value = best_sentence(best["text"], pattern_words(q.pattern))
        if q.form:
            value = next((p for p in sentences_of(best["text"]) if form_match(p, q.form)), value)
    evidence = [[h["start_s"], h["end_s"]] for h in hits[:8]]
    return Result(q, "text", value, True, rows=hits[:MAX_ROWS], evidence=evidence)



def op_colour(mem: Memory, q: MemoryQuery) -> Result:
    """The main colour of the target's boxes in the scope (the picture's main colour for ``frame``; a shape's
    own colour)."""
    a, b = q.time.bounds(mem.duration_s)
    if q.target == "frame":
        rows = mem.rows("SELECT * FROM frames WHERE t_s >= ? AND t_s <= ?", (a - 1e-6, b + 1e-6))
        votes = Counter(r["colour"] for r in rows if r["colour"])
    elif q.target == "shape":
        q2 = q.model_copy(update={"colour": None})
        fr = FrameMatch(mem, q2)
        rows = [r for t in fr.times for r in fr.by_t.get(t, [])]
        votes = Counter(r["colour"] for r in rows if r["colour"])
    elif q.target in ("person", "face", "object"):
        q2 = q.model_copy(update={"colour": None})
        fr = FrameMatch(mem, q2)
        if not fr.ok:
            return _no_target(q, fr.why, "text")
        rows = [r for t in fr.times for r in fr.by_t.get(t, [])]
        votes = Counter()
        for r in rows:
            if r["colour"]:
                votes[r["colour"]] += (r["x2"] - r["x1"]) * (r["y2"] - r["y1"])
    else:
        return Result(q, "text", None, False, "colour is measured on boxes, shapes or the picture")
    if not votes:
        return Result(q, "text", None, False, "no box of it in that time")
    colour, _ = votes.most_common(1)[0]
    return Result(q, "text", colour, True, rows=[as_row(r) for r in rows[:MAX_ROWS]],
                  evidence=runs(sorted({r["t_s"] for r in rows}), mem.fps))


#: a move shorter than this fraction of the frame's width (height) is no direction
MIN_MOVE = 0.1


def op_direction(mem: Memory, q: MemoryQuery) -> Result:
    """Which way the target moves across the picture in the scope: from its track (people, objects: the longest
    matching track's centre motion, first box to last) or its positions (shapes: the first and last frames it is
    seen in); ``left``/``right`` when the horizontal move is the larger, else ``up``/``down``; none under
    :data:`MIN_MOVE` of the frame."""
    a, b = q.time.bounds(mem.duration_s)
    dx = dy = None
    rows: list[dict] = []
    if q.target in ("person", "object", "face"):
        label = box_label(q, mem)
        if label is None:
            return _no_target(q, f"the detector has no class for {q.noun or q.label or 'it'}", "text")
        tracks = mem.rows("SELECT * FROM tracks WHERE label = ? AND last_s >= ? AND first_s <= ? "
                          "ORDER BY (last_s - first_s) DESC", (label, a, b))
        if tracks:
            t = tracks[0]
            dx, dy, rows = t["dx"], t["dy"], [as_row(t)]
    elif q.target == "shape":
        fr = FrameMatch(mem, q)
        shown = fr.shown() if fr.ok else []
        if len(shown) >= MIN_FRAMES:
            first = fr.by_t[shown[0]][0]
            last = fr.by_t[shown[-1]][0]
            dx, dy, rows = last["cx"] - first["cx"], last["cy"] - first["cy"], [as_row(first), as_row(last)]
    else:
        return Result(q, "text", None, False, "direction is measured on tracks and shapes")
    if dx is None:
        return Result(q, "text", None, False, "no track of it in that time")
    if max(abs(dx), abs(dy)) < MIN_MOVE:
        return Result(q, "text", None, False, f"it moves less than a tenth of the picture (dx {dx:.2f}, dy {dy:.2f})",
                      rows=rows)
    way = ("right" if dx > 0 else "left") if abs(dx) >= abs(dy) else ("down" if dy > 0 else "up")
    return Result(q, "text", way, True, rows=rows)


def op_order(mem: Memory, q: MemoryQuery) -> Result:
    """Order questions are answered by :func:`order_items` (the options are the items); alone, no value."""
    return Result(q, "order", None, False, "an order needs the items it orders (the options)")


def op_unsupported(mem: Memory, q: MemoryQuery) -> Result:
    return Result(q, "none", None, False, f"no tool of this profile measures {q.noun or 'what is asked'}",
                  unsupported=True)


OPERATIONS = {"exists": op_exists, "count": op_count, "max_count": op_max_count, "span": op_span,
              "first": op_first, "last": op_last, "read": op_read, "colour": op_colour, "direction": op_direction,
              "order": op_order,
              "unsupported": op_unsupported}
"""One function per operation of :data:`avi.memory.query.OPS`."""
assert set(OPERATIONS) == set(__import__("avi.memory.query", fromlist=["OPS"]).OPS)


def evaluate(mem: Memory, q: MemoryQuery) -> Result:
    """Evaluate ``q`` on ``mem`` (the operation's function); never raises for a query that validated. A "no" or a
    count of none about person attributes is not a measurement (the people models read one frame per second and
    miss many): such a result is not covered."""
    result = OPERATIONS[q.op](mem, q)
    attributes = q.posture or q.arms_raised is not None or q.expression or q.holding
    if attributes and result.covered and result.value in (0, False):
        result.covered = False
        result.why = "people attributes are read on one frame per second and often missed: none found is no answer"
    return result


def first_seen(mem: Memory, q: MemoryQuery) -> float | None:
    """When the target of ``q`` is first seen (read, heard) in its scope, or None."""
    r = op_first(mem, q)
    return None if r.value is None else float(r.value[0])


def rows_json(result: Result) -> str:
    return json.dumps(result.rows[:MAX_ROWS], ensure_ascii=False)
