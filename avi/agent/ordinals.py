"""Ranges a question names by the order of an event ("who scored the first goal", "what does the last sign say"),
found in the words the index already read (issue 14, evidence-grounded steps).

Time words name a part of the video by the clock (:func:`avi.video.timecode.question_ranges`); an ordinal names it
by an event, and the small orchestrator then searches by similarity, which ranks every goal alike and hands over the
wrong one (syn-mixed-03: the third goal's scorer was read for the first). The index holds each clip's on-screen
text (OCR) and the transcript with times, so the first or last place the event's word is shown or said is a range
the host can name before any model step. Times are seconds.
"""

from __future__ import annotations

import re

_ORDINAL = re.compile(r"\b(?P<before>after|before|since|until|following|preceding)?\s*\bthe\s+"
                      r"(?P<which>first|last|final|opening|closing)\s+(?P<noun>[a-z]+)\b", re.I)

#: Nouns after an ordinal that name a part of the video or a unit (time words, :mod:`avi.video.timecode`) or a
#: cut (:mod:`avi.agent.measured`), not an event whose word the video shows or says.
NOT_EVENTS = frozenset(
    "second seconds minute minutes hour hours frame frames moment moments half part parts quarter third scene "
    "scenes shot shots cut cuts clip clips time times few couple video segment segments section sections word "
    "words letter letters line lines sentence sentences thing things one ones few".split())


def _word_re(noun: str) -> re.Pattern:
    stem = noun[:-1] if noun.endswith("s") and len(noun) > 3 else noun
    return re.compile(rf"\b{re.escape(stem)}(?:s|es)?\b", re.I)


def _index_texts(index) -> list[tuple[float, float, str]]:
    """``(start_s, end_s, text)`` of every clip (its OCR reads joined by spaces) and every transcript line."""
    rows = [(float(cap.start_s), float(cap.end_s),
             " ".join(str(o.get("text", "")) for o in (getattr(cap, "data", None) or {}).get("ocr") or []))
            for cap in getattr(index, "captions", None) or []]
    return rows + [(float(seg.start_s), float(seg.end_s), seg.text or "")
                   for seg in getattr(index, "transcript", None) or []]


def _hits(index, word: re.Pattern) -> list[tuple[float, float]]:
    """``(start_s, end_s)`` of every clip whose OCR text, and every transcript line whose words, hold the word."""
    return [(s, e) for s, e, text in _index_texts(index) if word.search(text)]


def ordinal_ranges(question: str, index, duration_s: float | None = None, min_s: float = 5.0,
                   follow_s: float = 5.0) -> list[tuple[str, list[float]]]:
    """The ranges the question's ordinals name: for "the first <noun>" the earliest place the index shows or
    says the noun (an OCR read of a clip, a transcript line), for "the last/final <noun>" the latest, at least
    ``min_s`` long and followed by ``follow_s`` seconds (what is said or shown about an event comes right after
    it: the scorer's name after the "GOAL!" caption).

    An ordinal after "after"/"since"/"following" names the rest of the video from the event ("is the score
    ever level after the first goal": from its clip to the end), after "before"/"until"/"preceding" the video up
    to it. Nouns that are units or parts of the video ("the first minute", "the last shot") are left to the time
    words and give no range.

    Args:
        question: the question text.
        index: the video index (``captions`` with ``data["ocr"]`` reads, ``transcript`` segments); anything
            without them gives no range.
        duration_s: the video's length; ranges end there ("after the first goal" needs it).

    Returns:
        ``[(phrase, [start_s, end_s])]`` in question order, e.g. ``[("the first goal", [...])]``.
    """
    found: list[tuple[str, list[float]]] = []
    for m in _ORDINAL.finditer(question or ""):
        noun = m.group("noun").lower()
        if noun in NOT_EVENTS:
            continue
        hits = _hits(index, _word_re(noun))
        if not hits:
            continue
        first = m.group("which").lower() in ("first", "opening")
        s, e = min(hits) if first else max(hits)
        e = max(e, s + min_s) + follow_s
        e = min(e, duration_s) if duration_s else e
        side = (m.group("before") or "").lower()
        if side in ("after", "since", "following"):
            if not duration_s:
                continue
            e = duration_s
        elif side:
            s = 0.0
        found.append((m.group(0).strip(), [round(s, 2), round(e, 2)]))
    return found
