"""object_detect's track lines (issue 36): the index's tracks of the asked-for class over the looked-at ranges."""

from __future__ import annotations

import numpy as np

from avi.tools.track_lines import MAX_LISTED, motion, overlapping, track_report


def track(tid, first, last, boxes=None, label="person", frames=None, entry="left", exit="right"):
    boxes = boxes or [[first, 10, 100, 40, 200], [last, 110, 100, 140, 200]]
    return {"id": tid, "label": label, "first_s": first, "last_s": last, "frames": frames or len(boxes) + 4,
            "boxes": boxes, "entry": entry, "exit": exit, "score": 0.7}


def test_overlapping_keeps_the_class_the_range_and_enough_frames():
    tracks = [track("T1", 0.0, 4.0), track("T2", 5.0, 9.0), track("T3", 6.0, 7.0, label="car"),
              track("T4", 6.0, 6.5, frames=2), track("T5", 20.0, 30.0)]
    assert [t["id"] for t in overlapping(tracks, {"person"}, [[4.5, 10.0]])] == ["T2"]
    assert [t["id"] for t in overlapping(tracks, {"person", "car"}, [[0, 8], [25, 26]])] == ["T1", "T2", "T3", "T5"]


def test_motion_in_box_widths():
    assert motion(track("T1", 0, 4)) == "moving right"  # 100 px, boxes 30 px wide
    assert motion(track("T1", 0, 4, boxes=[[0, 110, 100, 140, 200], [4, 10, 300, 40, 400]])) == "moving left and down"
    assert motion(track("T1", 0, 4, boxes=[[0, 10, 100, 40, 200], [4, 30, 150, 60, 250]])) == "staying in place"
    assert motion(track("T1", 0, 0, boxes=[[0, 10, 100, 40, 200]])) == ""


def test_track_report_lists_spans_sides_motion_and_colours():
    image = np.zeros((480, 640, 3), np.uint8)
    image[100:200, 10:40] = (255, 0, 0)  # red (the reader gives RGB) where T1's first box is
    tracks = [track("T1", 2.0, 6.5, boxes=[[2.0, 10, 100, 40, 200], [6.5, 110, 100, 140, 200]]),
              track("T2", 3.0, 9.0, entry="inside", exit="in view at the shot's end",
                    boxes=[[3.0, 300, 100, 330, 200], [9.0, 300, 100, 330, 200]])]
    lines, records = track_report("man", tracks, {"person"}, [[0.0, 10.0]], {2.0000001: image})
    assert lines[0].startswith("  man tracks") and "2 in these ranges" in lines[0]
    assert lines[1] == "    T1 2.0s–6.5s: red, in from the left, out at the right, moving right"
    assert lines[2] == "    T2 3.0s–9.0s: appeared mid-picture, in view at the shot's end, staying in place"
    assert [r["id"] for r in records] == ["T1", "T2"] and records[0]["colours"] == ["red"]
    assert track_report("car", tracks, {"car"}, [[0.0, 10.0]], {}) == ([], [])


def test_track_report_counts_the_tracks_it_does_not_list():
    tracks = [track(f"T{i}", float(i), float(i) + 3) for i in range(MAX_LISTED + 2)]
    lines, records = track_report("person", tracks, {"person"}, [[0.0, 60.0]], {})
    assert len(records) == MAX_LISTED + 2 and len(lines) == 1 + MAX_LISTED + 1
    assert lines[-1] == "    and 2 more"


def test_track_report_names_the_person_subject_and_its_other_tracks():
    tracks = [track("T1", 2.0, 6.5), track("T2", 3.0, 9.0), track("T3", 30.0, 40.0), track("T4", 50.0, 55.0)]
    for t, (subject, by) in zip(tracks, [("P1", "clothing"), ("P2", "alone"), ("P1", "clothing"), ("P3", "alone")]):
        t["subject"], t["linked_by"] = subject, by
    lines, records = track_report("person", tracks, {"person"}, [[0.0, 10.0]], {})
    assert "2 in these ranges, of 2 person subjects (tracks linked by face or clothing)" in lines[0]
    assert lines[1].endswith("person P1, also T3 30.0s–40.0s (linked by clothing)")
    assert "person P2" not in lines[2]  # a subject of one track adds nothing
    assert [(r["subject"], r["linked_by"]) for r in records] == [("P1", "clothing"), ("P2", "alone")]
    unlinked = [track("T1", 2.0, 6.5)]
    lines, records = track_report("person", unlinked, {"person"}, [[0.0, 10.0]], {})
    assert "subject" not in lines[0] and records[0]["subject"] is None
