"""Grounding DINO's text side (gpu profile): the prompt built from labels, each label's token positions in the
tokenised prompt, and the label a decoded phrase answers (used by :mod:`avi.backends.grounding_dino`, which
re-exports these names)."""

from __future__ import annotations

import re
from typing import Sequence

_SPECIAL = re.compile(r"\[(?:CLS|SEP|PAD|UNK|MASK)\]|<s>|</s>|<pad>", re.IGNORECASE)
_WORD = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")


def normalize_label(label: str) -> str:
    """A label as Grounding DINO's prompt wants it: lowercase, single-spaced, no ``.`` (the label separator)."""
    return " ".join(label.strip().lower().replace(".", " ").split())


def build_prompt(labels: Sequence[str]) -> tuple[str, list[str], list[str]]:
    """Grounding DINO's text prompt for ``labels``.

    Args:
        labels: requested labels, any case; blank ones and duplicates (after
            normalisation) are skipped.

    Returns:
        ``(prompt, canonical, requested)``: the prompt, e.g. ``"person . red car ."``
        (each label followed by ``" ."``); the normalised labels in prompt order; and
        the requested spelling (stripped) of each, which detections report.
    """
    canonical: list[str] = []
    requested: list[str] = []
    for label in labels:
        key = normalize_label(label)
        if key and key not in canonical:
            canonical.append(key)
            requested.append(label.strip())
    return " ".join(f"{c} ." for c in canonical), canonical, requested


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace(" ##", "").replace("##", ""))


def match_label(phrase: str, labels: Sequence[str], token_scores: Sequence[float] | None = None) -> int | None:
    """Index of the requested label a predicted phrase answers, or None.

    Grounding DINO names a box by the prompt tokens whose probability passed
    ``text_threshold``; decoded, that is a phrase such as ``"red car"``,
    ``"car"``, ``"person. red car. [SEP]"`` or ``". [SEP]"``. The phrase is split
    at ``.`` (the label separator) after dropping special tokens, and every label
    gets the best word-level Jaccard overlap between its words and a segment's
    (1.0 for an exact match). The best-scoring label wins; ties (a phrase naming
    two labels, or a fragment shared by two) go to the larger ``token_scores``
    entry, then to the earlier label.

    Args:
        phrase: decoded phrase of one box.
        labels: normalised labels (see :func:`normalize_label`), prompt order.
        token_scores: optional, per label: the box's highest probability over the
            label's prompt tokens (used to break ties).

    Returns:
        index into ``labels``; None if no label shares a word with the phrase.
    """
    segments = [_words(s) for s in _SPECIAL.sub(" ", phrase).split(".")]
    segments = [s for s in segments if s]
    best: tuple[float, float, int] | None = None
    for i, label in enumerate(labels):
        lw = set(_words(label))
        if not lw:
            continue
        overlap = max((len(lw & set(s)) / len(lw | set(s)) for s in segments), default=0.0)
        if overlap <= 0.0:
            continue
        key = (overlap, float(token_scores[i]) if token_scores is not None else 0.0, -i)
        if best is None or key > best:
            best = key
    return None if best is None else -best[2]


def label_token_spans(input_ids: Sequence[int], sep_ids: set[int], n_labels: int) -> list[list[int]]:
    """Token positions of each label in a tokenised prompt.

    The prompt is ``[CLS] l1 tokens . l2 tokens . ... [SEP]``: label ``i`` owns the
    tokens between the ``i``-th and ``i+1``-th separator (position 0 and special
    tokens excluded).

    Args:
        input_ids: ids of the tokenised prompt, shape (T,).
        sep_ids: ids that end a label (``.``) or the text (``[SEP]``).
        n_labels: number of labels in the prompt.

    Returns:
        ``n_labels`` lists of positions (empty where the text was truncated).
    """
    spans: list[list[int]] = [[] for _ in range(n_labels)]
    label = 0
    for pos, tok in enumerate(list(input_ids)[1:], start=1):
        if label >= n_labels:
            break
        if int(tok) in sep_ids:
            label += 1
        else:
            spans[label].append(pos)
    return spans
