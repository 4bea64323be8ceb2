"""Object tracks over the captioner's stored boxes (avi/index/tracks.py): ByteTrack from the `trackers` library on
boxes with known ground truth."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import sample_video

from avi.backends.types import Caption
from avi.index.tracks import SHOT_END, SHOT_START, build_tracks, frame_boxes
from avi.video.clips import Clip
from avi.video.decode import probe, sample_frames

pytest.importorskip("trackers")

FPS = 2.0
SIZE = [640, 360]


def _captions(frames: dict[float, list], cuts: tuple[float, ...] = (), clip_s: float = 5.0) -> list[Caption]:
    """Captions of 5 s clips holding ``frames`` (t_s -> [[label, score, x1, y1, x2, y2], ...]); every sampled
    time up to the last one is a frame, with no boxes where ``frames`` has none (as the captioner stores them)."""
    frames = {round(k / FPS, 2): [] for k in range(int(max(frames) * FPS) + 1)} | frames
    end = max(frames) + 1 / FPS
    caps, start, i = [], 0.0, 0
    while start < end:
        stop = start + clip_s
        ts = sorted(t for t in frames if start <= t < stop)
        caps.append(Caption(i, start, stop, "", "perception-caption-v5", {
            "boxes": [[t, frames[t]] for t in ts], "frame_size": SIZE,
            "shot_changes_s": [c for c in cuts if start <= c < stop], "frames_s": ts}))
        start, i = stop, i + 1
    return caps


def _walker(t0: float, t1: float, x0: float, speed: float, y: float = 150, w: float = 40, h: float = 100,
            label: str = "person", score: float = 0.8) -> dict[float, list]:
    """One object moving right at ``speed`` px/s, seen in every sampled frame of [t0, t1]."""
    out = {}
    t = t0
    while t <= t1 + 1e-9:
        x = x0 + speed * (t - t0)
        out[round(t, 2)] = [[label, score, x, y, x + w, y + h]]
        t += 1 / FPS
    return out


def _merge(*parts: dict[float, list]) -> dict[float, list]:
    out: dict[float, list] = {}
    for p in parts:
        for t, boxes in p.items():
            out.setdefault(t, []).extend(boxes)
    return out


def test_two_people_walking_past_each_other_keep_their_spans_and_sides():
    # one enters at the left edge at 2 s and walks right; the other is in view from the start and leaves at the
    # right edge at 7 s
    a = _walker(2.0, 12.0, 0.0, 30.0)
    b = _walker(0.0, 7.0, 300.0, 40.0, y=20)
    b[7.0] = [["person", 0.8, 600.0, 20.0, 640.0, 120.0]]
    tracks = build_tracks(_captions(_merge(a, b, {13.0: []})), fps=FPS)  # the shot goes on to 13 s
    assert [(t["first_s"], t["last_s"]) for t in tracks] == [(0.0, 7.0), (2.0, 12.0)]
    first, second = tracks
    assert first["id"] == "T1" and first["entry"] == SHOT_START and first["exit"] == "right"
    assert second["entry"] == "left" and second["exit"] == "inside"
    assert second["frames"] == 21 and len(second["boxes"]) == 21
    assert second["boxes"][0] == [2.0, 0.0, 150.0, 40.0, 250.0]  # the spawning box is kept
    assert all(t["label"] == "person" for t in tracks)


def test_a_cut_ends_every_track_and_one_frame_blips_are_dropped():
    before = _walker(0.0, 4.5, 100.0, 10.0)
    after = _walker(5.0, 9.5, 102.0, 10.0)  # the same place after the cut: still a new track
    blip = {3.0: [["car", 0.9, 400, 200, 500, 260]]}
    tracks = build_tracks(_captions(_merge(before, after, blip), cuts=(5.0,)), fps=FPS)
    assert [(t["label"], t["first_s"], t["last_s"]) for t in tracks] == [("person", 0.0, 4.5), ("person", 5.0, 9.5)]
    assert tracks[0]["exit"] == SHOT_END and tracks[1]["entry"] == SHOT_START


def test_classes_are_tracked_apart_and_faces_are_not_tracked():
    person = _walker(0.0, 3.0, 100.0, 10.0)
    bike = _walker(0.0, 3.0, 100.0, 10.0, label="bicycle", y=180, h=70)  # overlapping the person's box
    face = _walker(0.0, 3.0, 110.0, 10.0, label="face", w=15, h=15)
    tracks = build_tracks(_captions(_merge(person, bike, face)), fps=FPS)
    assert sorted(t["label"] for t in tracks) == ["bicycle", "person"]


def test_a_short_miss_is_bridged_and_a_long_gap_is_not():
    walk = _walker(0.0, 6.0, 50.0, 20.0)
    del walk[2.5]  # one sampled frame without the box: the same track
    tracks = build_tracks(_captions(walk), fps=FPS)
    assert len(tracks) == 1 and tracks[0]["frames"] == len(walk)
    apart = _merge(_walker(0.0, 2.0, 50.0, 0.0), _walker(9.0, 11.0, 50.0, 0.0))
    assert len(build_tracks(_captions(apart), fps=FPS)) == 2  # 7 s unseen: longer than lost_seconds (5 s)


def test_no_boxes_no_tracks():
    caps = [Caption(0, 0.0, 5.0, "a VLM caption", "vlm-caption-v1", {"frames_s": [0.0, 0.5]})]
    assert frame_boxes(caps) == [] and build_tracks(caps, fps=FPS) == []


def test_tracks_on_real_footage_follow_a_labelled_person(session_backends):
    """vtest.avi 40-50 s through the real cpu captioner (NanoDet-m boxes at 2 fps) and the tracker: the woman in
    the red top (bench/tracks/vtest_people.jsonl, labelled by eye: in view from 42.0 s, entering at the right
    edge) is one person track from her first frame to the end of the window."""
    label = next(x for x in map(json.loads, (Path(__file__).parents[1] / "bench/tracks/vtest_people.jsonl")
                                .read_text().splitlines()) if x["id"] == "red-top-woman-1")
    info = probe(sample_video("vtest.avi"))
    caps, previous = [], None
    for i, start in enumerate((40.0, 45.0)):
        frames = list(sample_frames(info, fps=FPS, start_s=start, end_s=start + 5.0))
        caps.append(session_backends.captioner.caption(Clip(8 + i, start, start + 5.0), frames, previous))
        previous = frames[-1]
    tracks = [t for t in build_tracks(caps, fps=FPS) if t["label"] == "person"]
    t_probe, (px, py) = label["probe"]["t_s"], label["probe"]["xy"]
    sx = caps[0].data["frame_size"][0] / info.width
    sy = caps[0].data["frame_size"][1] / info.height
    hers = [t for t in tracks if any(abs(b[0] - t_probe) <= 0.5 and b[1] <= px * sx <= b[3] and b[2] <= py * sy <= b[4]
                                     for b in t["boxes"])]
    assert len(hers) == 1, [(t["id"], t["first_s"], t["last_s"]) for t in tracks]
    assert abs(hers[0]["first_s"] - label["first_s"]) <= 0.5 and hers[0]["last_s"] >= 49.5
    assert hers[0]["entry"] == "right"


def test_the_tracker_setup_is_in_the_index_key(monkeypatch):
    import avi.index.tracks as tracks_mod

    before = tracks_mod.tracker_id()
    assert before.startswith("bytetrack@trackers-2.6.1|")
    monkeypatch.setattr(tracks_mod, "LOST_SECONDS", 1.0)
    assert tracks_mod.tracker_id() != before


def test_a_person_moving_more_than_a_box_width_between_sampled_frames_stays_one_track():
    # 50 px a sampled frame with a 40 px box: consecutive boxes do not overlap, so plain IoU starts a new track
    # every frame (each then dropped or cut short); the buffered IoU (BIoU, WACV 2023) matches them
    walk = _walker(0.0, 6.0, 0.0, 100.0, w=40)
    assert len(build_tracks(_captions(walk), fps=FPS, buffer_ratio=0.0)) != 1
    tracks = build_tracks(_captions(walk), fps=FPS)
    assert [(t["first_s"], t["last_s"], t["frames"]) for t in tracks] == [(0.0, 6.0, 13)]


def test_the_iou_buffer_is_in_the_index_key(monkeypatch):
    import avi.index.tracks as tracks_mod

    before = tracks_mod.tracker_id()
    assert "|biou=0.3" in before
    monkeypatch.setattr(tracks_mod, "BUFFER_RATIO", 0.0)
    assert tracks_mod.tracker_id() != before


def test_an_environment_without_the_tracker_keeps_its_index_key(monkeypatch):
    # the gpu venv has no `trackers`: its key is the one it had before the buffer was added, so its indexes (and
    # their LLM-built graphs) are not rebuilt
    import importlib.metadata

    import avi.index.tracks as tracks_mod

    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert tracks_mod.tracker_id() == "bytetrack@trackers-none|lost=5.0|iou=0.03|min_frames=2"
