"""The script OCR reads in: Latin reads for questions written in Latin script (issue 36, item 6).

PP-OCR's multilingual recogniser (one dictionary of about 18,000 characters: Chinese, Japanese, Latin, symbols)
decodes each text line by CTC, taking the most probable character at every time step (Graves et al. 2006,
"Connectionist Temporal Classification", best-path decoding). On cut or blurred Latin signs the most probable
character is sometimes a CJK glyph. A question written in Latin script about a video is asked by someone who
expects Latin text; this module gives the character set to decode with (the restricted best path: the best
character among those allowed, the same idea as Tesseract's ``tessedit_char_whitelist``) and the question's
script.

What counts as Latin here: code points below U+0250 (Basic Latin, Latin-1, Latin Extended-A/B: letters with
accents, digits, ASCII punctuation and symbols), Latin Extended Additional (U+1E00-U+1EFF), General Punctuation
(U+2000-U+206F), Currency Symbols (U+20A0-U+20CF), Letterlike Symbols, Number Forms and Arrows (U+2100-U+21FF).
Full-width forms, CJK punctuation and geometric shapes (what the recogniser reads off drawn triangles and squares)
are not Latin.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Sequence

import numpy as np

LATIN = "latin"

#: words of a Latin-script question that ask for text in another script: no restriction then
_OTHER_SCRIPT = re.compile(
    r"\b(?:chinese|mandarin|cantonese|japanese|kanji|kana|hiragana|katakana|korean|hangul|arabic|hebrew|"
    r"cyrillic|russian|ukrainian|bulgarian|serbian|greek|hindi|devanagari|bengali|tamil|telugu|thai|lao|khmer|"
    r"burmese|georgian|armenian|amharic|persian|farsi|urdu|hanzi|ideograms?)\b", re.I)


def is_latin_char(ch: str) -> bool:
    """Whether one character belongs to the Latin set of this module's docstring (letters, digits, punctuation and
    symbols used with Latin script; spaces too)."""
    o = ord(ch)
    return o < 0x250 or 0x1E00 <= o < 0x1F00 or 0x2000 <= o < 0x2070 or 0x20A0 <= o < 0x20D0 or 0x2100 <= o < 0x2200


def is_latin_text(text: str) -> bool:
    """Whether every character of ``text`` is in the Latin set (an empty text is)."""
    return all(is_latin_char(ch) for ch in text)


def check_script(script: str) -> str:
    """``script`` when it is one this module knows (:data:`LATIN`).

    Raises:
        ValueError: an unknown script.
    """
    if script != LATIN:
        raise ValueError(f"unknown OCR script {script!r} (known: {LATIN})")
    return script


def in_script(text: str, script: str) -> bool:
    """Whether every character of ``text`` belongs to ``script`` (:data:`LATIN`).

    Raises:
        ValueError: an unknown script.
    """
    check_script(script)
    return is_latin_text(text)


def question_script(question: str) -> str | None:
    """The script OCR should read in for ``question``: :data:`LATIN` when the question has letters, all of them
    Latin, and names no other script or language ("What do the Chinese characters say?" keeps every script);
    None otherwise (read in every script the recogniser knows)."""
    letters = [ch for ch in question or "" if unicodedata.category(ch).startswith("L")]
    if not letters or not all(is_latin_char(ch) for ch in letters) or _OTHER_SCRIPT.search(question):
        return None
    return LATIN


def charset_mask(characters: Sequence[str], script: str) -> np.ndarray:
    """Which classes of a CTC recogniser's output a ``script`` may decode to.

    Args:
        characters: the recogniser's class list, index 0 the CTC blank (PP-OCR's ``CTCLabelDecode.character``).
        script: :data:`LATIN`.

    Returns:
        bool array ``(len(characters),)``; the blank is always allowed.

    Raises:
        ValueError: an unknown script.
    """
    check_script(script)
    mask = np.array([in_script(c, script) for c in characters], dtype=bool)
    mask[0] = True
    return mask


def restrict_preds(preds: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """CTC class probabilities with the classes outside ``mask`` set to zero, so that best-path decoding picks the
    most probable allowed class at every time step; the probabilities are not renormalised, so a line's score
    (the mean probability of its decoded characters) falls where the unrestricted best class was not allowed.

    Args:
        preds: ``(N, T, C)`` softmax outputs (batch, time steps, classes).
        mask: bool ``(C,)`` from :func:`charset_mask`.

    Returns:
        a new ``(N, T, C)`` float array.

    Raises:
        ValueError: ``mask`` does not have ``C`` entries.
    """
    preds = np.asarray(preds)
    if preds.shape[-1] != mask.shape[0]:
        raise ValueError(f"{preds.shape[-1]} output classes but a mask of {mask.shape[0]}")
    return np.where(mask, preds, 0.0).astype(preds.dtype, copy=False)
