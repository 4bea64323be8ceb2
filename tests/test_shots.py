"""avi.video.shots: hard cuts on every frame (PySceneDetect), cached in the index directory."""

import json

import pytest
from conftest import sample_video
from synth import make_video, many_cuts_spec

from avi.video import shots as shots_mod
from avi.video.shots import ShotList, video_shots


@pytest.fixture(scope="module")
def many_cuts_video(tmp_path_factory):
    return make_video(tmp_path_factory.mktemp("shots") / "cuts.mp4", many_cuts_spec())


def test_cuts_to_the_frame_on_a_synthetic_video_with_noise_and_motion(many_cuts_video):
    truth = [s for s, _ in many_cuts_spec().scenes[1:]]
    cuts = shots_mod.detect_cuts(many_cuts_video)
    assert len(cuts) == len(truth)
    assert max(abs(a - b) for a, b in zip(cuts, truth)) <= 0.1 + 1e-6  # one frame at 10 fps


def test_cuts_of_the_real_bikes_clip_match_the_frames_looked_at():
    """bench/REAL.md: hard cuts at 1.20, 3.04, 5.48, 7.48 and 9.68 s (found by eye, frame by frame)."""
    cuts = shots_mod.detect_cuts(sample_video("bikes.mp4"))
    assert cuts == pytest.approx([1.20, 3.04, 5.48, 7.48, 9.68], abs=0.045)  # within one frame at 25 fps


def test_one_continuous_shot_has_no_cut():
    assert shots_mod.detect_cuts(sample_video("carphone_pristine.mp4")) == []


def test_cached_in_the_index_directory_and_read_back(many_cuts_video, tmp_path, monkeypatch):
    first = video_shots(many_cuts_video, 40.0, tmp_path)
    saved = json.loads((tmp_path / "shots.json").read_text())
    assert saved["cuts_s"] == list(first.cuts_s)
    monkeypatch.setattr(shots_mod, "detect_cuts", lambda *a, **k: pytest.fail("detector ran despite the cache"))
    assert video_shots(many_cuts_video, 40.0, tmp_path).cuts_s == first.cuts_s


def test_a_cache_from_other_detector_settings_is_not_trusted(many_cuts_video, tmp_path):
    (tmp_path / "shots.json").write_text(json.dumps({"detector": "other", "cuts_s": [1.0]}))
    assert len(video_shots(many_cuts_video, 40.0, tmp_path).cuts_s) == 9


def test_an_unreadable_video_gives_none_and_writes_nothing(tmp_path):
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"not a video")
    assert video_shots(bad, 10.0, tmp_path) is None
    assert not (tmp_path / "shots.json").exists()


def test_shot_list_geometry():
    sl = ShotList((2.0, 5.0), 8.0)
    assert sl.shots() == [(0.0, 2.0), (2.0, 5.0), (5.0, 8.0)]
    assert sl.cuts_in(0.0, 5.0) == [2.0]
    assert ShotList((), 3.0).shots() == [(0.0, 3.0)]
