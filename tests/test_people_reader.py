"""avi/backends/people/reader.py: each person box read by the people models, and frame_analysis's text of it.

The geometry tests give the reader stand-in models (named fakes: fixed outputs, so the assignment of poses, faces
and hands to person boxes is checked exactly); the last test runs the real models on a real frame.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from avi.backends.people.expression import Expression
from avi.backends.people.faces import Face
from avi.backends.people.hands import Hand
from avi.backends.people.pose import KEYPOINTS, Pose
from avi.backends.people.reader import PeopleReader
from avi.backends.types import Detection

MEGAMIND = "/usr/share/doc/opencv-doc/examples/data/Megamind.avi"


def _standing(box) -> np.ndarray:
    """Keypoints (17, 3) of an upright person filling ``box``: head at the top, ankles at the bottom."""
    x1, y1, x2, y2 = box
    cx, h = (x1 + x2) / 2, y2 - y1
    ys = {"nose": 0.08, "left eye": 0.06, "right eye": 0.06, "left ear": 0.07, "right ear": 0.07,
          "left shoulder": 0.2, "right shoulder": 0.2, "left elbow": 0.35, "right elbow": 0.35, "left wrist": 0.48,
          "right wrist": 0.48, "left hip": 0.52, "right hip": 0.52, "left knee": 0.75, "right knee": 0.75,
          "left ankle": 0.97, "right ankle": 0.97}
    return np.array([[cx + (8 if "left" in k else -8 if "right" in k else 0), y1 + ys[k] * h, 0.9]
                     for k in KEYPOINTS], np.float32)


class Fake:
    """A stand-in for one people model with a fixed output; counts its calls."""

    def __init__(self, out=()):
        self.out = list(out)
        self.calls = 0

    def _give(self):
        self.calls += 1
        return list(self.out)

    def estimate(self, image):  # PoseEstimator
        return self._give()

    def detect(self, image, people=()):  # FaceDetector, HandDetector
        return self._give()

    def classify(self, image, boxes):  # ExpressionClassifier: happy at 0.9 for every face
        self.calls += 1
        return [Expression("happy", 0.9, {"happy": 0.9}, tuple(b)) for b in boxes]


def _reader(poses=(), faces=(), hands=()):
    models = Fake(faces), Fake(), Fake(hands), Fake(poses)
    return PeopleReader(*models), models


def _det(label, box, cls=None):
    return Detection(label, 0.9, box, 1.0, (400, 300), cls)


IMAGE = np.zeros((300, 400, 3), np.uint8)
PERSON = (100.0, 50.0, 200.0, 290.0)


def test_a_person_is_read_from_the_pose_face_and_hand_inside_the_box():
    pose = Pose(PERSON, 0.8, _standing(PERSON))
    face = Face((130.0, 60.0, 170.0, 100.0), 0.9, np.zeros((6, 2), np.float32))
    hand = Hand((175.0, 160.0, 205.0, 190.0), 0.95, np.zeros((21, 3), np.float32), 0.8)
    reader, _ = _reader([pose], [face], [hand])
    dets = [_det("person", PERSON), _det("cup", (180.0, 150.0, 230.0, 200.0), "cup"), _det("car", (0, 0, 50, 40))]
    (r,) = reader.read(IMAGE, dets)
    assert (r.posture, r.arms_raised, r.expression, r.hands, r.holding) == ("standing", False, ("happy", 0.9), 1,
                                                                             ["cup"])
    assert r.describe() == "standing; face happy 0.90; 1 hand, on a cup"


def test_small_faces_far_poses_and_hands_outside_stay_unread():
    far_pose = Pose((300.0, 50.0, 390.0, 290.0), 0.8, _standing((300.0, 50.0, 390.0, 290.0)))
    tiny = Face((140.0, 60.0, 160.0, 80.0), 0.9, np.zeros((6, 2), np.float32))  # 20 px: too small to read
    elsewhere = Hand((320.0, 160.0, 350.0, 190.0), 0.95, np.zeros((21, 3), np.float32), 0.8)
    reader, _ = _reader([far_pose], [tiny], [elsewhere])
    (r,) = reader.read(IMAGE, [_det("person", PERSON)])
    assert (r.posture, r.expression, r.hands, r.describe()) == (None, None, 0, "")


def test_no_person_runs_no_model():
    reader, models = _reader()
    assert reader.read(IMAGE, [_det("car", (0, 0, 50, 40))]) == []
    assert [m.calls for m in models] == [0, 0, 0, 0]


def test_frame_analysis_reads_the_hand_in_megamind():
    """The real models (skipped unless fetched; a failure under AVI_REQUIRE_SAMPLES=1) through frame_analysis."""
    from avi.backends import Backends
    from avi.config import Settings
    from avi.video.decode import VideoReader, probe

    if not os.path.exists(MEGAMIND):
        pytest.skip("Megamind.avi not installed")
    backends = Backends(Settings(people_models=True))
    if backends.people is None:
        if os.environ.get("AVI_REQUIRE_SAMPLES") == "1":
            pytest.fail("people models not installed")
        pytest.skip("people models not installed")
    analyzer = backends.frame_analyzer
    result = analyzer.analyze(VideoReader(probe(MEGAMIND)).frames_at([2.0]), "what is he holding?")
    (row,) = result.data["frames"]
    assert sum(p["hands"] for p in row["persons"]) >= 1 and any(p["expression"] for p in row["persons"])
    assert "1 hand" in result.text and "face " in result.text and analyzer.name.endswith("v3")
    off = Backends(Settings(people_models=False)).frame_analyzer  # the setting turns the reading off
    assert off.people is None and off.name.endswith("v2")


def test_object_detect_reads_the_person_boxes_it_reports():
    """object_detect's helper: readings keyed by the index of each reported box; a cup found by the detector's
    other classes in the same frame is what the hand is on; off with the setting."""
    from types import SimpleNamespace

    from avi.tools.perceive import _people_readings
    from avi.video.decode import Frame

    pose = Pose(PERSON, 0.8, _standing(PERSON))
    hand = Hand((175.0, 160.0, 205.0, 190.0), 0.95, np.zeros((21, 3), np.float32), 0.8)
    reader, _ = _reader([pose], [], [hand])
    cup = _det("cup", (180.0, 150.0, 230.0, 200.0), "cup")
    detector = SimpleNamespace(detect_all=lambda frame: [_det("person", PERSON, "person"), cup])
    ctx = SimpleNamespace(settings=SimpleNamespace(people_models=True),
                          backends=SimpleNamespace(people=reader, detector=detector))
    frame = Frame(1.0, IMAGE)
    asked = [_det("man", (300.0, 100.0, 340.0, 200.0), "person"), _det("man", PERSON, "person")]
    got = _people_readings(ctx, frame, asked)
    assert set(got) == {0, 1} and got[1].describe() == "standing; 1 hand, on a cup" and got[0].hands == 0
    ctx.settings.people_models = False
    assert _people_readings(ctx, frame, asked) == {}
    ctx.settings.people_models = True
    assert _people_readings(ctx, frame, [cup]) == {}  # no person among the reported boxes: no model runs
