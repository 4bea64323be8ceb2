"""What a query's target matches in a perception memory (issue 53): boxes by class, region, colour and person
attributes, shapes, dark or coloured frames, OCR lines and utterances by pattern words; runs of frames, cut snapping,
and whether a modality was read over a time scope. The operations over these are :mod:`avi.memory.evaluate`.

Thresholds (set on the ``tune`` split; ``bench/memory``):

* *seen* needs the target in :data:`MIN_FRAMES` sampled frames, or once with a box scoring at least
  :data:`SURE_SCORE` (the perception captioner's rule for naming a class);
* runs of frames are merged across gaps of up to :data:`GAP_S` and split at cuts; an interval's edge within
  :data:`SNAP_S` of a cut moves onto the cut; a moment is read in the sampled frame nearest to it, at most
  :data:`MOMENT_S` away;
* a black frame has :data:`BLACK_SHARE` of its pixels black.
"""

from __future__ import annotations

import operator
import re

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

PERSON_WORDS = frozenset("person people persons man men woman women boy boys girl girls child children kid kids "
                          "pedestrian pedestrians someone somebody anyone anybody player players lecturer host "
                          "speaker presenter cyclist cyclists rider riders driver worker workers".split())

def colour_name(name: str | None) -> str | None:
    return COLOUR_NAMES.get(str(name).lower()) if name else None


_HALVES = {"left": (("cx", "<", 0.5),), "right": (("cx", ">=", 0.5),), "top": (("cy", "<", 0.5),),
           "bottom": (("cy", ">=", 0.5),)}
#: each region as conditions on the box centre (``cx``, ``cy``: frame fractions): halves for the sides, the middle
#: third for the centre, quarter-planes for the corners; the one definition of :func:`region_sql` and :func:`in_region`
REGION_BOUNDS = {**_HALVES,
                 "centre": (("cx", ">=", 0.3333), ("cx", "<=", 0.6667), ("cy", ">=", 0.3333), ("cy", "<=", 0.6667)),
                 **{f"{v}_{h}": _HALVES[h] + _HALVES[v] for v in ("top", "bottom") for h in ("left", "right")}}
_COMPARE_OPS = {"<": operator.lt, ">=": operator.ge, "<=": operator.le}


def region_sql(region: str) -> tuple[str, tuple]:
    """SQL condition on the box centre (``cx``, ``cy``: frame fractions) for a region (:data:`REGION_BOUNDS`);
    nothing for ``any`` or an unknown region."""
    bounds = REGION_BOUNDS.get(region)
    return (" AND " + " AND ".join(f"{axis} {op} {value}" for axis, op, value in bounds), ()) if bounds else ("", ())


def in_region(cx: float, cy: float, region: str) -> bool:
    """Whether a box centre (``cx``, ``cy``: frame fractions) lies in ``region`` (:data:`REGION_BOUNDS`, as
    :func:`region_sql` selects); ``any`` or an unknown region holds every centre."""
    at = {"cx": cx, "cy": cy}
    return all(_COMPARE_OPS[op](at[axis], value) for axis, op, value in REGION_BOUNDS.get(region, ()))


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


def box_rows(mem: Memory, q: MemoryQuery, label: str, a: float, b: float) -> list:
    where = "b.label = ? AND b.t_s >= ? AND b.t_s <= ?"
    params: list = [label, a - 1e-6, b + 1e-6]
    reg, _ = region_sql(q.region)
    colour = colour_name(q.colour)
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


def per_frame(times: list[float], rows, score_key: str | None = "score") -> dict[float, list]:
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


def split_at_cuts(spans: list[list[float]], cuts: list[float]) -> list[list[float]]:
    """Each span cut at the cuts strictly inside it: a thing seen in two shots was seen twice (a run of frames
    never crosses a change of shot)."""
    out: list[list[float]] = []
    for a, b in spans:
        edges = [a, *[c for c in cuts if a + 1e-6 < c < b - 1e-6], b]
        out += [[x, y] for x, y in zip(edges, edges[1:]) if y > x]
    return out


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


def pattern_words(pattern: str | None) -> list[str]:
    return [w for w in normalise(pattern or "").split() if w not in {"the", "a", "an", "of", "and", "or"}]


def matches(norm: str, words: list[str]) -> bool:
    """Every pattern word in the normalised text, as a word or a word's start (plurals, "weighs" for "weigh")."""
    toks = norm.split()
    return all(any(t == w or (len(w) >= 3 and t.startswith(w)) or (len(t) >= 3 and w.startswith(t) and len(w) - len(t) <= 2)
                   for t in toks) for w in words)


def cuts_of(mem: Memory) -> list[float]:
    return [r[0] for r in mem.rows("SELECT t_s FROM cuts ORDER BY t_s")]


def as_row(r) -> dict:
    d = dict(r)
    return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in d.items()}


# ------------------------------------------------------------------------------------------------ frames


class FrameMatch:
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
            rows = box_rows(mem, q, label, self.a, self.b)
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
            if colour_name(q.colour):
                where += " AND colour = ?"
                params.append(colour_name(q.colour))
            reg, _ = region_sql(q.region)
            rows = mem.rows(f"SELECT * FROM shapes WHERE {where}{reg} ORDER BY t_s", tuple(params))
            self.kind = "shapes"
        elif q.target == "frame":
            colour = colour_name(q.colour)
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
        self.by_t = per_frame(self.times, rows)

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
            out += [as_row(r) for r in self.by_t.get(t, [])]
            if len(out) >= MAX_ROWS:
                break
        return out[:MAX_ROWS]

    def nearest(self, t: float) -> float | None:
        """The sampled frame nearest to ``t`` (at most :data:`MOMENT_S` away) that this match reads: for person
        attributes, a frame the people models read."""
        best = min(self.times, key=lambda x: abs(x - t), default=None)
        if best is None or abs(best - t) > MOMENT_S + 1e-6:
            if self.kind == "people":
                near = [r[0] for r in self.mem.rows("SELECT t_s FROM frames WHERE people_read = 1 AND t_s >= ? AND "
                                                    "t_s <= ?", (t - MOMENT_S - 1e-6, t + MOMENT_S + 1e-6))]
            else:
                near = self.mem.frame_times(t - MOMENT_S, t + MOMENT_S)
            best = min(near, key=lambda x: abs(x - t), default=None)
            if best is not None and best not in self.by_t:
                self.by_t[best] = []
                if self.kind == "people":  # its rows were only read for the scope: read this frame's
                    self.by_t[best] = [r for r in box_rows(self.mem, self.q, "person", best, best)]
                else:
                    label = box_label(self.q, self.mem) if self.kind == "boxes" else None
                    self.by_t[best] = [r for r in box_rows(self.mem, self.q, label, best, best)] if label else []
        return best


def scope_covered(mem: Memory, q: MemoryQuery, fr: FrameMatch | None = None) -> tuple[bool, str]:
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


def text_hits(mem: Memory, q: MemoryQuery) -> list[dict]:
    """OCR lines or utterances in the scope whose text holds every pattern word (all of them without a pattern)."""
    a, b = q.time.bounds(mem.duration_s)
    words = pattern_words(q.pattern)
    if q.target == "text":
        rows = mem.rows("SELECT * FROM texts WHERE end_s >= ? AND start_s <= ? ORDER BY t_s", (a, b))
    else:
        rows = mem.rows("SELECT * FROM speech WHERE end_s >= ? AND start_s <= ? ORDER BY start_s", (a, b))
    return [as_row(r) for r in rows if not words or matches(r["norm"], words)]


def text_spans(mem: Memory, hits: list[dict], cuts: list[float]) -> list[list[float]]:
    """Where matching OCR lines were on screen, from the clips read with them (OCR reads a few frames per clip and
    keeps each line's first time in the clip): a run starts at a cut between the last OCR frame before its first
    read and that read (the text changes with the picture), else halfway between the two; it ends at a cut after
    the first read of its last clip, up to the next clip's first OCR frame, else at that clip's end."""
    ocr = [r[0] for r in mem.rows("SELECT t_s FROM frames WHERE ocr_read = 1 ORDER BY t_s")]
    clips = sorted({(h["start_s"], h["end_s"], h["t_s"]) for h in hits})
    spans = merge_runs([[a, b] for a, b, _ in clips])
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


def merge_runs(spans: list[list[float]], gap: float = 0.01) -> list[list[float]]:
    out: list[list[float]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1] + gap:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
#: what each answer form looks like in a read line (:data:`avi.memory.query.ANSWER_FORMS`)
FORM_PATTERNS = {
    "date": re.compile(rf"\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s*\d{{4}}\b|\b\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH},?"
                       rf"\s+\d{{4}}\b|\b\d{{1,4}}[/.-]\d{{1,2}}[/.-]\d{{2,4}}\b|\b{_MONTH}\s+\d{{4}}\b", re.I),
    "year": re.compile(r"\b(?:1[0-9]|20)\d\d\b"),
    "time": re.compile(r"\b\d{1,2}[:.]\d{2}(?:[:.]\d{2})?(?:\s*[ap]\.?\s?m\b\.?)?", re.I),  # a clock's reading
    "number": re.compile(r"\b[A-Za-z]{0,3}\d[\w:/-]*"),  # a number and the letters it is written with (C305, 7B)
}


def form_match(text: str, form: str | None) -> str | None:
    """The first part of ``text`` that has the answer ``form`` (a date, a year, a clock time, a number), ``text``
    itself when no form is asked, None when it holds none."""
    if not form:
        return str(text)
    m = FORM_PATTERNS[form].search(str(text))
    return m.group(0).strip() if m else None


def best_sentence(text: str, words: list[str]) -> str:
    """The sentence of ``text`` holding the most pattern ``words`` (the first on a tie; the whole text when it has
    one sentence or no words are given): an answer's leading statement is what a reader takes as the answer."""
    parts = sentences_of(text)
    if len(parts) <= 1 or not words:
        return str(text).strip()
    return max(parts, key=lambda p: sum(matches(normalise(p), [w]) for w in words))


def sentences_of(text: str) -> list[str]:
    """The sentences of ``text``, in order (split after ``.``, ``!`` or ``?``)."""
    return [p.strip() for p in re.split(r"(?<=[.!?])\s+", str(text).strip()) if p.strip()]
