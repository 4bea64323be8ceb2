"""What the index's LLM stages (entity graph, summary) read of the captions: runs of repeated captions folded
into one, and which clips show no one at all.

A static shot captioned every 5 s repeats the same caption clip after clip (a lecture slide held for a minute:
twelve copies of one line). Sent as they are, the repeats are half the prompt tokens of the graph and summary
stages on the cpu profile (lecture.mp4: 23,182 characters of captions, 12,267 with the runs folded), and prefill on
these machines is about 40 tokens a second. The graph's LLM extraction (AVI §3.2.3) is about people; clips whose
perception found no person and no face in any frame give it nothing to extract (on the synthetic lecture and
broadcast videos the 1.5B model replied with empty lists for every chunk, 260-290 s each).
"""

from __future__ import annotations

from collections.abc import Sequence

from avi.backends.types import Caption


def merge_repeats(captions: Sequence[Caption]) -> list[Caption]:
    """Consecutive captions with the same text (whitespace collapsed) folded into one caption spanning the run.

    Args:
        captions: clip captions in time order.

    Returns:
        one :class:`Caption` per run: ``clip_index``, ``captioner`` and ``data`` of the run's first clip,
        ``start_s`` of its first clip and ``end_s`` of its last (seconds). Captions that differ in anything
        but whitespace stay apart, and so do captions that are not back to back (a gap of more than 0.5 s).
    """
    runs: list[Caption] = []
    last = ""
    for cap in captions:
        text = " ".join(cap.text.split())
        if runs and text and text == last and cap.start_s <= runs[-1].end_s + 0.5:
            runs[-1] = Caption(clip_index=runs[-1].clip_index, start_s=runs[-1].start_s, end_s=cap.end_s,
                               text=runs[-1].text, captioner=runs[-1].captioner, data=runs[-1].data)
        else:
            runs.append(cap)
        last = text
    return runs


def _counts(series: object) -> list[float] | None:
    """The counts of a ``[[t_s, count], ...]`` series; None when it is not one."""
    if not isinstance(series, list):
        return None
    try:
        return [float(pair[1]) for pair in series]
    except (TypeError, ValueError, IndexError, KeyError):
        return None


def no_person_seen(captions: Sequence[Caption]) -> bool:
    """Whether the perception behind every caption counted no person and no face in any frame.

    Only captions with structured counts (the cpu captioner's ``data["people_per_frame"]`` and
    ``data["faces_per_frame"]``, ``[[t_s, count], ...]``) can say so; a caption without them (a VLM's prose)
    makes this False, so such captions always go to the LLM.
    """
    if not captions:
        return False
    for cap in captions:
        data = cap.data or {}
        people = _counts(data.get("people_per_frame"))
        if people is None or any(people):
            return False
        faces = _counts(data.get("faces_per_frame"))
        if faces and any(faces):
            return False
    return True
