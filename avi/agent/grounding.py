"""Evidence grounding for small orchestrators (issue 14), who search the whole video when the question names
where to look: :class:`Places` (the ranges worth inspecting, best first: the question's time words, then the
search hits by similarity; a perceive call on a range nothing supports is questioned once), the evidence strings
a free-text answer may be taken from, the evidence runs an interval is widened to, and what the profile's
detector said it cannot see. Times are seconds; ranges ``[start_s, end_s]``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from avi.video.spans import merge_spans, span_length, span_overlap
from avi.video.timecode import fmt_range


@dataclass
class Place:
    """One range worth inspecting: ``span``, what supports it (``source``: ``question`` or the retrieve tool's
    name), its similarity to the query (``score``; 1.0 for ranges the question names) and the question's words
    for it or the tool's query (``label``)."""

    span: list[float]
    source: str
    score: float
    label: str = ""


@dataclass
class Places:
    """The ranges worth inspecting for one question, best first; a perceive range within ``tolerance_s`` of a
    place counts as supported by it."""

    tolerance_s: float = 2.5
    items: list[Place] = field(default_factory=list)

    def add_named(self, named: list[tuple[str, list[float]]]) -> None:
        """Add the ranges the question's time words name (``question_ranges`` output)."""
        for phrase, span in named:
            self.items.append(Place([float(span[0]), float(span[1])], "question", 1.0, phrase))

    def add_observation(self, tool: str, data: dict, evidence: list[list[float]]) -> None:
        """Add what a retrieve tool returned: clips with similarities (``clip_retrieve``), transcript lines
        (``transcript_search``) or, for the other tools, their evidence ranges (scored 0)."""
        rows = data.get("clips") or data.get("segments") or []
        query = str(data.get("query") or "")
        added = False
        for r in rows:
            if isinstance(r, dict) and "start_s" in r and "end_s" in r:
                self.items.append(Place([float(r["start_s"]), float(r["end_s"])], tool,
                                        float(r.get("similarity") or 0.0), query))
                added = True
        if not added:
            for s, e in evidence:
                self.items.append(Place([float(s), float(e)], tool, 0.0, query))

    def best(self, n: int = 5) -> list[Place]:
        """Up to ``n`` places: every range the question names first, then search hits by similarity
        (neighbouring hits of one query joined), no range twice."""
        named = [p for p in self.items if p.source == "question"]
        hits = sorted((p for p in self.items if p.source != "question"), key=lambda p: -p.score)
        out: list[Place] = []
        for p in named + hits:
            if any(span_overlap(p.span, q.span) >= 0.5 * max(1e-9, min(span_length(p.span), span_length(q.span)))
                   for q in out):
                continue
            out.append(p)
            if len(out) >= n:
                break
        return out

    def describe(self, n: int = 5) -> str:
        """The places as one line each for the Perceive instruction ("" when there are none)."""
        lines = []
        for p, joined in self._joined(self.best(n)):
            why = f'named in the question ("{p.label}")' if p.source == "question" else \
                f"tree search segment, score {p.score:.2f}" if p.source == "tree_search" else \
                f"{p.source} hit{'s' if joined > 1 else ''}, similarity {p.score:.2f}" if p.score \
                else f"{p.source} result"
            lines.append(f"  - {fmt_range(*p.span)}: {why}")
        return "\n".join(lines)

    @staticmethod
    def _joined(places: list[Place], gap_s: float = 0.05) -> list[tuple[Place, int]]:
        """``(place, count)``: the search hits of one tool that touch (within ``gap_s``) as one place with their
        union span and best score (five clips of a held slide are one range to copy, not five); ranges the
        question names are never joined."""
        joined: dict[int, tuple[Place, int]] = {}  # id of each group's best-ranked member -> (union, count)
        for source in {p.source for p in places if p.source != "question"}:
            mine = [p for p in places if p.source == source]
            for span in merge_spans([p.span for p in mine], gap_s):
                members = [p for p in mine if span[0] <= p.span[0] and p.span[1] <= span[1]]
                joined[id(members[0])] = (Place(span, source, max(m.score for m in members), members[0].label),
                                          len(members))
        return [(p, 1) if p.source == "question" else joined[id(p)] for p in places
                if p.source == "question" or id(p) in joined]

    def unsupported(self, ranges: list[list[float]]) -> list[list[float]]:
        """The ranges of a perceive call that overlap no place widened by ``tolerance_s`` (the named places only,
        when the question names any); none when there are no places yet."""
        if not self.items:
            return []
        named = [p for p in self.items if p.source == "question"]
        pool = named or self.items  # when the question names where to look, that is where to look
        out = []
        for r in ranges:
            s, e = sorted((float(r[0]), float(r[-1])))
            if not any(s <= p.span[1] + self.tolerance_s and e >= p.span[0] - self.tolerance_s for p in pool):
                out.append([s, e])
        return out


def evidence_span(answer: list[float], runs: list[list[float]], *, gap_s: float = 1.0,
                  pad_s: float = 0.25) -> list[float] | None:
    """The whole event an interval ``answer`` points at: the evidence ``runs`` it overlaps or touches within
    ``gap_s``, chained through runs that follow each other within ``gap_s``, padded by ``pad_s`` (half the 2 fps
    step); None when no run is near."""
    a0, a1 = sorted(answer)
    merged = merge_spans([[float(s), float(e)] for s, e in runs if e >= s], gap_s=gap_s)
    hit = [m for m in merged if m[0] <= a1 + gap_s and m[1] >= a0 - gap_s]
    if not hit:
        return None
    s, e = min(m[0] for m in hit), max(m[1] for m in hit)
    return [max(0.0, s - pad_s), e + pad_s]


def _forms(word: str) -> set[str]:
    """A word and its forms without a plural ending (``glasses`` → glasses, glasse, glass)."""
    out = {word}
    for end in ("es", "s"):
        if len(word) > len(end) + 2 and word.endswith(end):
            out.add(word[: -len(end)])
    return out


def unseen_labels(question_words: frozenset[str], unsupported: list[str], frame_analyzer_name: str) -> list[str]:
    """The labels object_detect reported it has no class for (``unsupported``) whose every word the question
    names (``question_words``, plural endings ignored), lower case, without repeats. Only a profile whose frame
    analysis is a measurement (name ``perception…``) can be blind; a VLM looks at the frames."""
    if not str(frame_analyzer_name).startswith("perception"):
        return []
    asked = {f for w in question_words for f in _forms(w)}
    out: list[str] = []
    for label in unsupported:
        parts = re.findall(r"[a-z]+", str(label).lower())
        if parts and all(_forms(w) & asked for w in parts) and str(label).lower() not in out:
            out.append(str(label).lower())
    return out
