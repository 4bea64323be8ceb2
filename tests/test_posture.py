"""Posture from MoveNet keypoints (avi/backends/people/posture.py) on hand-placed skeletons."""

from __future__ import annotations

import numpy as np
import pytest

from avi.backends.people import KEYPOINTS, posture


def skeleton(**points):
    """(17, 3) keypoints: the named ones at pixel (x, y) with score 0.9, the others hidden (score 0)."""
    kp = np.zeros((len(KEYPOINTS), 3), np.float32)
    for name, (x, y) in points.items():
        kp[KEYPOINTS.index(name.replace("_", " "))] = (x, y, 0.9)
    return kp


UPPER = dict(nose=(100, 20), left_shoulder=(110, 50), right_shoulder=(90, 50), left_hip=(108, 120),
             right_hip=(92, 120))


def test_standing_sitting_lying():
    standing = skeleton(**UPPER, left_knee=(109, 170), right_knee=(91, 170), left_wrist=(115, 120),
                        right_wrist=(85, 120))
    assert posture(standing).posture == "standing" and not posture(standing).arms_raised
    sitting = skeleton(**UPPER, left_knee=(150, 125), right_knee=(140, 128))  # thighs forward, as on a chair
    assert posture(sitting).posture == "sitting"
    lying = skeleton(left_shoulder=(50, 200), right_shoulder=(50, 180), left_hip=(130, 205), right_hip=(130, 185))
    r = posture(lying)
    assert r.posture == "lying" and r.torso_angle > 80


def test_arms_raised_is_a_wrist_above_the_nose_or_the_shoulders():
    assert posture(skeleton(**UPPER, left_wrist=(120, 5))).arms_raised
    no_nose = {k: v for k, v in UPPER.items() if k != "nose"}
    assert posture(skeleton(**no_nose, right_wrist=(85, 30))).arms_raised
    assert not posture(skeleton(**no_nose, right_wrist=(85, 80))).arms_raised


def test_hidden_knees_and_missing_torso():
    far_ankles = skeleton(**UPPER, left_ankle=(108, 230), right_ankle=(92, 230))
    assert posture(far_ankles).posture == "standing"
    assert posture(skeleton(**UPPER)).posture == "unclear"  # no knees, no ankles
    assert posture(skeleton(nose=(100, 20), left_wrist=(100, 0))).posture == "unclear"
    stride = skeleton(**UPPER, left_knee=(130, 160), right_knee=(92, 170))  # one thigh at ~29, one at ~0 degrees
    assert posture(stride).posture == "standing"
    half = skeleton(**UPPER, left_knee=(150, 125), right_knee=(91, 170))  # one bent, one straight
    assert posture(half).posture == "unclear"
    with pytest.raises(ValueError, match="shape"):
        posture(np.zeros((5, 3)))
