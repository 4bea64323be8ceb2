"""Budgeted tree search over the video as a Perceive strategy (EEA, arXiv 2512.03500, §3.1-3.3, Algorithm 1).

Setting ``perceive_strategy = "tree"``: before the model's first Perceive step the host searches the video as a
tree whose root is the whole video (or the ranges the question's time words name) and whose nodes are time
segments:

1. **Anchors and the query score u(s)** (EEA §3.1-3.2): every clip caption of the index is scored against the
   question by the embedder (cosine similarity φ); a segment's query score is EEA's log-mean-exp pooling
   ``u(s) = τ_c · log(mean_j exp(φ_j / τ_c))`` over the clips it overlaps, τ_c = 0.1.
2. **Expansion** (EEA §3.3): the selected segment gets B frames: its best anchors (the clip middles with the
   highest φ, at most B_s of them) plus frames that cut its longest unobserved gaps (1-D k-center coverage);
   the B frames split it into B + 1 children.
3. **Intrinsic reward r(s)** (EEA uses a VLM's 0-100 score of the boundary frames; here it is *measured*, on
   both profiles, with the cheap perception of :func:`avi.backends.frame_analyzer.measure_frame`): the share
   of the question's measurable words (object classes, colours, words of on-screen text, shape kinds) found in
   the better of the child's two boundary frames, in [0, 1].
4. **Uncertainty-aware fusion** (EEA §3.2): ``H`` = normalised entropy of softmax(r / τ_r) over all current
   leaves, ``h(s) = (1 - H) · r(s) + H · u'(s)`` with u' the query scores min-max scaled over the leaves (EEA
   leaves the scales and τ_r unstated: both are in [0, 1] here, τ_r = 0.1). A question with nothing
   measurable (no class, colour or text word) has equal rewards, H = 1, and is searched by u alone.
5. The leaf with the highest h is expanded next (EEA's policy π is an LLM; here it is greedy), until the
   tree's frames (at most 16α, an overview's worth, and what the question's frame budget has left) are spent,
   the best leaf is shorter than two clips, or it is confident (r = 1 and H ≤ 0.5).

The best leaves become the places the Perceive stage message lists when the measurement found something the
question names (``observation_data["measured"]``); when it found nothing, the tree was ranked by caption
similarity alone, coarser than the clip search's hits, and the hits stay the places. The trace gets one host
step with the whole tree (``observation_data["tree"]``) and the frames it looked at.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field

from avi.budget import overview_frames
from avi.tools.base import Observation, Question, TimeRanges, ToolContext, clip_ranges, tool
from avi.tools.timeline import measure_low_res, query_terms
from avi.video.timecode import fmt_range

#: EEA's query-score temperature τ_c (§3.2)
TAU_C = 0.1
#: softmax temperature of the rewards in the entropy (EEA leaves it unstated; rewards are in [0, 1] here)
TAU_R = 0.1
#: at most this many of an expansion's frames are anchors (EEA's B_s)
ANCHORS_PER_EXPANSION = 2
#: the leaves that become the Perceive places
BEST_LEAVES = 3

_STOP = frozenset("the a an and or of in on at to is are was were be been what which who whom whose when where how "
                  "many much does do did this that these those there it its with from for by as video shown shows "
                  "show seen see visible first last time point frame scene during after before".split())


@dataclass
class Node:
    """One segment of the search tree (seconds); ``r``/``u``/``h`` as in the module docstring."""

    id: int
    start_s: float
    end_s: float
    depth: int
    parent: int | None = None
    r: float = 0.0
    u: float = 0.0
    h: float = 0.0
    expanded: bool = False
    frames_s: list[float] = field(default_factory=list)

    @property
    def length(self) -> float:
        return self.end_s - self.start_s


def log_mean_exp(values: list[float], tau: float = TAU_C) -> float:
    """``τ · log(mean(exp(v / τ)))``: EEA's soft maximum of anchor similarities (0.0 for none)."""
    if not values:
        return 0.0
    m = max(values)
    return m + tau * math.log(sum(math.exp((v - m) / tau) for v in values) / len(values))


def normalised_entropy(rewards: list[float], tau: float = TAU_R) -> float:
    """Entropy of softmax(rewards / τ) divided by log N, in [0, 1] (1.0 for fewer than two rewards)."""
    if len(rewards) < 2:
        return 1.0
    m = max(rewards)
    w = [math.exp((r - m) / tau) for r in rewards]
    z = sum(w)
    return -sum((x / z) * math.log(x / z) for x in w if x > 0) / math.log(len(rewards))


def coverage_times(start_s: float, end_s: float, anchors: list[float], n: int) -> list[float]:
    """``n`` frame times inside ``(start_s, end_s)``: the given anchor times first, then, one at a time, the middle
    of the longest gap left between chosen times and the segment's ends (greedy 1-D k-center, EEA §3.3)."""
    chosen = sorted({round(t, 3) for t in anchors if start_s < t < end_s})[:n]
    while len(chosen) < n:
        edges = [start_s, *chosen, end_s]
        a, b = max(zip(edges, edges[1:]), key=lambda g: g[1] - g[0])
        if b - a < 1e-3:
            break
        chosen = sorted(chosen + [round((a + b) / 2, 3)])
    return chosen


class TreeSearch:
    """EEA-style budgeted search for one question (module docstring).

    Args:
        ctx: the question's :class:`avi.tools.ToolContext` (index with clip captions, embedder, OCR, detector,
            video, frame budget).
        question: the question text (with its options).
        roots: ``[[start_s, end_s]]`` to search (the question's time-word ranges, else the whole video).
    """

    def __init__(self, ctx, question: str, roots: list[list[float]]):
        self.ctx = ctx
        self.terms = self._terms(question)
        self.anchors = self._anchors(question)
        self.nodes = [Node(i, float(s), float(e), 0) for i, (s, e) in enumerate(roots)]
        self.rows: dict[float, dict] = {}

    @staticmethod
    def _terms(question: str):
        classes, colours, words = query_terms(question)
        return classes, colours, {w for w in words if w not in _STOP and not w.isdigit()}

    def _anchors(self, question: str) -> list[tuple[float, float, float]]:
        """``(start_s, end_s, φ)`` of every clip caption against the question."""
        index, embedder = self.ctx.index, self.ctx.backends.embedder
        n = len(getattr(index, "captions", []) or [])
        if not n:
            return []
        return [(c.caption.start_s, c.caption.end_s, float(c.similarity))
                for c in index.search(question, embedder, top_k=n)]

    def _u(self, node: Node) -> float:
        return log_mean_exp([phi for s, e, phi in self.anchors if s < node.end_s and e > node.start_s])

    def _measure(self, times: list[float]) -> None:
        new = [t for t in times if t not in self.rows]
        for f in self.ctx.video.frames_at(new):
            self.rows[f.t_s] = measure_low_res(self.ctx, f)
        for t in new:  # a time the reader mapped to another frame time: the nearest measured row
            if t not in self.rows and self.rows:
                self.rows[t] = self.rows[min(self.rows, key=lambda k: abs(k - t))]

    def _hit_share(self, t: float | None) -> float:
        row = self.rows.get(t) if t is not None else None
        classes, colours, words = self.terms
        total = len(classes) + len(colours) + len(words)
        if row is None or not total:
            return 0.0
        shapes = [k.split(" ", 1) for k in row.get("shape_kinds", ())]  # "red square" -> colour, kind
        text = set(re.findall(r"[a-z0-9']+", " ".join(row["text"]).lower()))
        text |= {kind for _, kind in shapes} | {kind + "s" for _, kind in shapes}
        hits = sum(1 for c in classes if (c == "person" and row["people"]) or row["objects"].get(c))
        hits += sum(1 for c in colours if c in row["colours"][:3] or any(c == colour for colour, _ in shapes))
        hits += len(words & text)
        return hits / total

    def leaves(self) -> list[Node]:
        """The current frontier: nodes not expanded, best fused score first."""
        return sorted((n for n in self.nodes if not n.expanded), key=lambda n: -n.h)

    def _fuse(self) -> float:
        leaves = [n for n in self.nodes if not n.expanded]
        us = [self._u(n) for n in leaves]
        lo, hi = min(us), max(us)
        big_h = normalised_entropy([n.r for n in leaves])
        for n, u in zip(leaves, us):
            n.u = u
            scaled = (u - lo) / (hi - lo) if hi > lo else 0.5
            n.h = (1 - big_h) * n.r + big_h * scaled
        return big_h

    def _expand(self, node: Node, n_frames: int) -> list[float]:
        inside = sorted(((phi, (s + e) / 2) for s, e, phi in self.anchors if node.start_s < (s + e) / 2 < node.end_s),
                        reverse=True)
        times = coverage_times(node.start_s, node.end_s, [t for _, t in inside[:ANCHORS_PER_EXPANSION]], n_frames)
        if not times:
            return []
        self._measure(times)
        node.expanded, node.frames_s = True, times
        edges = [node.start_s, *times, node.end_s]
        for i, (a, b) in enumerate(zip(edges, edges[1:])):
            left = times[i - 1] if i > 0 else None
            right = times[i] if i < len(times) else None
            child = Node(len(self.nodes), a, b, node.depth + 1, node.id)
            child.r = max(self._hit_share(left), self._hit_share(right))
            self.nodes.append(child)
        return times

    def run(self, max_frames: int, per_expansion: int, min_span_s: float) -> dict:
        """Search until ``max_frames`` frames are measured, the best leaf is shorter than ``min_span_s``, or it is
        confident. Returns the trace record: ``{"tree": [node dicts], "frames_s", "entropy", "stopped"}``."""
        spent: list[float] = []
        big_h, stopped = self._fuse(), "frames spent"
        while len(spent) < max_frames:
            best = self.leaves()[0]
            if best.length < min_span_s:
                stopped = "the best segment is shorter than two clips"
                break
            if best.r >= 1.0 and big_h <= 0.5 and best.depth > 0:
                stopped = "confident: every measurable word of the question is in the best segment's frames"
                break
            times = self._expand(best, min(per_expansion, max_frames - len(spent)))
            if not times:
                stopped = "nothing left to split"
                break
            spent += times
            big_h = self._fuse()
        return {"tree": [asdict(n) for n in self.nodes], "frames_s": sorted(spent), "entropy": round(big_h, 3),
                "stopped": stopped, "terms": [sorted(t) for t in self.terms],
                "measured": any(n.r > 0 for n in self.nodes)}


@tool("perceive")
def tree_search(ctx: ToolContext, question: Question, time_ranges: TimeRanges) -> Observation:
    """Budgeted tree search (EEA) for where the evidence for a question is; run by the host, not offered to the model.

    Args:
        question: the question, with its options.
        time_ranges: the roots of the tree, [[start_s, end_s], ...] in seconds (the whole video, or the ranges
            the question's time words name).
    """
    ranges, notes = clip_ranges(ctx, time_ranges)
    if not ranges:
        raise ValueError("no time range inside the video to search")
    alpha, clip_s = ctx.alpha, float(getattr(ctx.settings, "clip_seconds", 5.0))
    search = TreeSearch(ctx, question, ranges)
    wanted = overview_frames(alpha)
    cap = ctx.frame_cap(wanted)
    if cap < wanted:
        notes.append(f"the question's frame budget ({ctx.frame_budget} frames) had {cap} left: the tree search "
                     f"measured at most {cap} of its {wanted} frames")
    record = search.run(cap, max(2, int(round(4 * alpha))), 2 * clip_s)
    best = search.leaves()[:BEST_LEAVES]
    record["best"] = [[round(b.start_s, 3), round(b.end_s, 3), round(b.h, 3)] for b in best]
    expanded = sum(n.expanded for n in search.nodes)
    text = (f"tree search over {', '.join(fmt_range(s, e) for s, e in ranges)}: {expanded} segment"
            f"{'s' if expanded != 1 else ''} split, {len(record['frames_s'])} frames measured ({record['stopped']}); "
            f"best segments: " + "; ".join(f"{fmt_range(b.start_s, b.end_s)} (score {b.h:.2f})" for b in best))
    if notes:
        text += "\nNote: " + "; ".join(notes)
    return Observation(text, record, record["frames_s"], [[b.start_s, b.end_s] for b in best], notes=notes)
