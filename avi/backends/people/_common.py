"""What the people models share: SSD anchor centres and their decoding, box geometry on face crops, and TF.js's
``cropAndResize`` (the onnxruntime session is :func:`avi.backends.onnx_session.open_session`, shared with the COCO
detector)."""

from __future__ import annotations

from typing import Sequence

import cv2
import numpy as np

from avi.backends.boxes import nms
from avi.backends.onnx_session import open_session
from avi.backends.types import Box

__all__ = ["open_session", "ssd_anchor_centres", "decode_ssd", "keep_boxes", "sigmoid", "face_crop_box",
           "face_crops", "crop_and_resize", "resize_bilinear", "check_image"]


def ssd_anchor_centres(input_size: int, strides: Sequence[int], per_cell: Sequence[int]) -> np.ndarray:
    """Anchor centres of a MediaPipe SSD detector, in pixels of its square input.

    For each stride, a grid of ``ceil(input_size / stride)`` cells a side, row by row, each cell repeating its
    centre ``((col + 0.5) * stride, (row + 0.5) * stride)`` ``per_cell`` times (MediaPipe's
    ``SsdAnchorsCalculator`` with fixed anchor size, layers of one stride merged; human's ``generateAnchors`` in
    src/face/facemeshutil.ts and the table in src/hand/handposeanchors.ts).

    Returns:
        float32 array of shape (N, 2): x, y.
    """
    out = []
    for stride, n in zip(strides, per_cell):
        cells = -(-input_size // stride)
        rows, cols = np.mgrid[0:cells, 0:cells]
        xy = np.stack([(cols.ravel() + 0.5) * stride, (rows.ravel() + 0.5) * stride], axis=1)
        out.append(np.repeat(xy, n, axis=0))
    return np.concatenate(out).astype(np.float32)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """Logistic function of logits clipped to +-100 (MediaPipe's ``score_clipping_thresh``), float32."""
    return (1.0 / (1.0 + np.exp(-np.clip(x.astype(np.float64), -100.0, 100.0)))).astype(np.float32)


def decode_ssd(rows: np.ndarray, anchors: np.ndarray, n_landmarks: int, scale: tuple[float, float],
               shift: tuple[float, float] = (0.0, 0.0)) -> tuple[np.ndarray, np.ndarray]:
    """Boxes and landmarks of MediaPipe SSD rows (BlazeFace, the palm detector), in pixels of the source image.

    Each row is ``[logit, dx, dy, w, h, x1, y1, ..., xL, yL]`` in pixels of the model's square input, offsets from
    its anchor centre (human's ``decodeBoxes`` in src/face/blazeface.ts and src/hand/handdetector.ts).

    Args:
        rows: (N, 5 + 2 * n_landmarks) float rows already filtered to the kept scores.
        anchors: (N, 2) anchor centres of those rows (:func:`ssd_anchor_centres`).
        n_landmarks: points per row after the box.
        scale: (fx, fy) source pixels per input pixel.
        shift: (x, y) subtracted after scaling (the padding of a squared source).

    Returns:
        ``(boxes (N, 4) xyxy, landmarks (N, n_landmarks, 2) xy)``, float32, unclipped.
    """
    f = np.array(scale, np.float32)
    off = np.array(shift, np.float32)
    centres = rows[:, 1:3] + anchors
    half = rows[:, 3:5] / 2.0
    boxes = np.concatenate([(centres - half) * f - off, (centres + half) * f - off], axis=1)
    landmarks = (rows[:, 5:5 + 2 * n_landmarks].reshape(-1, n_landmarks, 2) + anchors[:, None, :]) * f - off
    return boxes.astype(np.float32), landmarks.astype(np.float32)


def keep_boxes(boxes: np.ndarray, scores: np.ndarray, iou_threshold: float, most: int,
               size: tuple[int, int]) -> list[tuple[int, Box]]:
    """NMS over ``boxes`` (N, 4 xyxy pixels), the ``most`` best kept, each clipped to the image ``size`` (width,
    height); boxes left empty by the clipping are dropped. Returns ``[(row index, clipped box)]`` by score."""
    w, h = size
    out = []
    for i in nms([tuple(b) for b in boxes.tolist()], scores.tolist(), iou_threshold)[:most]:
        x1, y1, x2, y2 = boxes[i].tolist()
        box = (max(0.0, x1), max(0.0, y1), min(float(w), x2), min(float(h), y2))
        if box[2] > box[0] and box[3] > box[1]:
            out.append((i, box))
    return out


def face_crop_box(box: Box, scale: float = 1.4) -> Box:
    """The square region human crops around a face box for the face models: the box enlarged ``scale`` times about
    its centre, then squared on its longer side (src/face/facemeshutil.ts ``enlargeBox`` and ``squarifyBox``;
    1.4 is ``config.face.detector.scale``'s default in src/face/blazeface.ts).

    Args:
        box: pixel xyxy face box (the detector's).
        scale: enlargement factor of width and height.

    Returns:
        pixel xyxy square box; it may reach outside the frame.
    """
    cx, cy = (box[0] + box[2]) / 2.0, (box[1] + box[3]) / 2.0
    half = max(box[2] - box[0], box[3] - box[1]) * scale / 2.0
    return (cx - half, cy - half, cx + half, cy + half)


def face_crops(image: np.ndarray, boxes: Sequence[Box], size: int, scale: float) -> np.ndarray:
    """The square crops of the face models, one per face box: :func:`face_crop_box` cut and resized to ``size``
    pixels a side by :func:`crop_and_resize`; float32 (N, size, size, 3) in 0..255.

    Raises:
        ValueError: ``image`` is not HxWx3 uint8 or a box is empty.
    """
    check_image(image)
    return np.stack([crop_and_resize(image, face_crop_box(b, scale), (size, size)) for b in boxes])


def crop_and_resize(image: np.ndarray, box: Box, size: tuple[int, int]) -> np.ndarray:
    """The region ``box`` of ``image`` resampled bilinearly to ``size``, zero outside the image: TF.js's
    ``tf.image.cropAndResize`` with ``extrapolationValue`` 0, which human uses to cut faces
    (src/face/facemeshutil.ts ``cutAndResize``).

    Args:
        image: HxWxC (or HxW) array; uint8 or float.
        box: pixel xyxy region; may reach outside the image.
        size: output (width, height) in pixels.

    Returns:
        float32 array of shape (height, width[, C]).

    Raises:
        ValueError: an empty box or output size.
    """
    x1, y1, x2, y2 = (float(v) for v in box)
    w, h = size
    if x2 <= x1 or y2 <= y1 or w < 1 or h < 1:
        raise ValueError(f"cannot crop box {box} to {size}")
    # Human passes the box divided by the image size; cropAndResize samples output pixel i at
    # (y1 / H) * (H - 1) + i * ((y2 - y1) / H) * (H - 1) / (h - 1): an affine map, warped with a zero border.
    fy = (image.shape[0] - 1) / image.shape[0]
    fx = (image.shape[1] - 1) / image.shape[1]
    sx = (x2 - x1) * fx / max(w - 1, 1)
    sy = (y2 - y1) * fy / max(h - 1, 1)
    m = np.array([[sx, 0.0, x1 * fx], [0.0, sy, y1 * fy]], dtype=np.float64)
    return cv2.warpAffine(image.astype(np.float32), m, (w, h), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                          borderMode=cv2.BORDER_CONSTANT, borderValue=0)


def resize_bilinear(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``image`` resized to ``size`` (width, height) bilinearly as float32: TF.js's ``tf.image.resizeBilinear``
    (OpenCV samples at half-pixel centres where TF.js's default does not: a shift below one source pixel)."""
    return cv2.resize(image.astype(np.float32), size, interpolation=cv2.INTER_LINEAR)


def check_image(image: np.ndarray) -> None:
    """Raise ValueError unless ``image`` is an HxWx3 uint8 RGB array with both sides >= 1."""
    if not isinstance(image, np.ndarray) or image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8 \
            or min(image.shape[:2]) < 1:
        shape = getattr(image, "shape", None)
        raise ValueError(f"expected an HxWx3 uint8 RGB image, got {type(image).__name__} of shape {shape} and dtype "
                         f"{getattr(image, 'dtype', None)}")
