"""Multiple-choice options matched against the words the video shows and says (issue 14): an option whose key
words (:func:`option_keys`) appear in order in one OCR or transcript line of the range asked about is the measured
answer when it is the only one ("A. the HALF TIME card", "C) 39" for "how old was he when he died, according to
the lecturer"). Words are lower case, without punctuation, number words as digits (:func:`words`).
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
    """The words of an option that must appear in an evidence string, in order: its words in capitals (the text it
    quotes) and numbers ("the HALF TIME card" -> half, time), else its words of three letters or more that are not
    in :data:`STOP` and its numbers ("Rivers 3, Harbour 2" -> rivers, 3, harbour, 2)."""
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


def relevant(strings: list[str], key_words: frozenset[str]) -> list[str]:
    """The strings that share one of the question's ``key_words`` (its words of four letters or more that are no
    stop word, :func:`words`), or all of them when none does: the recogniser's "Fressel ... died young, at only
    39" is kept for "How old was Fresnel when he died" by the shared "died"."""
    hits = [s for s in strings if key_words & set(words(s))]
    return hits or strings


def text_choice(options: dict[str, str], strings: list[str], key_words: frozenset[str]) -> tuple[str, str] | None:
    """``(letter, the string it matched)`` of the one option whose key words (:func:`option_keys`) appear in order
    in one of the ``strings`` (OCR and transcript lines of the range asked about, narrowed by :func:`relevant`
    with the question's ``key_words``); None when no option, or more than one, matches."""
    pool = relevant([s for s in strings if s and s.strip()], key_words)
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


def quoted_in(quote: str | None, on_screen: bool, in_speech: bool, shown: list[str],
              said: list[str]) -> tuple[str, str] | None:
    """``(quote, line)``: the evidence line holding the ``quote``'s words in order, among the OCR lines (``shown``)
    when the question asks about the screen and the transcript lines (``said``) when it asks about speech; None
    otherwise (a quote not found proves nothing: OCR and speech recognition miss words)."""
    if not quote:
        return None
    pool = (shown if on_screen else []) + (said if in_speech else [])
    keys = words(quote)
    for line in pool:
        if in_order(keys, words(line)):
            return quote, line
    return None
