"""The reading of an on-screen word the frames agree on, for answers that quote one OCR read: OCR misreads a letter
on a blurred frame ("CAMPBODON") or reads a word cut by the frame's edge ("AXI" of "TAXI"), and a small
orchestrator answers with whichever read it saw first. Every read of the range supports the candidates it
resembles, and a read that is part of a longer one supports the longer one fully (a cut read is evidence of the
whole word, not the reverse).
"""

from __future__ import annotations

from collections.abc import Iterable
from difflib import SequenceMatcher

from avi.agent.question import normalise

#: two reads at least this similar (difflib ratio of their letters) are one text read differently
READ_SIMILARITY = 0.7
#: what a longer read gets from a read it is part of
CUT_SUPPORT = 1.0
#: what a shorter read gets from a longer read it is part of (it may be the word the frame shows cut)
PART_SUPPORT = 0.5


def _key(text: str) -> str:
    return normalise(text).replace(" ", "")


def _support(candidate: str, read: str) -> float:
    """How much ``read`` supports ``candidate``: 1 for the same text or the candidate cut short, half the
    similarity for the read cut short, the similarity when at least :data:`READ_SIMILARITY` alike, else 0."""
    if candidate == read:
        return 1.0
    ratio = SequenceMatcher(None, candidate, read).ratio()
    if _cut(read, candidate):
        return CUT_SUPPORT
    if _cut(candidate, read):
        return PART_SUPPORT * ratio
    return ratio if ratio >= READ_SIMILARITY and min(len(candidate), len(read)) >= 4 else 0.0


def _cut(part: str, whole: str) -> bool:
    """Whether ``part`` reads as ``whole`` cut short: at least three characters of it, with only letters
    missing ("42" is a different number from "4", not a cut one)."""
    if len(part) < 3 or part not in whole or part == whole:
        return False
    return not any(ch.isdigit() for ch in whole.replace(part, "", 1))


def agreed_reading(answer: str, reads: Iterable[tuple[str, float]]) -> tuple[str, float, float] | None:
    """``(text, its support, the answer's support)`` of the read that the range's ``reads`` (``(text, OCR score)``,
    one per frame and text) support more than the one ``answer`` is (support: the score-weighted sum of
    :func:`_support`); None when the answer is no read or its own read is the best supported."""
    reads = [(t, float(s)) for t, s in reads if _key(t)]
    own = _key(answer)
    if len(own) < 3 or not any(_key(t) == own for t, _ in reads):
        return None
    candidates: dict[str, str] = {}
    for t, _ in reads:  # the reads related to the answer's, each in the spelling first seen
        k = _key(t)
        if k != own and (_support(k, own) > 0 or _support(own, k) > 0):
            candidates.setdefault(k, t)
    if not candidates:
        return None

    def support(k: str) -> float:
        return sum(_support(k, _key(t)) * s for t, s in reads)

    mine = support(own)
    best = max(candidates, key=lambda k: (support(k), len(k)))
    got = support(best)
    return (candidates[best].strip(), round(got, 3), round(mine, 3)) if got > mine + 1e-6 else None
