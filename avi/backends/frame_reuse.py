"""Reuse a model's result for a frame that has not changed since the frame it last ran on (issue 17).

Slides, title cards, static shots and paused screens repeat the same picture for seconds to minutes; OCR
(0.3-1 s a frame on 2 cores) and the detector then read the same pixels again and again. A wrapper here keeps
the last frame a model ran on, and when the next frame is *unchanged* (:func:`frames_unchanged`) returns the
last result re-timed to the new frame instead of running the model. Everything else (names, vocabularies,
batch calls) passes through to the wrapped backend.

Unchanged means: on grey copies at most 640 pixels on the long side, no more than ``max_changed`` pixels differ
by more than ``pixel_threshold`` grey levels. Coding noise and the +-1 grain of rendered graphics stay far below
the threshold; a digit of a 20-pixel score changing alters about a hundred pixels, above it.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Callable, Sequence

import cv2
import numpy as np

from avi.video.decode import Frame

_SIDE = 640  # long side, pixels, of the grey copies compared


def grey_thumb(image: np.ndarray) -> np.ndarray:
    """A grey uint8 copy of an RGB frame with its long side at most 640 pixels."""
    h, w = image.shape[:2]
    scale = min(1.0, _SIDE / max(h, w))
    grey = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    if scale < 1.0:
        grey = cv2.resize(grey, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=cv2.INTER_AREA)
    return grey


def frames_unchanged(a: np.ndarray, b: np.ndarray, *, pixel_threshold: int = 24,
                     max_changed: int | None = None) -> bool:
    """Whether two grey thumbnails (:func:`grey_thumb`) show the same picture.

    Args:
        a, b: grey uint8 images.
        pixel_threshold: a pixel differs when its grey levels differ by more than this.
        max_changed: how many pixels may differ (default: 16, or 1 in 10,000 of the pixels if more).

    Returns:
        False for images of different sizes.
    """
    if a.shape != b.shape:
        return False
    limit = max(16, a.size // 10_000) if max_changed is None else max_changed
    return int(np.count_nonzero(cv2.absdiff(a, b) > pixel_threshold)) <= limit


class _LastFrame:
    """The last frame a model ran on, per call key, and its result (thread-safe)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._last: dict[object, tuple[np.ndarray, object]] = {}
        self.reused = 0
        self.computed = 0

    def get(self, frame: Frame, key, compute: Callable[[], object], retime: Callable[[object, float], object]):
        thumb = grey_thumb(frame.image)
        with self._lock:
            hit = self._last.get(key)
        if hit is not None and frames_unchanged(hit[0], thumb):
            with self._lock:
                self.reused += 1
            return retime(hit[1], frame.t_s)
        result = compute()
        with self._lock:
            self._last[key] = (thumb, result)
            self.computed += 1
        return result


def _retime_lines(lines, t_s: float):
    return [replace(line, t_s=t_s) for line in lines]


def _retime_dets(dets, t_s: float):
    return [replace(d, t_s=t_s) for d in dets]


class ReusingOcr:
    """An :class:`~avi.backends.ocr.OcrEngine` that reads an unchanged frame only once (module docstring).

    Args:
        engine: the OCR engine to wrap.
    """

    def __init__(self, engine):
        self.engine = engine
        self.name = engine.name
        self.memo = _LastFrame()

    def __getattr__(self, name):
        return getattr(self.engine, name)

    def read(self, frame: Frame, regions: Sequence[Sequence[float]] | None = None):
        key = tuple(tuple(round(v) for v in r) for r in regions) if regions else ()

        def compute():
            return self.engine.read(frame, regions=regions) if regions else self.engine.read(frame)

        return self.memo.get(frame, ("read", key), compute, _retime_lines)


class ReusingDetector:
    """A :class:`~avi.backends.detector.Detector` that runs on an unchanged frame only once per label set
    (module docstring); ``detect_all`` is reused the same way when the wrapped detector has it.

    Args:
        detector: the detector to wrap.
    """

    def __init__(self, detector):
        from avi.backends.types import DetectionResult

        self.detector = detector
        self.name = detector.name
        self.vocabulary = detector.vocabulary
        self.memo = _LastFrame()
        self._result = DetectionResult
        if hasattr(detector, "detect_all"):
            self.detect_all = self._detect_all

    def __getattr__(self, name):
        return getattr(self.detector, name)

    def supports(self, label: str) -> bool:
        return self.detector.supports(label)

    def detect(self, frame: Frame, labels: Sequence[str]):
        def retime(res, t_s):
            return self._result(t_s, _retime_dets(res.detections, t_s), list(res.unsupported))

        return self.memo.get(frame, ("detect", tuple(labels)), lambda: self.detector.detect(frame, labels), retime)

    def _detect_all(self, frame: Frame):
        return self.memo.get(frame, ("detect_all",), lambda: self.detector.detect_all(frame), _retime_dets)
