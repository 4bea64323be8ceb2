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


def relevant(strings: list[str], question: str) -> list[str]:
    """The strings that share a word of four letters or more (not a stop word) with the question, or all of
    them when none does: "How old was Fresnel when he died" keeps the lines about Fresnel and the line
    "Fressel was a friend-changineer, who died young, at only 39." (the speech recogniser's spelling of the
    name: the shared "died" keeps it, syn-lecture-09)."""
    qwords = {w for w in words(question) if len(w) >= 4 and w not in STOP}
    hits = [s for s in strings if qwords & set(words(s))]
    return hits or strings


def text_choice(options: dict[str, str], strings: list[str], question: str) -> tuple[str, str] | None:
    """The one option whose key words (:func:`option_keys`) appear in order in one of the evidence strings.

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
    for letter, text in options.items():
        keys = option_keys(text)
        for s, toks in tokenised:
            if in_order(keys, toks):
                hits[letter] = s
                break
    if len(hits) != 1:
        return None
    (letter, s), = hits.items()
    return letter, s


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
