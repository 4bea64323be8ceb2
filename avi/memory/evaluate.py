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
  distinct person subjects or tracks, shapes as the most at once, text lines and utterances as distinct matches;
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

from avi.memory.query import OTHER, SHAPES, MemoryQuery
from avi.memory.store import Memory, normalise
from avi.video.analysis import COLOUR_NAMES

MIN_FRAMES = 2
SURE_SCORE = 0.5
GAP_S = 1.0
SNAP_S = 1.0
MOMENT_S = 0.5
"""A moment is read in the sampled frame nearest to it, at most this far away."""
BLACK_SHARE = 0.85
"""Share of a frame's pixels that must be black (HSV value under 50: :func:`avi.video.analysis.colour_names`) for
the frame to be black (a "black screen"); mean luma is no test: a navy picture has the luma of a dark one."""
MAX_ROWS = 24

_PERSON_WORDS = frozenset("person people persons man men woman women boy boys girl girls child children kid kids "
                          "pedestrian pedestrians someone somebody anyone anybody player players lecturer host "
                          "speaker presenter cyclist cyclists rider riders driver worker workers".split())


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


# ------------------------------------------------------------------------------------------------ helpers


def _colour(name: str | None) -> str | None:
    return COLOUR_NAMES.get(str(name).lower()) if name else None


def _region_sql(region: str) -> tuple[str, tuple]:
    """SQL condition on the box centre (``cx``, ``cy``: frame fractions) for a region: halves for the sides,
    the middle third for the centre, quarter-planes for the corners."""
    conds = {"left": "cx < 0.5", "right": "cx >= 0.5", "top": "cy < 0.5", "bottom": "cy >= 0.5",
             "centre": "cx BETWEEN 0.3333 AND 0.6667 AND cy BETWEEN 0.3333 AND 0.6667",
             "top_left": "cx < 0.5 AND cy < 0.5", "top_right": "cx >= 0.5 AND cy < 0.5",
             "bottom_left": "cx < 0.5 AND cy >= 0.5", "bottom_right": "cx >= 0.5 AND cy >= 0.5"}
    c = conds.get(region)
    return (f" AND {c}", ()) if c else ("", ())


def box_label(q: MemoryQuery, mem: Memory) -> str | None:
    """The detector class a box query reads: ``person``/``face`` for those targets, else the query's label when the
    memory's detector has it (None: not measured by boxes)."""
    if q.target == "person" or (q.target == "face" and (q.expression or q.posture or q.holding
                                                         or q.arms_raised is not None)):
        return "person"  # the people models read a person's face, posture and hands on the person box
    if q.target == "face":
        return "face"
    label = (q.label or "").strip().lower()
    if not label or label == OTHER or label in SHAPES:
        return None
    if mem.vocabulary:
        return label if label in mem.vocabulary else None
    # open vocabulary: the memory holds the captioner's boxes, which name people and faces only
    return label if mem.rows("SELECT 1 FROM boxes WHERE label = ? LIMIT 1", (label,)) else None


def _box_rows(mem: Memory, q: MemoryQuery, label: str, a: float, b: float) -> list:
    where = "b.label = ? AND b.t_s >= ? AND b.t_s <= ?"
    params: list = [label, a - 1e-6, b + 1e-6]
    reg, _ = _region_sql(q.region)
    colour = _colour(q.colour)
    if colour:
        where += " AND b.colour = ?"
        params.append(colour)
    people = label == "person" and (q.posture or q.arms_raised is not None or q.expression or q.holding)
    if people:
        join = " JOIN people p ON p.box_id = b.id"
        if q.posture:
            where += " AND p.posture = ?"
            params.append(q.posture)
        if q.arms_raised is not None:
            where += " AND p.arms_raised = ?"
            params.append(int(q.arms_raised))
        if q.expression:
            where += " AND p.expression = ?"
            params.append(q.expression)
        if q.holding:
            where += " AND p.holding LIKE ?"
            params.append(f'%"{q.holding.lower()}"%')
    else:
        join = ""
    return mem.rows(f"SELECT b.* FROM boxes b{join} WHERE {where}{reg} ORDER BY b.t_s", tuple(params))


def _per_frame(times: list[float], rows, score_key: str | None = "score") -> dict[float, list]:
    out: dict[float, list] = {t: [] for t in times}
    for r in rows:
        out.setdefault(r["t_s"], []).append(r)
    return out


def runs(times: list[float], fps: float, gap_s: float = GAP_S) -> list[list[float]]:
    """Sampled frame times (ascending) merged into ``[[start_s, end_s]]`` runs: frames at most ``gap_s`` apart
    are one run; a run ends one frame interval after its last frame."""
    out: list[list[float]] = []
    step = 1.0 / fps
    for t in times:
        if out and t - out[-1][1] <= gap_s + 1e-6:
            out[-1][1] = t
        else:
            out.append([t, t])
    return [[a, b + step] for a, b in out]


def snap(span: list[float], cuts: list[float], duration_s: float, snap_s: float = SNAP_S) -> list[float]:
    """``span`` with each edge moved onto a cut within ``snap_s`` seconds of it, clipped to the video."""
    a, b = span
    near_a = [c for c in cuts if abs(c - a) <= snap_s]
    near_b = [c for c in cuts if abs(c - b) <= snap_s]
    if near_a:
        a = min(near_a, key=lambda c: abs(c - a))
    if near_b:
        b = min(near_b, key=lambda c: abs(c - b))
    return [round(max(0.0, a), 2), round(min(duration_s, b), 2)] if b > a else [round(span[0], 2), round(span[1], 2)]


def _pattern_words(pattern: str | None) -> list[str]:
    return [w for w in normalise(pattern or "").split() if w not in {"the", "a", "an", "of", "and", "or"}]


def _matches(norm: str, words: list[str]) -> bool:
    """Every pattern word in the normalised text, as a word or a word's start (plurals, "weighs" for "weigh")."""
    toks = norm.split()
    return all(any(t == w or (len(w) >= 3 and t.startswith(w)) or (len(t) >= 3 and w.startswith(t) and len(w) - len(t) <= 2)
                   for t in toks) for w in words)


def _cuts(mem: Memory) -> list[float]:
    return [r[0] for r in mem.rows("SELECT t_s FROM cuts ORDER BY t_s")]


def _row(r) -> dict:
    d = dict(r)
    return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in d.items()}


# ------------------------------------------------------------------------------------------------ frames


class _Frames:
    """Per sampled frame in the scope, the matching rows of a frame-level target (boxes, shapes, dark or coloured
    frames)."""

    def __init__(self, mem: Memory, q: MemoryQuery):
        self.mem, self.q = mem, q
        self.a, self.b = q.time.bounds(mem.duration_s)
        self.times = mem.frame_times(self.a, self.b)
        self.kind, self.why = "", ""
        rows: list = []
        if q.target in ("person", "face", "object"):
            label = box_label(q, mem)
            if label is None:
                self.why = (f"the detector has no class for {q.noun or q.label or 'it'}"
                            if mem.vocabulary else f"no box of {q.noun or q.label} in the memory")
                return
            if not mem.covered("objects"):
                self.why = "the detector's boxes were not read"
                return
            rows = _box_rows(mem, q, label, self.a, self.b)
            self.kind = "boxes"
            attributes = q.posture or q.arms_raised is not None or q.expression or q.holding
            if attributes:
                if not mem.covered("people"):
                    self.why = "the people models did not run for this memory"
                    return
                self.kind = "people"
                self.times = [r[0] for r in mem.rows(
                    "SELECT t_s FROM frames WHERE people_read = 1 AND t_s >= ? AND t_s <= ? ORDER BY t_s",
                    (self.a - 1e-6, self.b + 1e-6))]
        elif q.target == "shape":
            if not mem.covered("shapes"):
                self.why = "shapes were not read"
                return
            where, params = "t_s >= ? AND t_s <= ?", [self.a - 1e-6, self.b + 1e-6]
            kind = (q.label or "").lower()
            if kind in SHAPES:
                where += " AND kind = ?"
                params.append(kind)
            if _colour(q.colour):
                where += " AND colour = ?"
                params.append(_colour(q.colour))
            reg, _ = _region_sql(q.region)
            rows = mem.rows(f"SELECT * FROM shapes WHERE {where}{reg} ORDER BY t_s", tuple(params))
            self.kind = "shapes"
        elif q.target == "frame":
            colour = _colour(q.colour)
            if colour is None and q.op not in ("colour",):
                self.why = "no colour or brightness named for the picture"
                return
            if colour == "black":
                rows = mem.rows("SELECT * FROM frames WHERE t_s >= ? AND t_s <= ? AND colour = 'black' AND "
                                "colour_share >= ? ORDER BY t_s", (self.a - 1e-6, self.b + 1e-6, BLACK_SHARE))
            elif colour:
                rows = mem.rows("SELECT * FROM frames WHERE t_s >= ? AND t_s <= ? AND colour = ? AND "
                                "colour_share >= 0.5 ORDER BY t_s", (self.a - 1e-6, self.b + 1e-6, colour))
            self.kind = "frames"
        self.by_t = _per_frame(self.times, rows)

    @property
    def ok(self) -> bool:
        return bool(self.kind)

    def count(self, t: float) -> int:
        return len(self.by_t.get(t, []))

    def shown(self) -> list[float]:
        """Frames where the target (with the query's comparison, if any) is seen."""
        c = self.q.compare
        return [t for t in self.times if (c.holds(self.count(t)) if c else self.count(t) > 0)]

    def rows(self, times: list[float]) -> list[dict]:
        out = []
        for t in times:
            out += [_row(r) for r in self.by_t.get(t, [])]
            if len(out) >= MAX_ROWS:
                break
        return out[:MAX_ROWS]

    def nearest(self, t: float) -> float | None:
        best = min(self.times, key=lambda x: abs(x - t), default=None)
        if best is None or abs(best - t) > MOMENT_S + 1e-6:
            near = self.mem.frame_times(t - MOMENT_S, t + MOMENT_S)
            return min(near, key=lambda x: abs(x - t), default=None)
        return best


# ------------------------------------------------------------------------------------------------ operations


def _scope_covered(mem: Memory, q: MemoryQuery, fr: _Frames | None = None) -> tuple[bool, str]:
    """Whether a "no" can be given: the modality was read over the whole scope (module docstring)."""
    if q.target == "speech":
        return (mem.covered("speech"), "" if mem.covered("speech") else "there is no transcript")
    if q.target == "text":
        if not mem.covered("text"):
            return False, "on-screen text was not read"
        a, b = q.time.bounds(mem.duration_s)
        read = mem.rows("SELECT COUNT(*) FROM frames WHERE ocr_read = 1 AND t_s >= ? AND t_s <= ?",
                        (a - 2.5, b + 2.5))[0][0]
        return (read > 0, "" if read else "no frame of that time was read for text")
    if q.target == "cut":
        return True, ""
    if fr is not None and fr.kind == "people":
        return False, "people attributes are read on one frame per second and often missed"
    if fr is not None and not fr.times:
        return False, "no sampled frame in that time"
    return (fr is not None and fr.ok), (fr.why if fr is not None else "")


def op_exists(mem: Memory, q: MemoryQuery) -> Result:
    """Whether the target is seen (read, heard) in the scope; with ``compare``, whether its count satisfies it at
    some sampled frame (at the scope's moment for a moment)."""
    if q.target in ("text", "speech"):
        hits = _text_hits(mem, q)
        covered, why = _scope_covered(mem, q)
        if hits:
            return Result(q, "yesno", True, True, rows=hits[:MAX_ROWS],
                          evidence=[[h["start_s"], h["end_s"]] for h in hits[:8]])
        return Result(q, "yesno", False if covered else None, covered, why or "")
    if q.target == "cut":
        a, b = q.time.bounds(mem.duration_s)
        cuts = [c for c in _cuts(mem) if a < c < b]
        n = len(cuts)
        value = q.compare.holds(n) if q.compare else n > 0
        return Result(q, "yesno", value, True, rows=[{"cut_s": c} for c in cuts[:MAX_ROWS]],
                      evidence=[[c, c] for c in cuts[:8]])
    fr = _Frames(mem, q)
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
    covered, why = _scope_covered(mem, q, fr)
    return Result(q, "yesno", False if covered else None, covered, why, rows=fr.rows(shown),
                  evidence=runs(shown, mem.fps))


def _no_target(q: MemoryQuery, why: str, kind: str) -> Result:
    unsupported = q.target in ("object",) and ((q.label or "").lower() in ("", OTHER)) and \
        not any(w in _PERSON_WORDS for w in normalise(q.noun).split())
    return Result(q, kind, None, False, why or "not measured", unsupported=unsupported)


def op_count(mem: Memory, q: MemoryQuery) -> Result:
    """How many at the scope's moment; over a range, distinct ones (module docstring)."""
    if q.target == "cut":
        a, b = q.time.bounds(mem.duration_s)
        cuts = [c for c in _cuts(mem) if a < c < b]
        return Result(q, "number", len(cuts), True, rows=[{"cut_s": c} for c in cuts[:MAX_ROWS]],
                      evidence=[[c, c] for c in cuts[:8]])
    if q.target in ("text", "speech"):
        hits = _text_hits(mem, q)
        covered, why = _scope_covered(mem, q)
        if q.target == "speech" and q.pattern:
            words = _pattern_words(q.pattern)
            n = sum(len(re.findall(r"\b" + re.escape(words[0]), h["norm"])) for h in hits) if words else len(hits)
        else:
            n = len({h["norm"] for h in hits})
        return Result(q, "number", n if (hits or covered) else None, covered, why, rows=hits[:MAX_ROWS],
                      evidence=[[h["start_s"], h["end_s"]] for h in hits[:8]])
    fr = _Frames(mem, q)
    if not fr.ok:
        return _no_target(q, fr.why, "number")
    if q.time.is_moment:
        t = fr.nearest(q.time.start_s)
        if t is None:
            return Result(q, "number", None, False, "no sampled frame at that moment")
        n = fr.count(t)
        return Result(q, "number", n, True, rows=fr.rows([t]) or [{"t_s": t, "count": 0}], evidence=[[t, t]])
    if fr.kind in ("boxes", "people"):
        ids = Counter()
        for t in fr.times:
            for r in fr.by_t.get(t, []):
                key = r["subject"] or r["track"]
                if key:
                    ids[key] += 1
        distinct = [k for k, n in ids.items() if n >= MIN_FRAMES]
        if distinct:
            return Result(q, "number", len(distinct), True, rows=[{"id": k, "frames": ids[k]} for k in distinct][:MAX_ROWS],
                          evidence=runs(fr.shown(), mem.fps))
    return _most(mem, q, fr, "number")


def _most(mem: Memory, q: MemoryQuery, fr: _Frames, kind: str) -> Result:
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
    fr = _Frames(mem, q)
    if not fr.ok:
        return _no_target(q, fr.why, "number")
    return _most(mem, q, fr, "number")


def _text_hits(mem: Memory, q: MemoryQuery) -> list[dict]:
    """OCR lines or utterances in the scope whose text holds every pattern word (all of them without a pattern)."""
    a, b = q.time.bounds(mem.duration_s)
    words = _pattern_words(q.pattern)
    if q.target == "text":
        rows = mem.rows("SELECT * FROM texts WHERE end_s >= ? AND start_s <= ? ORDER BY t_s", (a, b))
    else:
        rows = mem.rows("SELECT * FROM speech WHERE end_s >= ? AND start_s <= ? ORDER BY start_s", (a, b))
    return [_row(r) for r in rows if not words or _matches(r["norm"], words)]


def _interval(mem: Memory, q: MemoryQuery, which: str) -> Result:
    cuts = _cuts(mem)
    if q.target in ("text", "speech"):
        hits = _text_hits(mem, q)
        if not hits:
            covered, why = _scope_covered(mem, q)
            return Result(q, "interval", None, False, why or "not read in that time")
        if q.target == "speech":
            spans = [[h["start_s"], h["end_s"]] for h in hits]
        else:
            spans = _text_spans(mem, hits, cuts)
        spans = _merge(spans)
    else:
        fr = _Frames(mem, q)
        if not fr.ok:
            return _no_target(q, fr.why, "interval")
        shown = fr.shown()
        if fr.kind == "boxes" and len(shown) < MIN_FRAMES:
            shown = []
        spans = [snap(s, cuts, mem.duration_s) for s in runs(shown, mem.fps)]
        if not spans:
            return Result(q, "interval", None, False, "not seen in that time")
        hits = fr.rows(shown)
    pick = {"first": spans[0], "last": spans[-1]}.get(which) or max(spans, key=lambda s: s[1] - s[0])
    return Result(q, "interval", [round(pick[0], 2), round(pick[1], 2)], True, rows=hits[:MAX_ROWS], evidence=spans)


def _text_spans(mem: Memory, hits: list[dict], cuts: list[float]) -> list[list[float]]:
    """Where matching OCR lines were on screen, from the clips read with them (OCR reads a few frames per clip and
    keeps each line's first time in the clip): a run starts at a cut between the last OCR frame before its first
    read and that read (the text changes with the picture), else halfway between the two; it ends at a cut after
    the first read of its last clip, up to the next clip's first OCR frame, else at that clip's end."""
    ocr = [r[0] for r in mem.rows("SELECT t_s FROM frames WHERE ocr_read = 1 ORDER BY t_s")]
    clips = sorted({(h["start_s"], h["end_s"], h["t_s"]) for h in hits})
    spans = _merge([[a, b] for a, b, _ in clips])
    out = []
    for a, b in spans:
        inside = [(s, e, t) for s, e, t in clips if s >= a - 1e-6 and e <= b + 1e-6]
        first = min(t for _, _, t in inside)
        before = max((t for t in ocr if t < first), default=a)
        start = next((c for c in cuts if before < c <= first + 1e-6), (before + first) / 2 if before < first else a)
        last = max(t for s, _, t in inside if s == max(s2 for s2, _, _ in inside))
        after = min((t for t in ocr if t > b), default=b)
        end = next((c for c in cuts if last < c <= after), b)
        out.append([round(max(0.0, start), 2), round(min(end, mem.duration_s), 2)])
    return out


def _merge(spans: list[list[float]], gap: float = 0.01) -> list[list[float]]:
    out: list[list[float]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1] + gap:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


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
    line holding its words (the utterance holding the most of them), else the most confidently read line."""
    if q.target not in ("text", "speech"):
        return Result(q, "text", None, False, "read needs on-screen text or speech")
    hits = _text_hits(mem, q)
    if not hits and q.pattern and q.target == "speech":  # the most pattern words, when no utterance holds them all
        words = _pattern_words(q.pattern)
        a, b = q.time.bounds(mem.duration_s)
        scored = [(sum(_matches(r["norm"], [w]) for w in words), _row(r)) for r in
                  mem.rows("SELECT * FROM speech WHERE end_s >= ? AND start_s <= ?", (a, b))]
        scored = [s for s in scored if s[0] > 0]
        if scored:
            best = max(s[0] for s in scored)
            hits = [r for n, r in scored if n == best]
    if not hits:
        covered, why = _scope_covered(mem, q)
        return Result(q, "text", None, False, why or "nothing read there")
    if q.target == "text":
        best = max(hits, key=lambda h: (h.get("score") or 0.0, len(h["text"])))
        value = best["text"]
    else:
        best = hits[0]
        value = best_sentence(best["text"], _pattern_words(q.pattern))
    evidence = [[h["start_s"], h["end_s"]] for h in hits[:8]]
    return Result(q, "text", value, True, rows=hits[:MAX_ROWS], evidence=evidence)


def best_sentence(text: str, words: list[str]) -> str:
    """The sentence of ``text`` holding the most pattern ``words`` (the first on a tie; the whole text when it has
    one sentence or no words are given): an answer's leading statement is what a reader takes as the answer."""
    parts = [p.strip() for p in re.split(r"(?<=[.!?])\s+", str(text).strip()) if p.strip()]
    if len(parts) <= 1 or not words:
        return str(text).strip()
    return max(parts, key=lambda p: sum(_matches(normalise(p), [w]) for w in words))


def op_colour(mem: Memory, q: MemoryQuery) -> Result:
    """The main colour of the target's boxes in the scope (the picture's main colour for ``frame``; a shape's
    own colour)."""
    a, b = q.time.bounds(mem.duration_s)
    if q.target == "frame":
        rows = mem.rows("SELECT * FROM frames WHERE t_s >= ? AND t_s <= ?", (a - 1e-6, b + 1e-6))
        votes = Counter(r["colour"] for r in rows if r["colour"])
    elif q.target == "shape":
        q2 = q.model_copy(update={"colour": None})
        fr = _Frames(mem, q2)
        rows = [r for t in fr.times for r in fr.by_t.get(t, [])]
        votes = Counter(r["colour"] for r in rows if r["colour"])
    elif q.target in ("person", "face", "object"):
        q2 = q.model_copy(update={"colour": None})
        fr = _Frames(mem, q2)
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
    return Result(q, "text", colour, True, rows=[_row(r) for r in rows[:MAX_ROWS]],
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
            dx, dy, rows = t["dx"], t["dy"], [_row(t)]
    elif q.target == "shape":
        fr = _Frames(mem, q)
        shown = fr.shown() if fr.ok else []
        if len(shown) >= MIN_FRAMES:
            first = fr.by_t[shown[0]][0]
            last = fr.by_t[shown[-1]][0]
            dx, dy, rows = last["cx"] - first["cx"], last["cy"] - first["cy"], [_row(first), _row(last)]
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
    """Evaluate ``q`` on ``mem`` (the operation's function); never raises for a query that validated."""
    return OPERATIONS[q.op](mem, q)


def first_seen(mem: Memory, q: MemoryQuery) -> float | None:
    """When the target of ``q`` is first seen (read, heard) in its scope, or None."""
    r = op_first(mem, q)
    return None if r.value is None else float(r.value[0])


def rows_json(result: Result) -> str:
    return json.dumps(result.rows[:MAX_ROWS], ensure_ascii=False)
