"""Word error rate as avi's tests and benchmarks report it: raw first, then with stated extra normalisation.

Both figures apply the same transforms to the reference and to the hypothesis (never to one side only):

* **raw**: jiwer's standard text normalisation, i.e. lower case, punctuation removed (``don't`` -> ``dont`` on
  both sides), runs of spaces collapsed, ends stripped. Every other difference counts as an error: ``Northgate``
  for "north gate" is one substitution and one deletion, ``7`` for "seven" one substitution.
* **normalised**: the raw transforms, then the spelling variants in :data:`VARIANTS` (numbers 0-20 written as
  digits become words; closed compounds split as in the reference texts avi uses), on both sides.

Used by ``tests/test_asr.py`` and ``scripts/bench_cpu.py`` (which imports it from ``tests/`` like ``synth``).
"""

from __future__ import annotations

import re

import jiwer

NUMBER_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
                "sixteen seventeen eighteen nineteen twenty").split()
# Spellings that say the same words; applied to reference and hypothesis alike (whole words only).
VARIANTS: dict[str, str] = {str(i): w for i, w in enumerate(NUMBER_WORDS)} | {"northgate": "north gate"}

STANDARD = jiwer.Compose([jiwer.ToLowerCase(), jiwer.RemovePunctuation(), jiwer.RemoveMultipleSpaces(), jiwer.Strip(),
                          jiwer.ReduceToListOfListOfWords()])


def _variants(text: str) -> str:
    """``text`` (already lower case, no punctuation) with every :data:`VARIANTS` word replaced."""
    return " ".join(VARIANTS.get(w, w) for w in text.split())


def raw_wer(reference: str, hypothesis: str) -> float:
    """Word error rate after jiwer's standard normalisation of both texts (see the module docstring)."""
    return jiwer.wer(reference, hypothesis, reference_transform=STANDARD, hypothesis_transform=STANDARD)


def normalised_wer(reference: str, hypothesis: str) -> float:
    """Word error rate after the standard normalisation and the :data:`VARIANTS` spellings, on both texts."""
    def norm(text: str) -> str:
        return _variants(re.sub(r"\s+", " ", jiwer.RemovePunctuation()(text.lower())).strip())

    return jiwer.wer(norm(reference), norm(hypothesis), reference_transform=STANDARD, hypothesis_transform=STANDARD)
