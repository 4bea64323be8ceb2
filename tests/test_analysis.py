"""Pixel statistics behind perception captions (avi/video/analysis.py)."""

from __future__ import annotations

import numpy as np
from conftest import sample_video

from avi.video.analysis import colour_names, frame_stats, histogram_distance, motion_energy, motion_level
from avi.video.decode import probe, sample_frames


def _solid(rgb, h=90, w=160):
    return np.full((h, w, 3), rgb, dtype=np.uint8)


def test_colour_names():
    assert colour_names(_solid((220, 20, 20)))[0][0] == "red"
    assert colour_names(_solid((20, 20, 200)))[0][0] == "blue"
    assert colour_names(_solid((10, 10, 10)))[0][0] == "black"
    assert colour_names(_solid((240, 240, 240)))[0][0] == "white"
    half = np.concatenate([_solid((0, 160, 0)), _solid((250, 220, 0))], axis=1)
    names = dict(colour_names(half))
    assert set(names) == {"green", "yellow"} and abs(names["green"] - 0.5) < 0.05


def test_histogram_distance_and_motion():
    a, b = _solid((0, 0, 128)), _solid((0, 100, 0))
    assert histogram_distance(a, a) < 0.05
    assert histogram_distance(a, b) > 0.6
    assert motion_energy(a, a) == 0.0
    moved = a.copy()
    moved[20:60, 20:60] = 255
    assert motion_energy(a, moved) > 0.05
    assert [motion_level(e) for e in (0.0, 0.02, 0.05, 0.2)] == ["static", "low", "moderate", "high"]


def test_frame_stats_finds_the_cut(sign_video):
    frames = list(sample_frames(probe(sign_video), fps=2.0))
    stats = frame_stats([f.t_s for f in frames], [f.image for f in frames])
    assert stats.shot_changes_s == [10.0]


def test_frame_stats_on_real_multishot_video():
    frames = list(sample_frames(probe(sample_video("bikes.mp4")), fps=2.0))
    stats = frame_stats([f.t_s for f in frames], [f.image for f in frames])
    # bikes.mp4 is several shots (car roof, taxi sign, street, bicycle): at least two cuts.
    assert len(stats.shot_changes_s) >= 2


def test_static_camera_has_no_cut():
    frames = list(sample_frames(probe(sample_video("vtest.avi")), fps=2.0, end_s=20.0))
    stats = frame_stats([f.t_s for f in frames], [f.image for f in frames])
    assert stats.shot_changes_s == []
    assert motion_level(stats.motion) in ("static", "low")
