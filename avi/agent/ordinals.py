"""Ranges a question names by the order of an event ("who scored the first goal"), found in the words the index
read (clips' OCR, the transcript): a search by similarity ranks every goal alike (issue 14). Times are seconds."""

from __future__ import annotations

import re


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


def ordinal_ranges(ordinals, index, duration_s: float | None = None, min_s: float = 5.0,
                   follow_s: float = 5.0) -> list[tuple[str, list[float]]]:
    """``[(phrase, [start_s, end_s])]`` the ``ordinals`` name (:func:`avi.agent.question.ordinal_phrases`): "the
    first <noun>" the earliest clip OCR read or transcript line of the ``index`` holding the noun, "the last" the
    latest, at least ``min_s`` long and followed by ``follow_s`` (what is said about an event comes after it);
    "after/since/following" it to the end of the video (``duration_s`` needed), "before/until" from its start."""
    found: list[tuple[str, list[float]]] = []
    for phrase, which, noun, side in ordinals:
        hits = _hits(index, _word_re(noun))
        if not hits:
            continue
        s, e = min(hits) if which in ("first", "opening") else max(hits)
        e = max(e, s + min_s) + follow_s
        e = min(e, duration_s) if duration_s else e
        if side in ("after", "since", "following"):
            if not duration_s:
                continue
            e = duration_s
        elif side:
            s = 0.0
        found.append((phrase, [round(s, 2), round(e, 2)]))
    return found
