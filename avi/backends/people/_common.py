"""What the people models share: an onnxruntime session checked against the expected input, SSD anchor centres,
box geometry on face crops, and TF.js's ``cropAndResize``."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import cv2
import numpy as np

from avi.backends.types import Box
from avi.errors import AviError


def open_session(onnx_path: Path | str, what: str, shape: Sequence[int | None], threads: int = 1):
    """An onnxruntime CPU session of ``onnx_path`` whose single input has ``shape`` (None: any size).

    Args:
        onnx_path: the verified ONNX file.
        what: the model's name for error messages (e.g. ``"BlazeFace 256"``).
        shape: expected input shape; ``None`` where the graph's dimension is symbolic or anything goes.
        threads: intra-op threads (one measured faster than two on the 2 shared cores, research/npm_detector.md).

    Returns:
        ``(session, input name, output names)``.

    Raises:
        AviError: onnxruntime is missing, the file does not load, or its input is not ``shape``.
    """
    try:
        import onnxruntime as ort
    except ImportError as exc:  # pragma: no cover - part of avi[cpu]
        raise AviError("onnxruntime is not installed: pip install 'avi[cpu]'") from exc
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = max(1, int(threads))
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    try:
        session = ort.InferenceSession(str(onnx_path), sess_options=opts, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
        raise AviError(f"{onnx_path} does not load as an ONNX model: {str(exc).splitlines()[0]}") from None
    inputs = session.get_inputs()
    got = list(inputs[0].shape) if len(inputs) == 1 else None
    if got is None or len(got) != len(shape) or any(
            want is not None and g != want for g, want in zip(got, shape)):
        raise AviError(f"{onnx_path} is not a {what} graph (inputs {[list(i.shape) for i in inputs]}, expected "
                       f"one of shape {list(shape)})")
    return session, inputs[0].name, [o.name for o in session.get_outputs()]


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
