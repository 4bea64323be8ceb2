"""What the people models say about each person the COCO detector boxes in one frame (cpu profile, issue 36).

For every ``person`` box of a frame: the posture and raised arms read from the MoveNet pose that overlaps it most
(:mod:`.posture`), the facial expression of the largest BlazeFace face whose centre lies in the box's upper part
(:mod:`.expression`; faces under :data:`MIN_FACE_PX` pixels a side are too small for the 64x64 classifier and left
unread), and the MediaPipe hands inside the box with the COCO objects each hand overlaps (:mod:`.hands`: "a hand
on a cup"). The models run only on frames where the detector found a person (issue 36, item 5), each once per frame.

Nothing here interprets what a person does: these are measurements, and the text says which model read each one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from avi.backends.boxes import box_iou, centre_inside, overlap_ratio
from avi.backends.people.posture import posture
from avi.backends.types import Box

log = logging.getLogger(__name__)

MIN_FACE_PX = 24
"""Faces narrower than this (pixels) get no expression: the classifier reads a 64x64 crop of the face."""
MIN_POSE_IOU = 0.3
"""A pose belongs to the person box it overlaps at least this much (IoU)."""
FACE_TOP_SHARE = 0.6
"""A face belongs to a person when its centre lies in the top share of the person's box."""
MIN_HOLD_SHARE = 0.3
"""A hand is on an object when their overlap covers at least this share of the smaller of the two boxes."""
#: The weights.lock entries the reader runs.
PEOPLE_MODELS = ("blazeface", "emotion", "mediapipe-palm-detection-full", "mediapipe-hand-landmark-full",
                 "movenet-multipose")
MAX_PEOPLE = 6
"""People described per frame, largest box first (MoveNet MultiPose finds at most six)."""


@dataclass
class PersonReading:
    """What the people models read about one person box.

    Attributes:
        box: the detector's pixel xyxy person box.
        posture: ``standing``, ``sitting``, ``lying`` or ``unclear``; None when no pose overlaps the box.
        arms_raised: None when no pose overlaps the box.
        expression: ``(label, probability)`` of the person's face; None without a face large enough.
        hands: hands found in the box (MediaPipe presence >= 0.5).
        holding: COCO classes of the objects a hand overlaps (sorted, distinct).
    """

    box: Box
    posture: str | None = None
    arms_raised: bool | None = None
    expression: tuple[str, float] | None = None
    hands: int = 0
    holding: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"box": [round(float(v), 1) for v in self.box], "posture": self.posture,
                "arms_raised": self.arms_raised,
                "expression": None if self.expression is None else
                [self.expression[0], round(self.expression[1], 3)],
                "hands": self.hands, "holding": self.holding}

    def describe(self) -> str:
        """One phrase: ``"standing, arms raised; face happy 0.81; 2 hands, on a cup"`` (unknown and unclear parts
        left out)."""
        parts = []
        if self.posture not in (None, "unclear"):
            parts.append(self.posture + (", arms raised" if self.arms_raised else ""))
        elif self.arms_raised:
            parts.append("arms raised")
        if self.expression is not None:
            parts.append(f"face {self.expression[0]} {self.expression[1]:.2f}")
        if self.hands:
            hands = f"{self.hands} hand{'s' if self.hands > 1 else ''}"
            parts.append(hands + (", on " + " and ".join(f"a {c}" for c in self.holding) if self.holding else ""))
        return "; ".join(parts)


def caption_words(reading: PersonReading) -> str:
    """What a caption says about one person (:class:`~avi.backends.captioner.PerceptionCaptioner`): the posture
    (not when unclear), "arms raised" and the objects a hand is on ("a hand on a cup"); "" when none of these was
    read. No expression: the classifier is right on 15 of 32 labelled faces (bench/people/README.md), and on the tune split
    a caption's "sad face" became the answer to what a cyclist wears on his head."""
    parts = []
    if reading.posture not in (None, "unclear"):
        parts.append(reading.posture)
    if reading.arms_raised:
        parts.append("arms raised")
    if reading.holding:
        parts.append("a hand on " + " and ".join(f"a {c}" for c in reading.holding))
    return ", ".join(parts)


class PeopleReader:
    """Runs the people models on the person boxes of a frame (module docstring).

    Args:
        faces, expressions, hands, poses: :class:`~avi.backends.people.FaceDetector`,
            :class:`~avi.backends.people.ExpressionClassifier`, :class:`~avi.backends.people.HandDetector`,
            :class:`~avi.backends.people.PoseEstimator`.
    """

    def __init__(self, faces, expressions, hands, poses):
        self.faces, self.expressions, self.hands, self.poses = faces, expressions, hands, poses

    @classmethod
    def from_models(cls, models_dir, weights_lock, threads: int = 1) -> "PeopleReader":
        """The reader over the locked people models.

        Raises:
            WeightsError: a model is not installed or does not match weights.lock.
            AviError: a model file is not the expected graph.
        """
        from avi.backends.people import ExpressionClassifier, FaceDetector, HandDetector, PoseEstimator
        from avi.weights import resolve

        def path(name: str):
            return resolve(name, models_dir, weights_lock)

        return cls(FaceDetector(path("blazeface"), threads=threads),
                   ExpressionClassifier(path("emotion"), threads=threads),
                   HandDetector(path("mediapipe-palm-detection-full"), path("mediapipe-hand-landmark-full"),
                                threads=threads),
                   PoseEstimator(path("movenet-multipose"), threads=threads))

    def read(self, image: np.ndarray, detections: Sequence) -> list[PersonReading]:
        """Readings for the person boxes among ``detections``, largest first (at most :data:`MAX_PEOPLE`).

        Args:
            image: HxWx3 uint8 RGB.
            detections: the detector's boxes of this frame (objects with ``label``, ``cls``, ``box`` pixel xyxy);
                those of class (or else label) ``person`` are read, the others are what a hand can be on.

        Returns:
            one :class:`PersonReading` per person box; [] (no model run) when there is none.
        """
        people = sorted((d for d in detections if (d.cls or d.label) == "person"),
                        key=lambda d: -(d.box[2] - d.box[0]) * (d.box[3] - d.box[1]))[:MAX_PEOPLE]
        if not people:
            return []
        readings = [PersonReading(tuple(d.box)) for d in people]
        poses = sorted(self.poses.estimate(image), key=lambda p: -p.score)
        for r in readings:
            best = max(poses, key=lambda p: box_iou(p.box, r.box), default=None)
            if best is not None and box_iou(best.box, r.box) >= MIN_POSE_IOU:
                poses.remove(best)
                read = posture(best.keypoints)
                r.posture, r.arms_raised = read.posture, read.arms_raised
        faces = [f for f in self.faces.detect(image) if f.box[2] - f.box[0] >= MIN_FACE_PX]
        owned = []
        for r in readings:
            x1, y1, x2, y2 = r.box
            top = (x1, y1, x2, y1 + FACE_TOP_SHARE * (y2 - y1))
            mine = [f for f in faces if f not in owned and centre_inside(f.box, top)]
            if mine:
                face = max(mine, key=lambda f: f.box[2] - f.box[0])
                owned.append(face)
                (e,) = self.expressions.classify(image, [face.box])
                r.expression = (e.label, float(e.score))
        objects = [d for d in detections if (d.cls or d.label) not in ("person", "face")]
        for hand in self.hands.detect(image, [r.box for r in readings]):
            owner = next((r for r in readings if centre_inside(hand.box, r.box)), None)
            if owner is None:
                continue
            owner.hands += 1
            for d in objects:
                name = d.cls or d.label
                if overlap_ratio(hand.box, d.box) >= MIN_HOLD_SHARE and name not in owner.holding:
                    owner.holding.append(name)
        for r in readings:
            r.holding.sort()
        return readings


def face_model_paths(settings) -> tuple[Path, Path] | None:
    """The verified ``(blazeface, faceres-descriptor)`` ONNX paths of ``settings``' models directory, for linking an
    index's person tracks by face (:mod:`avi.index.person_subjects`), or None when either is not installed (nor
    listed in weights.lock), or a custom detector directory is set (the gpu profile's Grounding-DINO): the tracks
    are then linked by clothing only.

    Args:
        settings: :class:`avi.config.Settings` (``models_dir``, ``weights_lock``, ``detector_model_dir``).

    Raises:
        WeightsError: a face model is installed but fails its size or sha256 check (issue 55: a tampered file
            ends the run with exit 4, as every other weight does, instead of switching face linking off).
    """
    if settings.detector_model_dir:
        return None
    from avi.weights import load_lock, resolve

    entries = load_lock(settings.weights_lock)
    names = ("blazeface", "faceres-descriptor")
    if any(n not in entries or not entries[n].checked_file(settings.models_dir).exists() for n in names):
        log.info("person tracks linked by clothing only: the face models (%s) are not installed", ", ".join(names))
        return None
    return resolve(names[0], settings.models_dir, settings.weights_lock), \
        resolve(names[1], settings.models_dir, settings.weights_lock)
    from avi.errors import AviError
    from avi.weights import resolve

    try:
        return (resolve("blazeface", settings.models_dir, settings.weights_lock),
                resolve("faceres-descriptor", settings.models_dir, settings.weights_lock))
    except AviError as exc:  # WeightsError included
        log.info("person tracks linked by clothing only: %s", exc)
        return None
