"""Questions as users type them, checked before any work: valid UTF-8, no control characters, a length limit.

A question reaches avi from the command line (``avi-run --question``; Python decodes argv bytes that are not
UTF-8 as lone surrogates, ``surrogateescape``), from a batch manifest or questions file, or from a benchmark's
annotations. Every path goes through :func:`clean_question` so that the LLM request, the trace and the results
file only ever see clean text, and a bad question ends with one clear line instead of an encoding error at the
first LLM request.
"""

from __future__ import annotations

import re
import unicodedata

from avi.errors import InputError

# C0 controls but tab and newline, DEL, C1 controls; bidi embeddings, overrides and isolates (text that reads
# differently from what it is, "Trojan Source"); the byte-order mark.
_DROP = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ufeff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# Letters with no glyph of their own (Unicode's Default_Ignorable_Code_Point letters: Hangul fillers, Khmer inherent
# vowels) and the braille blank: they are letters by category but show nothing.
_BLANK_LETTERS = frozenset("\u115f\u1160\u17b4\u17b5\u3164\uffa0\u2800")
# Invisible characters that carry nothing in a question: zero-width space, word joiner, invisible operators, the
# Mongolian vowel separator (zero-width joiner and non-joiner stay: emoji and several scripts need them).
_INVISIBLE = re.compile("[\u200b\u2060-\u2064\u180e]")
# terminal escape sequences, removed whole (removing only ESC would leave "[31m" in the question)
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")


def clean_question(text: str, max_chars: int | None = None, *, what: str = "the question") -> str:
    """The question with terminal escape sequences, control characters and zero-width spaces removed, line ends
    made ``\\n`` and tabs made spaces, stripped.

    Args:
        text: the question as received (``str``; argv bytes that were not UTF-8 arrive as lone surrogates).
        max_chars: the longest accepted question in characters after cleaning (setting
            ``question_max_chars``); None = no limit.
        what: how the error message names the question (e.g. ``"questions.txt line 3"``).

    Returns:
        The cleaned question (with at least one visible character, :func:`visible`; at most ``max_chars``
        characters).

    Raises:
        InputError: ``text`` is not a string, is not valid UTF-8 (holds a lone surrogate: the message names
            the first undecodable byte and its position), is empty once cleaned, or is longer than
            ``max_chars``.
    """
    if not isinstance(text, str):
        raise InputError(f"{what} is not text")
    bad = _SURROGATE.search(text)
    if bad:
        code = ord(bad.group())
        byte = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"code point U+{code:04X}"
        raise InputError(f"{what} is not valid UTF-8 ({byte} at character {bad.start() + 1}); "
                         f"give it as UTF-8 text")
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2028", "\n").replace("\u2029", "\n")
    text = _INVISIBLE.sub("", _DROP.sub("", _ESCAPES.sub("", text).replace("\t", " "))).strip()
    if not any(visible(ch) for ch in text):
        raise InputError(f"{what} is empty" + (" (it has no visible character)" if text else ""))
    if max_chars is not None and len(text) > max_chars:
        raise InputError(f"{what} is {len(text)} characters long; the limit is {max_chars} "
                         f"(setting question_max_chars)")
    return text


def visible(ch: str) -> bool:
    """Whether the character ``ch`` shows something: a letter, digit, punctuation mark or symbol (Unicode categories
    L, N, P, S), not a blank letter (Hangul filler, braille blank). Spaces, controls, format characters (zero-width
    joiners, bidi marks), lone combining marks and unassigned code points show nothing."""
    return unicodedata.category(ch)[0] in "LNPS" and ch not in _BLANK_LETTERS
