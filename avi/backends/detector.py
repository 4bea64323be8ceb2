"""Object detection role (``object_detect`` and perception captions).

Backends:
    * :class:`CpuDetector` (cpu profile): NanoDet-m for the 80 COCO classes
      (:mod:`avi.backends.coco_detector`) plus :class:`OpenCvDetector`'s Haar
      cascade for faces (COCO has no face class). Closed set: a word naming no
      class is reported back as unsupported, with the vocabulary.
    * :class:`OpenCvDetector`: OpenCV's HOG pedestrian detector (Dalal & Triggs
      2005) for people and the Haar cascade (Viola & Jones 2001) for frontal
      faces, both inside ``opencv-python-headless<5``. HOG is kept for
      comparison (``AVI_PERSON_DETECTOR=hog``): on the labelled frames of
      ``bench/detect`` it finds 2 % of the people NanoDet-m finds 86 % of.
    * Grounding-DINO (gpu profile, open vocabulary):
      :mod:`avi.backends.grounding_dino`, same :class:`Detector` protocol
      (plus ``detect_batch`` for many frames in one forward pass).

Boxes are pixel xyxy in the analysed frame; overlapping boxes of one label are
suppressed with NMS at ``iou_threshold`` (AVI §4.1 uses 0.5).
"""

from __future__ import annotations

import math
import re
from typing import Callable, Protocol, Sequence, runtime_checkable

import cv2
import numpy as np

from avi.backends.boxes import nms
from avi.backends.types import Detection, DetectionResult
from avi.video.decode import Frame


@runtime_checkable
class Detector(Protocol):
    """Finds objects named by text labels in a frame.

    Every detector declares the optional capabilities below, None where it lacks one (callers test for None,
    never for the attribute's presence).

    Attributes:
        name: the backend's name, for observations and the index.
        vocabulary: what it can detect, in words ("people and faces"; "any object named in text").
        class_list: every label it knows (the cpu detector: the COCO classes, faces, shapes), shown with
            ``vocabulary`` when a label names no class and kept as the perception memory's vocabulary; None when
            it lists none (open vocabulary, or a set it does not enumerate).
        detect_all: ``detect_all(frame) -> list[Detection]``: every box of every class it knows, best first,
            without being asked for labels (closed-set detectors); None when it needs words.
        detect_batch: ``detect_batch(frames, labels) -> list[DetectionResult]``, one result per frame in order,
            from one forward pass (Grounding-DINO); None: :meth:`detect` per frame.
    """

    name: str
    vocabulary: str
    class_list: Sequence[str] | None
    detect_all: Callable[[Frame], list[Detection]] | None
    detect_batch: Callable[[Sequence[Frame], Sequence[str]], list[DetectionResult]] | None

    def supports(self, label: str) -> bool:
        """Whether this backend can detect ``label`` at all."""
        ...

    def detect(self, frame: Frame, labels: Sequence[str]) -> DetectionResult:
        """Detections for the labels it supports; the rest listed as unsupported."""
        ...


def all_detections(detector, frame: Frame) -> list[Detection]:
    """Every box a detector finds in a frame without being asked for labels: all its classes when it has
    ``detect_all`` (the cpu COCO detector), else people and faces (an open-vocabulary detector needs words)."""
    if detector.detect_all is not None:
        return detector.detect_all(frame)
    return detector.detect(frame, ["person", "face"]).detections


_PERSON = re.compile(r"^(person|people|persons|pedestrians?|humans?|man|men|woman|women|child|children|"
                     r"boys?|girls?|walkers?|players?)$")
_FACE = re.compile(r"^(faces?|human faces?|heads?)$")


def bounded_upscale(height: int, width: int, min_short: int, max_long: int) -> float:
    """Factor (>= 1.0) that upscales a ``height`` x ``width`` image (pixels) towards a short side of ``min_short``
    pixels without taking its long side past ``max_long`` pixels (1.0 when the image is already that large).

    Raises:
        ValueError: a side is not positive.
    """
    if height <= 0 or width <= 0:
        raise ValueError(f"image has no size: {height}x{width}")
    want = min_short / min(height, width)
    room = max_long / max(height, width)
    return max(1.0, min(want, room))


def _squash(margin: float, scale: float) -> float:
    """Map a detector margin (unbounded) to [0, 1] with a logistic curve."""
    return 1.0 / (1.0 + math.exp(-margin / scale))


class OpenCvDetector:
    """HOG people + Haar frontal faces (cpu profile).

    Scores: HOG returns SVM margins and Haar returns stage-sum level weights;
    both are unbounded, so they are squashed to [0, 1] with a logistic curve.
    The scores rank boxes within this backend; they are not calibrated
    probabilities comparable to Grounding-DINO's.

    Args:
        iou_threshold: NMS IoU.
        min_person_margin: HOG detections with a smaller SVM margin are dropped.
        min_height: frames are upscaled so their short side is at least this
            (HOG needs people of about 128 px) ...
        max_side: ... unless that would take the long side past this many pixels: the upscale factor is
            bounded by both sides (:func:`bounded_upscale`), so a thin strip of a frame costs no more than a
            normal one.
    """

    name = "opencv-hog-haar"
    vocabulary = "people and faces"
    class_list = None
    detect_all = None
    detect_batch = None

    def __init__(self, iou_threshold: float = 0.5, min_person_margin: float = 0.3, min_height: int = 480,
                 max_side: int = 1920):
        self.iou_threshold = iou_threshold
        self.min_person_margin = min_person_margin
        self.min_height = min_height
        self.max_side = max_side
        self._hog = cv2.HOGDescriptor()
        self._hog.setSVMDetector(cv2.HOGDescriptor_getDefaultPeopleDetector())
        self._face = cv2.CascadeClassifier(cv2.data.haarcascades + "haarcascade_frontalface_default.xml")
        if self._face.empty():  # pragma: no cover - broken OpenCV install
            from avi.errors import AviError

            raise AviError("OpenCV has no Haar cascades (OpenCV 5 dropped them): pip install 'opencv-python-headless<5'")

    @staticmethod
    def canonical(label: str) -> str | None:
        """``"person"``, ``"face"`` or None for a label this backend cannot detect."""
        key = label.strip().lower()
        if _PERSON.match(key):
            return "person"
        if _FACE.match(key):
            return "face"
        return None

    def supports(self, label: str) -> bool:
        return self.canonical(label) is not None

    def detect(self, frame: Frame, labels: Sequence[str]) -> DetectionResult:
        wanted: dict[str, str] = {}
        unsupported: list[str] = []
        for label in labels:
            kind = self.canonical(label)
            if kind is None:
                unsupported.append(label)
            else:
                wanted.setdefault(kind, label.strip().lower())
        h, w = frame.image.shape[:2]
        scale = bounded_upscale(h, w, self.min_height, self.max_side)
        gray = cv2.cvtColor(frame.image, cv2.COLOR_RGB2GRAY)
        if scale > 1.0:
            gray = cv2.resize(gray, (int(w * scale), int(h * scale)), interpolation=cv2.INTER_LINEAR)
        gh, gw = gray.shape[:2]
        dets: list[Detection] = []
        if "person" in wanted and gw >= 64 and gh >= 128:  # HOG's window is 64x128
            dets += self._people(gray, scale, frame, wanted["person"])
        if "face" in wanted and min(gh, gw) >= 24:  # the cascade's smallest face
            dets += self._faces(gray, scale, frame, wanted["face"])
        dets.sort(key=lambda d: -d.score)
        return DetectionResult(frame.t_s, dets, unsupported)

    def _finish(self, rects, margins, scale, frame, label, squash_scale) -> list[Detection]:
        boxes = [(x / scale, y / scale, (x + bw) / scale, (y + bh) / scale) for (x, y, bw, bh) in rects]
        scores = [_squash(float(m), squash_scale) for m in margins]
        size = (frame.image.shape[1], frame.image.shape[0])
        return [Detection(label, scores[i], boxes[i], frame.t_s, size)
                for i in nms(boxes, scores, self.iou_threshold)]

    def _people(self, gray, scale, frame, label) -> list[Detection]:
        rects, weights = self._hog.detectMultiScale(gray, winStride=(8, 8), padding=(8, 8), scale=1.05)
        if len(rects) == 0:
            return []
        weights = np.asarray(weights, dtype=float).reshape(-1)
        keep = weights >= self.min_person_margin
        return self._finish(np.asarray(rects)[keep].tolist(), weights[keep].tolist(), scale, frame, label, 0.5)

    def _faces(self, gray, scale, frame, label) -> list[Detection]:
        rects, _levels, weights = self._face.detectMultiScale3(
            gray, scaleFactor=1.1, minNeighbors=5, minSize=(24, 24), outputRejectLevels=True)
        if len(rects) == 0:
            return []
        weights = np.asarray(weights, dtype=float).reshape(-1)
        return self._finish(np.asarray(rects).tolist(), weights.tolist(), scale, frame, label, 2.0)


class CpuDetector:
    """The cpu profile's detector: NanoDet-m for the 80 COCO classes, OpenCV's Haar cascade for faces, and
    flat-coloured geometric shapes measured with OpenCV (:mod:`avi.backends.shapes`) for words naming a shape.

    COCO has no face class, so faces come from :class:`OpenCvDetector`; people come from NanoDet-m, which finds
    far more of them than HOG on the labelled frames of the sample videos (``scripts/bench_detect.py``;
    ``person_backend="hog"`` keeps HOG for comparison).

    Args:
        coco: the COCO detector (:class:`avi.backends.coco_detector.NanoDetDetector`).
        opencv: HOG + Haar (:class:`OpenCvDetector`).
        person_backend: ``"coco"`` or ``"hog"``.
        shapes: the shape finder (:class:`avi.backends.shapes.ShapeDetector` by default).
    """

    detect_batch = None

    def __init__(self, coco, opencv: OpenCvDetector, person_backend: str = "coco", shapes=None):
        from avi.backends.coco_detector import COCO_CLASSES
        from avi.backends.shapes import KINDS, ShapeDetector

        self.coco = coco
        self.opencv = opencv
        self.shapes = shapes if shapes is not None else ShapeDetector()
        self.person_backend = person_backend
        self.name = f"{coco.name}+haar-faces" if person_backend == "coco" else f"{coco.name}+hog+haar"
        self.vocabulary = ("the 80 COCO classes (person, bicycle, car, cup, cell phone, ...), faces, and flat "
                           "geometric shapes (circle, square, rectangle, triangle)")
        #: every label it knows, for the message that answers a label naming no class
        self.class_list = (*COCO_CLASSES, "face", *KINDS)

    def _route(self, label: str) -> str | None:
        kind = self.opencv.canonical(label)
        if kind == "face" or (kind == "person" and self.person_backend == "hog"):
            return "opencv"
        if self.coco.supports(label):
            return "coco"
        return "shapes" if self.shapes.supports(label) else None

    def supports(self, label: str) -> bool:
        return self._route(label) is not None

    def detect(self, frame: Frame, labels: Sequence[str]) -> DetectionResult:
        routes = {label: self._route(label) for label in labels}
        dets: list[Detection] = []
        coco_labels = [lab for lab, r in routes.items() if r == "coco"]
        cv_labels = [lab for lab, r in routes.items() if r == "opencv"]
        shape_labels = [lab for lab, r in routes.items() if r == "shapes"]
        if coco_labels:
            dets += self.coco.detect(frame, coco_labels).detections
        if cv_labels:
            dets += self.opencv.detect(frame, cv_labels).detections
        if shape_labels:
            dets += self.shapes.detect(frame, shape_labels).detections
        dets.sort(key=lambda d: -d.score)
        return DetectionResult(frame.t_s, dets, [lab for lab, r in routes.items() if r is None])

    def detect_all(self, frame: Frame) -> list[Detection]:
        """Every COCO box (labelled by class; people from HOG when ``person_backend="hog"``) plus faces."""
        dets = self.coco.detect_all(frame)
        extra = ["face"]
        if self.person_backend == "hog":
            dets = [d for d in dets if d.label != "person"]
            extra.append("person")
        dets += self.opencv.detect(frame, extra).detections
        dets.sort(key=lambda d: -d.score)
        return dets
