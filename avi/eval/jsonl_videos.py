"""Questions over several videos in ``avi eval jsonl`` (issue 21; format: ``bench/README.md``): a line's
``video`` may list several files, and three types score answers that are videos.

=============== =========================================================================================
``video``       the one video avi named (``record["answer_videos"]``, else the names its answer text
                mentions) is the truth; the truth may list several accepted videos.
``videos``      the set of videos avi named equals the truth's set.
``video_order`` the videos avi named, in its order, equal the truth's order.
=============== =========================================================================================

Truths are written as the file names of the line's ``video`` list (``"tree.avi"``) or the names avi gives the
videos (:func:`avi.videos.naming.video_names`: ``"tree"``) and stored as those names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from avi.eval.readers import BadRecord
from avi.videos.kinds import mentioned
from avi.videos.naming import resolve_name, video_names

VIDEO_TYPES = ("video", "videos", "video_order")
"""The answer types over videos, in the order the report lists them (after the single-video types)."""


def video_list(value: Any) -> list[str] | None:
    """A line's ``video`` as a list of file names when it names several (None for one).

    Raises:
        BadRecord: a list with fewer than two entries or one that is not a non-empty string.
    """
    if not isinstance(value, list):
        return None
    if len(value) < 2 or not all(isinstance(v, str) and v.strip() for v in value):
        raise BadRecord(f"video {value!r} is not a file name or a list of at least two file names")
    return [v.strip() for v in value]


def video_truth(kind: str, answer: Any, files: list[str] | None) -> list[str]:
    """The truth of a ``kind`` question as video names (a list: the accepted videos, the set, or the order).

    Raises:
        BadRecord: the line names one video, the answer names a video not in its list, or the order repeats one.
    """
    if not files:
        raise BadRecord(f"type {kind} needs \"video\" to list the videos (at least two)")
    names = video_names([Path(f) for f in files])
    items = [answer] if isinstance(answer, str) else answer
    if not isinstance(items, list) or not items or not all(isinstance(a, str) for a in items):
        raise BadRecord(f"answer {answer!r} is not a video file name or a list of them (type {kind})")
    out = []
    for a in items:
        name = resolve_name(a, names)
        if name is None:
            raise BadRecord(f"answer {a!r} is not one of the question's videos ({', '.join(files)})")
        out.append(name)
    if kind == "video_order" and (len(set(out)) != len(out) or len(out) < 2):
        raise BadRecord(f"answer {answer!r} of a video_order question must list at least two different videos")
    return out


def named_videos(record: dict, files: list[str] | None) -> list[str]:
    """The videos an answered record names: its ``answer_videos``, else the names its answer text mentions."""
    got = record.get("answer_videos")
    if isinstance(got, list) and got:
        return [str(v) for v in got]
    names = video_names([Path(f) for f in files or []])
    return mentioned(record.get("answer") if isinstance(record.get("answer"), str) else "", names)


def judge_videos(kind: str, gt: list[str], record: dict, files: list[str] | None) -> tuple[bool, Any, None]:
    """(right, the videos read, None) of an answered record of a ``kind`` question (module docstring)."""
    got = named_videos(record, files)
    if kind == "video":
        return len(got) == 1 and got[0] in gt, got[0] if len(got) == 1 else None, None
    if kind == "videos":
        return bool(got) and set(got) == set(gt), got or None, None
    return got == gt, got or None, None
