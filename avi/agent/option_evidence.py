"""Multiple-choice options matched against the words the video shows and says (issue 14).

A question whose options quote on-screen text or speech ("What is on screen halfway through? A. the MATCH DAY
title card B. the HALF TIME card ...", "How old was Fresnel when he died, according to the lecturer? A) 45
B) 27 C) 39 D) 52") is answered by the evidence strings themselves: OCR lines and transcript lines of the range
the question is about. An option *matches* a string when its key words appear in the string in the same order
(:func:`option_keys`); when exactly one option matches, that is the measured answer and the option scores are
not needed. All matching is on normalised words (lower case, no punctuation, number words as digits).
"""

from __future__ import annotations

import re
from collections import Counter

_UNITS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen".split())}
_TENS = {w: 10 * (i + 2) for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())}

STOP = frozenset(
    "the a an of in on at to with and or from by for is are was were it its this that there their his her "
    "one who what which when where how does do did be been being as into onto over under than then".split())
"""Words an option's key words leave out (they match anywhere, or are number words kept as digits)."""


def words(text: str) -> list[str]:
    """Lower-case words of ``text`` without punctuation, number words written as digits ("thirty-nine" -> "39",
    "two" -> "2")."""
    toks = re.findall(r"[a-z0-9]+", (text or "").lower().replace("-", " "))
    out: list[str] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        if t in _TENS:
            value = _TENS[t]
            if i + 1 < len(toks) and toks[i + 1] in _UNITS and 0 < _UNITS[toks[i + 1]] < 10:
                value += _UNITS[toks[i + 1]]
                i += 1
            out.append(str(value))
        elif t in _UNITS and t != "one":  # "one" is as often a pronoun ("the one who") as a number
            out.append(str(_UNITS[t]))
        else:
            out.append(t)
        i += 1
    return out


def option_keys(option: str) -> list[str]:
    """The words of an option that must appear in an evidence string, in order.

    Words in capitals (at least two letters) are the text the option quotes, and only they (with the option's
    numbers) are keys: "the HALF TIME card" -> ``["half", "time"]``. Otherwise every word of three or more
    letters that is not in :data:`STOP`, and every number: "Rivers 3, Harbour 2" -> ``["rivers", "3",
    "harbour", "2"]``.
    """
    caps = re.findall(r"\b[A-Z0-9][A-Z0-9'&-]*[A-Z][A-Z0-9'&-]*\b|\b[A-Z]{2,}\b", option or "")
    if caps:
        keys = [w for c in caps for w in words(c)]
        nums = [w for w in words(option) if w.isdigit() and w not in keys]
        return keys + nums
    return [w for w in words(option) if w.isdigit() or (len(w) >= 3 and w not in STOP)]


def in_order(keys: list[str], toks: list[str]) -> bool:
    """Whether ``keys`` appear in ``toks`` in this order (other words may stand between them)."""
    it = iter(toks)
    return bool(keys) and all(any(k == t for t in it) for k in keys)


def loosely(keys: list[str], toks: list[str]) -> bool:
    """Whether ``keys``' words all appear in ``toks`` and its numbers appear there in this order.

    The looser match of a scoreboard line, whose names and numbers interleave differently from an option's:
    "Rivers 3, Harbour 2" (keys ``["rivers", "3", "harbour", "2"]``) holds for "RIVERS 3 - 2 HARBOUR", and
    "Rivers 2, Harbour 3" does not (its numbers in the other order).
    """
    nums = [k for k in keys if k.isdigit()]
    return bool(keys) and set(keys) <= set(toks) and in_order(nums, [t for t in toks if t.isdigit()]) \
        if nums else False


def relevant(strings: list[str], question: str) -> list[str]:
    """The strings that share a word of four letters or more (not a stop word) with the question, or all of
    them when none does: "How old was Fresnel when he died" keeps the lines about Fresnel and the line
    "Fressel was a friend-changineer, who died young, at only 39." (the speech recogniser's spelling of the
    name: the shared "died" keeps it, syn-lecture-09)."""
    qwords = {w for w in words(question) if len(w) >= 4 and w not in STOP}
    hits = [s for s in strings if qwords & set(words(s))]
    return hits or strings


def text_choice(options: dict[str, str], strings: list[str], question: str) -> tuple[str, str] | None:
    """The one option whose key words (:func:`option_keys`) appear in order in one of the evidence strings
    (where no option's do, the one that matches :func:`loosely`).

    Args:
        options: ``{letter: text}``.
        strings: OCR and transcript lines of the range the question is about.
        question: the question without its options (:func:`relevant` narrows the strings with it).

    Returns:
        ``(letter, the string it matched)``, or None when no option, or more than one, matches.
    """
    pool = relevant([s for s in strings if s and s.strip()], question)
    tokenised = [(s, words(s)) for s in pool]
    hits: dict[str, str] = {}
    for match in (in_order, loosely):  # the looser match only where no option's words are in order anywhere
        for letter, text in options.items():
            keys = option_keys(text)
            for s, toks in tokenised:
                if match(keys, toks):
                    hits[letter] = s
                    break
        if hits:
            break
    if len(hits) != 1:
        return None
    (letter, s), = hits.items()
    return letter, s


_NAME = re.compile(r"\b[A-Z][a-z]{2,}\b")


def number_beside(question: str, lines: list[str], max_words: int = 8) -> tuple[str, str] | None:
    """The number an on-screen label writes next to a name the question gives: "How many goals have Rivers
    scored?" read from a scoreboard "RIVERS 2 - 1 HARBOUR" is 2 (the number nearest the name; one after it
    before one as far before it).

    Args:
        question: the question without its options; its names are its capitalised words after the first word
            (not in :data:`STOP`).
        lines: on-screen text lines of the range asked about (OCR; not speech, whose sentences hold numbers of
            every kind). Only lines of at most ``max_words`` words count: labels, not sentences.

    Returns:
        ``(number, the line it was read from)`` when the lines agree on one number (the most frequent reading
        by a clear margin), else None.
    """
    names = [w.lower() for w in _NAME.findall(question or "")[0 if not re.match(r"\s*[A-Z][a-z]{2,}\b",
                                                                                 question or "") else 1:]]
    names = [n for n in names if n not in STOP]
    votes: Counter = Counter()
    where: dict[str, str] = {}
    for line in lines:
        toks = words(line)
        if not toks or len(toks) > max_words:
            continue
        for name in names:
            if name not in toks:
                continue
            i = toks.index(name)
            near = sorted((abs(j - i) + (0.5 if j < i else 0.0), t) for j, t in enumerate(toks) if t.isdigit())
            if near:
                votes[near[0][1]] += 1
                where.setdefault(near[0][1], line)
            break
    top = votes.most_common(2)
    if not top or (len(top) > 1 and top[1][1] * 2 > top[0][1]):
        return None
    return top[0][0], where[top[0][0]]


_PLACE = re.compile(r"\b(?:at|on|in|near)\s+the\s+(?P<where>bottom|top|left|right)\b|\b(?P<most>lowest|highest|"
                    r"uppermost|bottommost|leftmost|rightmost)\b", re.I)
_AXIS = {"bottom": (1, max), "lowest": (1, max), "bottommost": (1, max), "top": (1, min), "highest": (1, min),
         "uppermost": (1, min), "left": (0, min), "leftmost": (0, min), "right": (0, max), "rightmost": (0, max)}


def placed_choice(options: dict[str, str], lines: list[dict], question: str) -> tuple[str, str] | None:
    """For "which lighthouse is at the bottom of the list on screen?", the option whose text the OCR boxes
    place lowest (highest for "top", leftmost for "left", rightmost for "right"), among the options read in
    the range asked about (syn-lecture-10: "Eddystone" above "Bell Rock").

    Args:
        options: ``{letter: text}``.
        lines: OCR lines ``{"text", "box": [x1, y1, x2, y2] (pixels, y down)}`` of the range asked about.
        question: the question without its options.

    Returns:
        ``(letter, "<text> at y=<centre> px")``, or None when the question names no place, or fewer than two
        options are read (one option read is :func:`text_choice`'s to decide).
    """
    m = _PLACE.search(question or "")
    if not m:
        return None
    axis, pick = _AXIS[(m.group("where") or m.group("most")).lower()]
    where: dict[str, list[float]] = {}
    for letter, text in options.items():
        keys = option_keys(text)
        for line in lines:
            box = line.get("box")
            if box and len(box) == 4 and in_order(keys, words(str(line.get("text", "")))):
                where.setdefault(letter, []).append((float(box[axis]) + float(box[axis + 2])) / 2)
    if len(where) < 2:
        return None
    centre = {k: sum(v) / len(v) for k, v in where.items()}
    letter = pick(centre, key=centre.get)
    return letter, f"{options[letter]} at {'xy'[axis]}={centre[letter]:.0f} px"


_QUOTE = re.compile(r"['\"\u2018\u201c](?P<q>[^'\"\u2019\u201d]{4,}?)['\"\u2019\u201d](?=\W|$)")
_SHOWN = re.compile(r"\b(?:on[\s-]screen|shown|show|shows|written|displayed|visible|appear|appears|read|reads)\b",
                    re.I)
_SAID = re.compile(r"\b(?:say|says|said|mention|mentions|mentioned|speak|speaks|spoken|talk|talks)\b", re.I)


def quoted_in(question: str, shown: list[str], said: list[str]) -> tuple[str, str] | None:
    """For a yes/no question about a quoted line ("Is the line 'About 100 metres tall' on screen in the first
    minute?", "Does the lecturer say 'mind the gap'?"), the evidence line that holds the quote's words in
    order: the OCR lines when the question asks about the screen, the transcript lines when it asks about
    speech.

    Args:
        question: the question text (the quote in single, double or typographic quotes, four characters or more).
        shown: OCR lines of the range the question names; said: transcript lines of that range.

    Returns:
        ``(quote, line)`` when a line holds it, else None (a quote not found is no proof of absence: OCR and
        speech recognition miss words, and the model's answer stands).
    """
    m = _QUOTE.search(question or "")
    if not m:
        return None
    pool = (shown if _SHOWN.search(question) else []) + (said if _SAID.search(question) else [])
    keys = words(m.group("q"))
    for line in pool:
        if in_order(keys, words(line)):
            return m.group("q"), line
    return None


_CAPS_RUN = re.compile(r"\b[A-Z0-9]*[A-Z]{2}[A-Z0-9]*(?:[ \t]+[A-Z0-9]*[A-Z]{2}[A-Z0-9]*)*\b")


def named_text(question: str) -> list[str]:
    """The words a question quotes from the screen: the first quoted string ('...', "...") of four characters
    or more, else the first run of words in capitals ("a car roof sign with the word TAXI" -> ``["taxi"]``,
    "When is the HALF TIME card on screen?" -> ``["half", "time"]``); lower case. Empty when it quotes none."""
    m = _QUOTE.search(question or "")
    if m:
        return words(m.group("q"))
    caps = [c for c in _CAPS_RUN.findall(question or "") if len(c.replace(" ", "")) >= 3]
    return words(caps[0]) if caps else []


def read_matches(wanted: list[str], read: str, min_ratio: float = 0.8) -> bool:
    """Whether an OCR read holds the wanted words in order, each read word matching its wanted word exactly or
    nearly (:class:`difflib.SequenceMatcher` ratio at least ``min_ratio``: "AXI" for "TAXI", a letter the OCR
    lost at the sign's edge, matches; "TAA" does not). A one-word read matches one wanted word of a longer
    phrase only when the phrase is one word."""
    from difflib import SequenceMatcher

    toks = words(read)
    if not wanted or not toks:
        return False
    it = iter(toks)
    return all(any(t == w or (len(t) >= 3 and SequenceMatcher(None, t, w).ratio() >= min_ratio) for t in it)
               for w in wanted)


def text_runs(times: list[float], gap_s: float) -> list[list[float]]:
    """Times (seconds) grouped into runs whose neighbours are at most ``gap_s`` apart: ``[[first, last], ...]``."""
    runs: list[list[float]] = []
    for t in sorted(times):
        if runs and t - runs[-1][1] <= gap_s:
            runs[-1][1] = t
        else:
            runs.append([t, t])
    return runs


def speech_line_answering(question: str, answer: str, lines: list[str], min_shared: int = 2) -> str | None:
    """The transcript line that answers a question the model's answer does not speak to: syn-mixed-04, "Which
    player was shown a yellow card?" answered with a scoreboard read ("RIVERS 3 - 1 HARBOUR") while the
    commentator said "The referee shows a yellow card to Fletcher for a late tackle."

    The line is returned when the answer shares no key word (four letters or more, not in :data:`STOP`) with
    the question, exactly one line shares the most key words with it, at least ``min_shared``, and the
    answer's own words are not all in that line (an answer taken from the line, "Thursday", stands).

    Args:
        question: the question without its options; answer: the model's answer; lines: transcript lines of the
            range the question is about.
    """
    keys = {w for w in words(question) if len(w) >= 4 and w not in STOP}
    own = {w for w in words(answer) if w not in STOP}
    if not keys or not own or keys & own:
        return None
    scored = sorted(((len(keys & set(words(line))), line) for line in lines if line.strip()), reverse=True)
    if not scored or scored[0][0] < min_shared or (len(scored) > 1 and scored[1][0] == scored[0][0]):
        return None
    best = scored[0][1]
    return None if own <= set(words(best)) else best
