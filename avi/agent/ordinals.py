"""Ranges a question names by the order of an event ("who scored the first goal", "what does the last sign say")
or by two events ("between the Automation slide and the list of famous lighthouses"), found in the words the
index already read (issue 14, evidence-grounded steps).

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


_BETWEEN = re.compile(r"\bbetween\s+(?P<x>the\s+[^,?;]+?)\s+and\s+(?P<y>the\s+[^,?;]+?)\s*(?:[,?;.]|$)", re.I)

#: Words of an event phrase that name the kind of thing shown, not what it shows or says ("the Automation
#: slide", "the list of famous lighthouses"): they are not looked for in the index's text.
GENERIC = frozenset(
    "slide slides list lists screen screens card cards sign signs title titles caption captions page pages "
    "text board picture image view part".split()) | NOT_EVENTS


_STOPWORDS = frozenset("the that this with from into onto over under than then what which when where about".split())


def _key_words(phrase: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+", phrase.lower())
            if len(w) >= 4 and w not in GENERIC and w not in _STOPWORDS]


def _phrase_hits(index, phrase: str) -> list[tuple[float, float]]:
    """The clips (OCR) and transcript lines that hold the most of the phrase's key words, at least half of
    them: ``[(start_s, end_s)]`` in time order."""
    keys = _key_words(phrase)
    if not keys:
        return []
    scored = []
    for s, e, text in _index_texts(index):
        n = sum(bool(_word_re(k).search(text)) for k in keys)
        if n:
            scored.append((n, s, e))
    best = max((n for n, _, _ in scored), default=0)
    if best * 2 < len(keys):
        return []
    return sorted((s, e) for n, s, e in scored if n == best)


def between_ranges(question: str, index, pad_s: float = 2.0) -> list[tuple[str, list[float]]]:
    """The range a question names by two events: "between the Automation slide and the list of famous
    lighthouses" is the time from the end of the last clip that shows the first (before the second is shown)
    to the start of the first clip after it that shows the second, widened by ``pad_s`` on both sides (clips
    are coarse). Each phrase is found by its key words (four letters or more, not :data:`GENERIC`) in the
    index's OCR reads and transcript lines: the places that hold the most of them, at least half.

    Args:
        question: the question text (its options are left out); clock times ("between 7:40 and 8:40") are left to
            :func:`avi.video.timecode.question_ranges` (their phrases have no key words).
        index: the video index (``captions`` with ``data["ocr"]``, ``transcript``).

    Returns:
        ``[(phrase, [start_s, end_s])]``, empty when a phrase is not found or the second is not after the first.
    """
    from avi.agent.choice import question_stem  # options ("a paved area between lawns ...") name no range

    m = _BETWEEN.search(question_stem(question or ""))
    if not m:
        return []
    xs, ys = _phrase_hits(index, m.group("x")), _phrase_hits(index, m.group("y"))
    if not xs or not ys:
        return []
    first_x = xs[0][0]
    after = [s for s, _ in ys if s > first_x]
    if not after:
        return []
    y_start = min(after)
    x_end = max(e for s, e in xs if s < y_start)
    if x_end > y_start:
        return []
    return [(m.group(0).strip(" ,?;."), [round(max(0.0, x_end - pad_s), 2), round(y_start + pad_s, 2)])]
