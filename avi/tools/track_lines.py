"""The index's object tracks as object_detect reports them (issue 36: people and objects followed in time).

``object_detect`` counts boxes frame by frame; how many *different* people passed, and from when to when one of them
stayed in view, are read from the tracks the index built over every sampled frame (ByteTrack over the cpu
captioner's boxes, :mod:`avi.index.tracks`). For each label the tool was asked about, the tracks of its COCO
class that overlap the looked-at ranges are listed: span (seconds), the frame edge each came in and went out by,
its direction of motion in the picture and, where a looked-at frame holds its box, the box's colours.

Tracks break where the detector loses somebody for longer than the tracker waits (a crowd, a small far figure),
so one person can be several tracks: the line says "tracks", not "people", and the count is an upper bound of
the people the detector saw (the vtest.avi labels: mean span IoU 0.83, 42 person tracks for about a dozen people,
``scripts/bench_tracks.py``). Person tracks the index linked into one subject by face or clothing
(:mod:`avi.index.person_subjects`) say so ("person P3, also T9 15.0s–37.0s"), and the summary line counts those subjects as
well: fewer than the tracks, still not a count of people (links are missed where clothes differ little).
"""

from __future__ import annotations

from avi.video.analysis import box_colours

#: Tracks listed per label; the rest are counted.
MAX_LISTED = 6
#: Tracks seen in fewer sampled frames are left out (at 2 fps: under one second in view, mostly detector noise).
MIN_FRAMES = 3

_ENTRY = {"left": "in from the left", "right": "in from the right", "top": "in from the top",
          "bottom": "in from the bottom", "inside": "appeared mid-picture"}
_EXIT = {"left": "out at the left", "right": "out at the right", "top": "out at the top",
         "bottom": "out at the bottom", "inside": "vanished mid-picture"}


def overlapping(tracks: list[dict], classes: set[str], ranges: list[list[float]],
                min_frames: int = MIN_FRAMES) -> list[dict]:
    """The ``tracks`` of the detector ``classes`` (``label`` field) seen in at least ``min_frames`` sampled frames
    whose span ``[first_s, last_s]`` overlaps one of ``ranges`` (``[[start_s, end_s]]``, seconds), by first second."""
    out = [t for t in tracks if t.get("label") in classes and int(t.get("frames", 0)) >= min_frames
           and any(float(t["first_s"]) <= e and float(t["last_s"]) >= s for s, e in ranges)]
    return sorted(out, key=lambda t: (float(t["first_s"]), str(t.get("id"))))


def motion(track: dict) -> str:
    """The direction a track moved in the picture from its first box to its last (``"moving right"``,
    ``"moving left and down"``), or ``"staying in place"`` when its centre moved less than one box width
    (horizontally) and one box height (vertically); ``""`` without two boxes."""
    boxes = track.get("boxes") or []
    if len(boxes) < 2:
        return ""
    (_, ax1, ay1, ax2, ay2), (_, bx1, by1, bx2, by2) = boxes[0][:5], boxes[-1][:5]
    dx = (bx1 + bx2 - ax1 - ax2) / 2.0
    dy = (by1 + by2 - ay1 - ay2) / 2.0
    w = max(1.0, (ax2 - ax1 + bx2 - bx1) / 2.0)
    h = max(1.0, (ay2 - ay1 + by2 - by1) / 2.0)
    parts = []
    if abs(dx) >= w:
        parts.append("right" if dx > 0 else "left")
    if abs(dy) >= h:
        parts.append("down" if dy > 0 else "up")
    return "moving " + " and ".join(parts) if parts else "staying in place"


def found_with(tracks: list[dict], record: dict) -> list[dict]:
    """The tracks of ``record``'s person subject (itself included) in order of first second; [] without one."""
    subject = record.get("subject")
    if not subject:
        return []
    return sorted((t for t in tracks if t.get("subject") == subject), key=lambda t: float(t["first_s"]))


def _colours(track: dict, image_at: dict) -> list[str]:
    """Colours of the track's box in a looked-at frame (the frame at the same second), else []."""
    for t_s, *box in track.get("boxes") or []:
        image = image_at.get(round(float(t_s), 3))
        if image is not None:
            return box_colours(image, box)
    return []


def _phrase(side: str | None, words: dict) -> str:
    if not side:
        return ""
    return words.get(side, side)  # "in view at the shot's start" / "... end" read as they are


def track_report(label: str, tracks: list[dict], classes: set[str], ranges: list[list[float]],
                 image_at: dict) -> tuple[list[str], list[dict]]:
    """``(observation lines, records)`` for the tracks of ``label``'s detector ``classes`` over ``ranges``.

    Args:
        label: the word object_detect was asked for ("person", "man").
        tracks: the index's tracks (:attr:`avi.index.store.VideoIndex.tracks`).
        classes: the detector classes the label stands for (COCO names).
        ranges: the looked-at ranges, ``[[start_s, end_s]]`` in seconds.
        image_at: looked-at frames by time (seconds) -> RGB image as the reader gives it, for box colours; the
            tracks' boxes are in the pixels of the same reader's frames.

    Returns:
        no lines when no track overlaps; else one summary line and one line per listed track (at most
        :data:`MAX_LISTED`); records ``{id, first_s, last_s, entry, exit, motion, colours, subject, linked_by}``
        (``subject``/``linked_by`` None for tracks the index did not link).
    """
    found = overlapping(tracks, classes, ranges)
    if not found:
        return [], []
    image_at = {round(float(t), 3): image for t, image in image_at.items()}
    records = []
    for t in found:
        records.append({"id": t.get("id"), "first_s": float(t["first_s"]), "last_s": float(t["last_s"]),
                        "entry": t.get("entry"), "exit": t.get("exit"), "motion": motion(t),
                        "colours": _colours(t, image_at), "subject": t.get("subject"),
                        "linked_by": t.get("linked_by")})
    subjects = sorted({r["subject"] for r in records if r["subject"]})
    also = {r["id"]: [f"{o['id']} {float(o['first_s']):.1f}s–{float(o['last_s']):.1f}s"
                      for o in found_with(tracks, r) if o.get("id") != r["id"]] for r in records}
    lines = [f"  {label} tracks over all sampled frames (one {label} hidden for a while may be two): "
             f"{len(records)} in these ranges"
             + (f", of {len(subjects)} person subject{'s' if len(subjects) != 1 else ''} (tracks linked by face "
                f"or clothing)" if subjects else "")]
    for r in records[:MAX_LISTED]:
        about = [p for p in (_phrase(r["entry"], _ENTRY), _phrase(r["exit"], _EXIT), r["motion"]) if p]
        if r["colours"]:
            about.insert(0, " and ".join(r["colours"]))
        if also[r["id"]]:
            about.append(f"person {r['subject']}, also {', '.join(also[r['id']])} (linked by {r['linked_by']})")
        lines.append(f"    {r['id']} {r['first_s']:.1f}s–{r['last_s']:.1f}s: " + ", ".join(about))
    if len(records) > MAX_LISTED:
        lines.append(f"    and {len(records) - MAX_LISTED} more")
    return lines, records
