"""Posture of one person from MoveNet's 17 keypoints: standing, sitting, lying, and arms raised (issue 36, item 3).

Geometry only, in image pixels (y grows downwards), on keypoints scoring above ``min_score`` (human's
``body.minConfidence``, 0.3):

* **arms raised**: a wrist above the nose, else above both shoulders when the nose is hidden. This is vladmandic/human's
  body gesture rule (src/gesture/gesture.ts: "raise left hand", "raise right hand", "i give up" when a wrist is
  higher than the nose).
* **lying**: the torso (mid-shoulder to mid-hip) is closer to horizontal than to vertical: its angle from the image's
  vertical is over 60 degrees.
* **sitting** / **standing**: from the thighs (hip to knee, each side whose two points are visible). A thigh more
  than 50 degrees from vertical is bent as in a chair; both visible thighs bent -> sitting, both near vertical
  (under 30 degrees) -> standing. When the knees are hidden, a torso with visible ankles far below the hips (more
  than 1.2 torso lengths) is standing.
* **unclear** otherwise: no torso, a cut-off body, or thighs between the two angles (walking strides, crouching).

These angles are not fitted to any data set: they are the plain reading of the words (a horizontal body lies, a
bent hip sits) and bench/people measures how often they agree with a person looking at the frame
(``scripts/bench_people.py``). A camera looking steeply down or a person facing the camera with thighs towards it
foreshortens the thighs; such a sitter reads as unclear or standing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from avi.backends.people.pose import KEYPOINTS

POSTURES = ("standing", "sitting", "lying", "unclear")
_K = {name: i for i, name in enumerate(KEYPOINTS)}


@dataclass(frozen=True)
class Posture:
    """What :func:`posture` read from one pose.

    Attributes:
        posture: one of :data:`POSTURES`.
        arms_raised: a wrist above the nose (or above the shoulders when the nose is hidden).
        torso_angle: degrees of the torso from the image's vertical (None without shoulders and hips).
    """

    posture: str
    arms_raised: bool
    torso_angle: float | None

    def to_dict(self) -> dict:
        return {"posture": self.posture, "arms_raised": self.arms_raised,
                "torso_angle": None if self.torso_angle is None else round(self.torso_angle, 1)}


def _angle_from_vertical(top: np.ndarray, bottom: np.ndarray) -> float:
    dx, dy = float(bottom[0] - top[0]), float(bottom[1] - top[1])
    return math.degrees(math.atan2(abs(dx), abs(dy)))


def posture(keypoints: np.ndarray, min_score: float = 0.3) -> Posture:
    """Read posture and raised arms from one person's keypoints (rules in the module docstring).

    Args:
        keypoints: float array of shape (17, 3): pixel x, pixel y, score, in :data:`KEYPOINTS` order
            (:attr:`avi.backends.people.pose.Pose.keypoints`).
        min_score: keypoints scoring at or below it are treated as hidden.

    Returns:
        :class:`Posture`.

    Raises:
        ValueError: ``keypoints`` is not of shape (17, 3).
    """
    kp = np.asarray(keypoints, dtype=np.float64)
    if kp.shape != (len(KEYPOINTS), 3):
        raise ValueError(f"keypoints must have shape ({len(KEYPOINTS)}, 3), got {kp.shape}")

    def point(name: str) -> np.ndarray | None:
        x, y, s = kp[_K[name]]
        return np.array([x, y]) if s > min_score else None

    def mid(a: str, b: str) -> np.ndarray | None:
        pa, pb = point(a), point(b)
        if pa is None or pb is None:
            return pa if pb is None else pb
        return (pa + pb) / 2

    nose = point("nose")
    shoulders = [p for p in (point("left shoulder"), point("right shoulder")) if p is not None]
    wrists = [p for p in (point("left wrist"), point("right wrist")) if p is not None]
    if nose is not None:
        arms_raised = any(w[1] < nose[1] for w in wrists)
    else:
        arms_raised = bool(shoulders) and any(all(w[1] < s[1] for s in shoulders) for w in wrists)

    shoulder_mid, hip_mid = mid("left shoulder", "right shoulder"), mid("left hip", "right hip")
    if shoulder_mid is None or hip_mid is None:
        return Posture("unclear", arms_raised, None)
    torso = _angle_from_vertical(shoulder_mid, hip_mid)
    if torso > 60:
        return Posture("lying", arms_raised, torso)
    thighs = []
    for side in ("left", "right"):
        hip, knee = point(f"{side} hip"), point(f"{side} knee")
        if hip is not None and knee is not None and float(np.linalg.norm(knee - hip)) > 0:
            thighs.append(_angle_from_vertical(hip, knee))
    if thighs:
        if all(t > 50 for t in thighs):
            return Posture("sitting", arms_raised, torso)
        if all(t < 30 for t in thighs):
            return Posture("standing", arms_raised, torso)
        return Posture("unclear", arms_raised, torso)
    torso_len = float(np.linalg.norm(hip_mid - shoulder_mid))
    ankle_mid = mid("left ankle", "right ankle")
    if ankle_mid is not None and torso_len > 0 and ankle_mid[1] - hip_mid[1] > 1.2 * torso_len:
        return Posture("standing", arms_raised, torso)
    return Posture("unclear", arms_raised, torso)
