"""Reading an answer's text for ``avi eval jsonl`` (issue 34): the lenient readers (the first number, the first
yes/no word, an accepted string anywhere) and the strict ones (the answer's leading statement: the one count it
states, its yes or no, an accepted string without alternatives), and whether an answer hedges or says it cannot
tell. Rules and their use: :mod:`avi.eval.jsonl`."""

from __future__ import annotations

import re
from collections.abc import Iterable

NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
"""Number words the ``number`` rule reads (zero–twenty)."""

CANNOT_TELL_PHRASES = (
    "cannot tell", "cannot be told", "cannot determine", "cannot be determined", "cannot be measured",
    "not possible to determine", "not possible to tell", "impossible to determine", "impossible to tell",
    "unable to determine", "unable to tell", "unsupported on this profile", "no tool can measure",
)
"""Phrases that make an answer a "cannot tell" (matched as whole words after :func:`_cannot_norm`, which
turns "can't" / "can not" into "cannot")."""

HEDGE_PHRASES = (
    "a guess", "best guess", "my guess", "guess", "guessing", "not measured", "probably", "possibly", "maybe",
    "perhaps", "likely", "unlikely", "might", "may be", "could be", "i think", "it seems", "seems to", "seem to",
    "not sure", "unsure", "uncertain", "unclear", "not clear",
)
"""Phrases besides :data:`CANNOT_TELL_PHRASES` and :data:`REFUSAL_PHRASES` that make an answer hedge: it offers
its claim as a guess or a likelihood (whole words, case ignored, anywhere in the answer: "Red. Possibly blue."
hedges)."""

REFUSAL_PHRASES = (
    "does not measure", "do not measure", "did not measure", "not measure", "no tool", "no measurement",
    "insufficient", "not enough evidence", "not enough information", "not determinable", "cannot be confirmed",
    "cannot confirm", "unable to", "not able to",
)
"""Phrases that make an answer a refusal whatever yes/no word it opens with ("No, the evidence does not measure
what the question asks" answers nothing); strict counts a refusal as a hedge."""

NEGATIONS = ("not", "no", "never", "nor", "neither", "without")
"""Words that, just before an accepted string in the leading statement, deny it ("It is not red")."""

CLOSED_CLASSES = {
    "colour": ("red orange yellow green blue purple violet pink brown black white grey gray beige teal cyan "
               "magenta turquoise navy gold silver maroon").split(),
    "side": "left right top bottom".split(),
    "weekday": "monday tuesday wednesday thursday friday saturday sunday".split(),
    "month": ("january february march april may june july august september october november "
              "december").split(),
}
"""Closed word classes of the strict ``text`` rule: an answer naming two members of an accepted string's class
("red and blue", "left ... right") lists candidates."""


def normalize_text(text: str) -> str:
    """``text`` lower-cased with every run of punctuation / underscores / whitespace turned into one space
    and stripped (``"The sign reads EXIT-42."`` → ``"the sign reads exit 42"``)."""
    return re.sub(r"[\W_]+", " ", str(text).lower()).strip()


def text_match(answer: str | None, accepted: Iterable[str]) -> str | None:
    """The first accepted string that occurs in ``answer`` as whole words (both :func:`normalize_text`-ed),
    or None. ``"EXIT 42"`` is in ``"The sign reads EXIT 42."``; ``"EXIT 4"`` is not."""
    hay = f" {normalize_text(answer or '')} "
    for a in accepted:
        needle = normalize_text(a)
        if needle and f" {needle} " in hay:
            return a
    return None


_DIGITS = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?")
_WORDS = re.compile(r"(?<![a-z]-)\b(" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r")\b(?!-[a-z])")


def first_number(text: str | None) -> float | None:
    """The first number in ``text``: digits (``12``, ``-3``, ``2.5``, ``1,200``; not inside a word such as
    ``mp4``) or a number word zero–twenty (``"three"``; not ``"twenty-one"``), whichever comes first;
    None when there is none. ``"3 or 4"`` → 3.0."""
    if not text:
        return None
    low = text.lower()
    d, w = _DIGITS.search(low), _WORDS.search(low)
    if d and (not w or d.start() <= w.start()):
        return float(d.group(0).replace(",", ""))
    if w:
        return float(NUMBER_WORDS[w.group(1)])
    return None


def first_yes_no(text: str | None) -> str | None:
    """``"yes"`` or ``"no"``: the first of those two words in ``text`` (whole words: "nothing", "know" and
    "yesterday" are neither), or None."""
    for word in normalize_text(text or "").split():
        if word in ("yes", "no"):
            return word
    return None


def _cannot_norm(text: str) -> str:
    t = str(text).lower().replace("\u2019", "'").replace("\u2018", "'").replace("`", "'")
    t = re.sub(r"\bcan\s*'?\s*t\b|\bcan\s+not\b", "cannot", t)
    return " ".join(t.split())


_CANNOT = re.compile(r"\b(?:" + "|".join(re.escape(p) for p in CANNOT_TELL_PHRASES) + r")\b")
_HEDGE = re.compile(r"\b(?:" + "|".join(re.escape(p) for p in HEDGE_PHRASES + REFUSAL_PHRASES) + r")\b")


def says_cannot_tell(text: str | None) -> bool:
    """Whether ``text`` says the question cannot be answered here (one of :data:`CANNOT_TELL_PHRASES`,
    "can't" / "can not" read as "cannot")."""
    return bool(text) and _CANNOT.search(_cannot_norm(text)) is not None


def hedges(record: dict, text: str | None) -> bool:
    """Whether an answered record hedges: avi's ``cannot_tell`` flag is set, or the answer text (all of it, not
    only its leading statement) says it cannot tell (:func:`says_cannot_tell`), refuses (:data:`REFUSAL_PHRASES`)
    or calls its claim a guess, a likelihood or not measured (:data:`HEDGE_PHRASES`)."""
    return record.get("cannot_tell") is True or says_cannot_tell(text) or \
        (bool(text) and _HEDGE.search(_cannot_norm(text)) is not None)


_LABEL = re.compile(r"^\W*(?:final\s+)?answer\s*[:=-]\s*\**\s*", re.I)
_STATEMENT_END = re.compile(r"[.!?](?=\s|$)|[;\n]")
_ABBREVIATION = re.compile(r"(?:\b(?:dr|mr|mrs|ms|st|prof|vs|etc|approx)|\b[a-z]|\be\.g|\bi\.e)$", re.I)


def leading_statement(text: str | None) -> str:
    """The answer's leading statement: an "Answer:" label and markdown emphasis removed, the text up to the
    first sentence end (``.``, ``!`` or ``?`` before a space or the end; not the point of "2.5"), line break or
    semicolon, with parenthesised asides removed. ``"At 0:44 there are 3 people. I also saw 2 cars."`` →
    ``"At 0:44 there are 3 people"``."""
    t = _LABEL.sub("", str(text or "").replace("**", "").replace("__", "").strip())
    for m in _STATEMENT_END.finditer(t):
        if m.group(0) != "." or not _ABBREVIATION.search(t[:m.start()]):  # "Dr. Lindqvist" goes on
            t = t[:m.start()]
            break
    return " ".join(re.sub(r"\([^()]*\)|\[[^\[\]]*\]", " ", t).split())


_CLOCK = re.compile(r"\b\d{1,2}(?::\d{2}){1,2}(?:\.\d+)?\b")
_TIMED = re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s*(?:s|sec|secs|seconds?|ms|min|mins|minutes?|h|hours?|fps)\b",
                    re.I)


_NONE = re.compile(r"\b(?:none|nobody|no\s+one|nothing|no\s+\w+)\b", re.I)


def stated_number(text: str | None) -> float | None:
    """The one count the answer's :func:`leading_statement` states, or None: clock times (``0:44``) and numbers
    with a time unit (``20 s``, ``3 minutes``) are not counts; two different numbers ("3 or 4", "7, maybe 8")
    state none; a statement without a number that says "none", "nobody" or "no <things>" states 0.
    ``"At 0:44 there are 3 people."`` → 3; ``"There are 3 (2 on the left)."`` → 3."""
    lead = _TIMED.sub(" ", _CLOCK.sub(" ", leading_statement(text)))
    values = {float(m.group(0).replace(",", "")) for m in _DIGITS.finditer(lead.lower())}
    values |= {float(NUMBER_WORDS[m.group(1)]) for m in _WORDS.finditer(lead.lower())}
    if not values and _NONE.search(lead):  # "Nobody is on the lawn", "no cars": a count of zero
        return 0.0
    return values.pop() if len(values) == 1 else None


def stated_yes_no(text: str | None) -> str | None:
    """``"yes"`` or ``"no"`` when the answer's :func:`leading_statement` holds exactly one of the two words
    (``"No, nobody is on the lawn"``, ``"There is no person"``); None when it holds neither or both."""
    words = {w for w in normalize_text(leading_statement(text)).split() if w in ("yes", "no")}
    return words.pop() if len(words) == 1 else None


_ALTERNATIVES = re.compile(r"\b(?:or|either|and/or)\b|\w/\w", re.I)


def lists_candidates(statement: str, accepted: str) -> bool:
    """Whether ``statement`` offers several candidates instead of one answer: alternatives ("red or blue",
    "either", "left/right"), or a second member of the :data:`CLOSED_CLASSES` class of the ``accepted`` string
    it matched (for "red": any other colour)."""
    if _ALTERNATIVES.search(statement) and not _ALTERNATIVES.search(accepted):
        return True
    mine = set(normalize_text(accepted).split())
    said = set(normalize_text(statement).split())
    for members in CLOSED_CLASSES.values():
        if mine & set(members) and (said & set(members)) - mine:
            return True
    return False


def negated(statement: str, accepted: str) -> bool:
    """Whether ``accepted`` occurs in ``statement`` only right after a negation (:data:`NEGATIONS`, "n't" read
    as "not", up to two words before it: "It is not red", "isn't a red one"); "red, not blue" is not a negated
    red."""
    low = re.sub(r"n['\u2019]t\b", " not", _cannot_norm(statement).replace("cannot", "can not"))
    words, needle = normalize_text(low).split(), normalize_text(accepted).split()
    if not needle:
        return False
    hits = [i for i in range(len(words) - len(needle) + 1) if words[i:i + len(needle)] == needle]
    return bool(hits) and all(any(w in NEGATIONS for w in words[max(0, i - 2):i]) for i in hits)


def strict_text(text: str | None, accepted: Iterable[str]) -> str | None:
    """The accepted string the answer's :func:`leading_statement` gives as its one answer
    (:func:`text_match`, not :func:`negated` and not :func:`lists_candidates`), or None; a later sentence
    that offers another member of the accepted string's closed class ("Red. The other car is blue.") makes
    the answer a list of candidates too."""
    lead = leading_statement(text)
    found = text_match(lead, accepted)
    if found is None or negated(lead, found) or lists_candidates(lead, found):
        return None
    rest = " ".join(str(text or "").split())
    mine = set(normalize_text(found).split())
    for members in CLOSED_CLASSES.values():
        if mine & set(members) and (set(normalize_text(rest).split()) & set(members)) - mine:
            return None
    return found
