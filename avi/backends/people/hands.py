"""Hands with MediaPipe Hands (palm detector, then hand landmarks) through onnxruntime.

Models: ``palm_detection_full.tflite`` and ``hand_landmark_full.tflite`` of the PyPI wheel ``mediapipe`` 0.10.14,
converted to ONNX at fetch time (weights.lock ``mediapipe-palm-detection-full``, ``mediapipe-hand-landmark-full``;
:mod:`avi.weights.wheel`); Zhang et al. 2020, "MediaPipe Hands: On-device Real-time Hand Tracking", Apache-2.0.
Processing reproduces MediaPipe's own graphs (mediapipe/modules/palm_detection/palm_detection_cpu.pbtxt,
hand_landmark/palm_detection_detection_to_roi.pbtxt and hand_landmark_cpu.pbtxt), checked against the ``mediapipe``
package's ``Hands(static_image_mode=True, min_detection_confidence=0.1)`` on the 83 labelled frames of bench/people:
at the same palm threshold it finds every hand the package finds, boxes within a few pixels:

* **palms**: the frame letterboxed into 192x192 (aspect kept, zero padding), RGB in [0, 1]; 2016 SSD anchors
  (strides 8, 16, 16, 16, two anchors per layer, fixed size); per anchor a logit (sigmoid, clipped at +-100) and 18
  values: the palm box's centre offset and size, then 7 palm keypoints, in input pixels; palms above
  ``min_palm_score`` (0.5) merged by weighted NMS at IoU 0.3 (each kept palm is the score-weighted mean of the
  ones it suppresses).
* **hand region**: rotated so that the wrist -> middle-finger-knuckle line (palm keypoints 0 and 2) points up,
  centred half a palm height further along that line, squared on the palm box's long side and scaled 2.6 times.
* **landmarks**: that rotated square cut to 224x224 (bilinear, edge pixels repeated outside the frame), RGB in
  [0, 1]; outputs 21 landmarks (x, y, z in crop pixels, mapped back to the frame) and the hand-presence
  probability; a hand is kept at presence >= ``min_presence`` (0.5, MediaPipe's threshold).

Beyond MediaPipe: hands in a wide shot are too small for the palm detector's 192 pixels (a 30-pixel hand in a
1768-pixel frame), so :meth:`HandDetector.detect` also runs the two stages on each person box it is given (the
COCO detector's), the square around it enlarged 1.2 times and upscaled so its side is ``person_side`` pixels (768;
crops already within 1.2 times of that are not redone); hands found twice are merged by NMS at IoU 0.3. Measured
in bench/people/README.md ("Measured").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import cv2
import numpy as np

from avi.backends.boxes import box_iou, nms
from avi.backends.onnx_session import open_session
from avi.backends.people._common import check_image, decode_ssd, sigmoid, ssd_anchor_centres
from avi.backends.types import Box

#: MediaPipe's 21 hand landmarks in output order: the wrist, then each finger from its base joint to its tip.
KEYPOINTS = ("wrist",
             "thumb CMC", "thumb MCP", "thumb IP", "thumb tip",
             "index MCP", "index PIP", "index DIP", "index tip",
             "middle MCP", "middle PIP", "middle DIP", "middle tip",
             "ring MCP", "ring PIP", "ring DIP", "ring tip",
             "pinky MCP", "pinky PIP", "pinky DIP", "pinky tip")

PALM_INPUT = 192
LANDMARK_INPUT = 224
ROI_SCALE = 2.6  # palm_detection_detection_to_roi.pbtxt: scale_x, scale_y
ROI_SHIFT_Y = -0.5  # ... shift_y (towards the fingers), square_long
PALM_NMS_IOU = 0.3  # palm_detection_cpu.pbtxt: min_suppression_threshold, WEIGHTED
PERSON_CROP_PAD = 1.2


@dataclass(frozen=True)
class Hand:
    """One hand.

    Attributes:
        box: pixel xyxy around the 21 landmarks (clipped to the frame).
        score: the landmark model's hand-presence probability in [0, 1].
        keypoints: float32 array (21, 3): pixel x and y of :data:`KEYPOINTS` in the frame (not clipped) and a
            relative depth z in pixels of the crop's scale (smaller is nearer the camera; the wrist is about 0).
        palm_score: the palm detector's score of the palm it was found from.
    """

    box: Box
    score: float
    keypoints: np.ndarray
    palm_score: float

    def to_dict(self) -> dict:
        return {"box": [round(float(v), 1) for v in self.box], "score": round(self.score, 3),
                "palm_score": round(self.palm_score, 3)}


def weighted_nms(boxes: np.ndarray, scores: np.ndarray, keypoints: np.ndarray, iou_threshold: float
                 ) -> list[tuple[np.ndarray, float, np.ndarray]]:
    """MediaPipe's weighted non-maximum suppression (NonMaxSuppressionCalculator, ``WEIGHTED``): best first, each
    kept detection is the score-weighted mean of itself and every remaining one overlapping it at IoU >
    ``iou_threshold``, with the best one's score.

    Args:
        boxes: (N, 4) xyxy; scores: (N,); keypoints: (N, K, 2).

    Returns:
        ``[(box (4,), score, keypoints (K, 2))]``, best first.
    """
    left = list(np.argsort(-scores))
    out = []
    while left:
        best = left[0]
        group = [j for j in left if j == best or box_iou(boxes[best], boxes[j]) > iou_threshold]
        left = [j for j in left if j not in group]
        w = scores[group].astype(np.float64)
        out.append(((boxes[group] * w[:, None]).sum(0) / w.sum(), float(scores[best]),
                    (keypoints[group] * w[:, None, None]).sum(0) / w.sum()))
    return out


def hand_region(palm_box: np.ndarray, palm_keypoints: np.ndarray) -> tuple[float, float, float, float]:
    """The rotated square MediaPipe reads a hand in, from a palm (palm_detection_detection_to_roi.pbtxt).

    Args:
        palm_box: pixel xyxy of the palm; palm_keypoints: (7, 2) pixels (0 the wrist, 2 the middle-finger knuckle).

    Returns:
        ``(centre x, centre y, side, rotation)``: pixels, and radians in [-pi, pi), clockwise in the image, that
        turn the wrist -> knuckle line upright.
    """
    (x0, y0), (x1, y1) = palm_keypoints[0], palm_keypoints[2]
    rot = math.pi / 2 - math.atan2(-(y1 - y0), x1 - x0)
    rot -= 2 * math.pi * math.floor((rot + math.pi) / (2 * math.pi))
    w, h = float(palm_box[2] - palm_box[0]), float(palm_box[3] - palm_box[1])
    cx = (palm_box[0] + palm_box[2]) / 2 - h * ROI_SHIFT_Y * math.sin(rot)
    cy = (palm_box[1] + palm_box[3]) / 2 + h * ROI_SHIFT_Y * math.cos(rot)
    return float(cx), float(cy), max(w, h) * ROI_SCALE, rot


def region_affine(cx: float, cy: float, side: float, rot: float, size: int) -> np.ndarray:
    """The 2x3 affine taking pixels of a ``size`` x ``size`` crop of the rotated square to frame pixels."""
    c, s = math.cos(rot), math.sin(rot)
    k = side / size
    return np.array([[k * c, -k * s, cx - side / 2 * (c - s)], [k * s, k * c, cy - side / 2 * (s + c)]], np.float64)


class HandDetector:
    """MediaPipe Hands, full models (cpu profile): palms, then 21 landmarks and a presence score per hand.

    Args:
        palm_path: verified ONNX file (weights.lock ``mediapipe-palm-detection-full``).
        landmark_path: verified ONNX file (weights.lock ``mediapipe-hand-landmark-full``).
        min_palm_score: palms at or below this are dropped (MediaPipe's 0.5).
        min_presence: hands whose presence is below this are dropped (MediaPipe's 0.5).
        max_hands: hands kept per frame (and per person crop), best first.
        person_side: pixels a side that a person crop is upscaled to (module docstring).
        threads: onnxruntime intra-op threads.

    Raises:
        AviError: onnxruntime is missing or a file is not the expected graph.
    """

    name = "mediapipe-hands-full"

    def __init__(self, palm_path: Path | str, landmark_path: Path | str, min_palm_score: float = 0.5,
                 min_presence: float = 0.5, max_hands: int = 10, person_side: int = 768, threads: int = 1):
        self._palm, self._palm_in, self._palm_out = open_session(
            palm_path, "MediaPipe palm detection 192", [1, PALM_INPUT, PALM_INPUT, 3], threads)
        self._lmk, self._lmk_in, self._lmk_out = open_session(
            landmark_path, "MediaPipe hand landmarks 224", [1, LANDMARK_INPUT, LANDMARK_INPUT, 3], threads)
        self.min_palm_score = min_palm_score
        self.min_presence = min_presence
        self.max_hands = max_hands
        self.person_side = person_side
        self._anchors = ssd_anchor_centres(PALM_INPUT, (8, 16), (2, 6))  # 24x24 x 2 + 12x12 x 6 = 2016

    def palms(self, image: np.ndarray, min_score: float | None = None) -> list[tuple[np.ndarray, float, np.ndarray]]:
        """Palms in ``image`` (HxWx3 uint8 RGB): ``[(box xyxy, score, keypoints (7, 2))]`` in its pixels, best first.

        Raises:
            ValueError: ``image`` is not an HxWx3 uint8 array.
            AviError: the graph's outputs are not ``[1, 2016, 18]`` and ``[1, 2016, 1]``.
        """
        check_image(image)
        h, w = image.shape[:2]
        s = PALM_INPUT / max(h, w)
        px, py = (PALM_INPUT - w * s) / 2, (PALM_INPUT - h * s) / 2
        m = np.array([[s, 0, px], [0, s, py]], np.float64)
        tensor = cv2.warpAffine(image.astype(np.float32), m, (PALM_INPUT, PALM_INPUT), flags=cv2.INTER_LINEAR,
                                borderMode=cv2.BORDER_CONSTANT, borderValue=0) / 255.0
        outputs = self._palm.run(self._palm_out, {self._palm_in: tensor[None]})
        reg, logits = (o[0] for o in sorted(outputs, key=lambda a: -a.shape[-1]))  # [1, 2016, 18], [1, 2016, 1]
        if reg.shape != (len(self._anchors), 18) or logits.shape != (len(self._anchors), 1):
            from avi.errors import AviError

            raise AviError(f"palm detector outputs {reg.shape} and {logits.shape}, expected (2016, 18) and (2016, 1)")
        scores = sigmoid(logits[:, 0])
        keep = np.nonzero(scores > (self.min_palm_score if min_score is None else min_score))[0]
        if keep.size == 0:
            return []
        rows = np.concatenate([logits[keep], reg[keep]], axis=1)
        boxes, kps = decode_ssd(rows, self._anchors[keep], 7, (1 / s, 1 / s), (px / s, py / s))
        return weighted_nms(boxes, scores[keep], kps, PALM_NMS_IOU)

    def landmarks(self, image: np.ndarray, region: tuple[float, float, float, float]) -> tuple[float, np.ndarray]:
        """The landmark model on one hand region (:func:`hand_region`) of ``image``.

        Returns:
            ``(presence probability, keypoints (21, 3) float32 in frame pixels)``.
        """
        m = region_affine(*region, LANDMARK_INPUT)
        crop = cv2.warpAffine(image.astype(np.float32), m, (LANDMARK_INPUT, LANDMARK_INPUT),
                              flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP, borderMode=cv2.BORDER_REPLICATE) / 255.0
        out = dict(zip(self._lmk_out, self._lmk.run(self._lmk_out, {self._lmk_in: crop[None]})))
        points = out["Identity"][0].reshape(21, 3)
        presence = float(np.asarray(out["Identity_1"]).ravel()[0])
        xy = np.c_[points[:, :2], np.ones(21)] @ m.T
        z = points[:, 2:] * (region[2] / LANDMARK_INPUT)
        return presence, np.concatenate([xy, z], axis=1).astype(np.float32)

    def _hands(self, image: np.ndarray) -> list[Hand]:
        h, w = image.shape[:2]
        hands = []
        for box, score, kps in self.palms(image)[:self.max_hands]:
            presence, points = self.landmarks(image, hand_region(box, kps))
            if presence < self.min_presence:
                continue
            x1, y1 = points[:, :2].min(0)
            x2, y2 = points[:, :2].max(0)
            clipped = (max(0.0, float(x1)), max(0.0, float(y1)), min(float(w), float(x2)), min(float(h), float(y2)))
            if clipped[2] > clipped[0] and clipped[3] > clipped[1]:
                hands.append(Hand(clipped, presence, points, score))
        return hands

    def detect(self, image: np.ndarray, people: Sequence[Box] = ()) -> list[Hand]:
        """Hands in one frame, best first.

        Args:
            image: HxWx3 uint8 RGB.
            people: pixel xyxy person boxes (the COCO detector's) to look closer in (module docstring).

        Returns:
            at most ``max_hands`` hands, presence >= ``min_presence``, in pixels of ``image``.

        Raises:
            ValueError: ``image`` is not an HxWx3 uint8 array.
        """
        check_image(image)
        h, w = image.shape[:2]
        found = self._hands(image)
        for x1, y1, x2, y2 in people:
            half = max(x2 - x1, y2 - y1) * PERSON_CROP_PAD / 2
            cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
            a0, b0 = int(max(0, cx - half)), int(max(0, cy - half))
            a1, b1 = int(min(w, cx + half)), int(min(h, cy + half))
            if a1 - a0 < 16 or b1 - b0 < 16:
                continue
            f = self.person_side / max(a1 - a0, b1 - b0)
            if f <= PERSON_CROP_PAD:
                continue  # the whole frame was read at about this scale
            crop = cv2.resize(image[b0:b1, a0:a1], None, fx=f, fy=f, interpolation=cv2.INTER_CUBIC)
            for hand in self._hands(crop):
                kp = hand.keypoints.copy()
                kp[:, :2] = kp[:, :2] / f + (a0, b0)
                kp[:, 2] /= f
                box = (a0 + hand.box[0] / f, b0 + hand.box[1] / f, a0 + hand.box[2] / f, b0 + hand.box[3] / f)
                found.append(Hand(box, hand.score, kp, hand.palm_score))
        keep = nms([x.box for x in found], [x.score for x in found], PALM_NMS_IOU)
        return [found[i] for i in keep[:self.max_hands]]
