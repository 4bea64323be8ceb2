"""How a question over several videos is printed by ``avi-run`` (text and ``--json``)."""

from __future__ import annotations


def evidence_text(span: list) -> str:
    """One evidence range as text: ``12.0s–15.0s``, or ``vtest 12.0s–15.0s`` when it names its video."""
    where = f"{float(span[0]):.1f}s–{float(span[1]):.1f}s"
    return f"{span[2]} {where}" if len(span) >= 3 else where


def many_json(trace) -> dict:
    """The ``--json`` keys a question over several videos adds: ``videos`` (name, path, duration_s),
    ``answer_videos`` (the name(s) a video answer gives) and ``shared_people`` (the people whose faces match across
    the videos, :func:`avi.videos.people.shared_people`); nothing for one video, whose output is unchanged."""
    videos = getattr(trace, "videos", None)
    if not videos:
        return {}
    return {"videos": [{"name": v["name"], "path": v["path"], "duration_s": v["duration_s"]} for v in videos],
            "answer_videos": getattr(trace, "answer_videos", None),
            "shared_people": getattr(trace, "shared_people", None) or []}
