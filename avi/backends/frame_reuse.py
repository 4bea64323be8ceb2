"""Reuse a model's result for a frame that has not changed since the frame it last ran on (issue 17).

Slides, title cards, static shots and paused screens repeat the same picture for seconds to minutes; OCR
(0.3-1 s a frame on 2 cores) and the detector then read the same pixels again and again. A wrapper here keeps
the last frame a model ran on, and when the next frame is *unchanged* (:func:`frames_unchanged`) returns the
last result re-timed to the new frame instead of running the model. Everything else (names, vocabularies,
batch calls) passes through to the wrapped backend.

Unchanged means: on grey copies at most 640 pixels on the long side, no more than ``max_changed`` pixels differ
by more than ``pixel_threshold`` grey levels. Coding noise and the +-1 grain of rendered graphics stay far below
the threshold; a digit of a 20-pixel score changing alters about a hundred pixels, above it.

A frame with people walking through it changes as a whole, yet the parked car, the shop sign and the lamp post
in it do not: :class:`WindowReuse` applies the same test to one *window* of a frame (OCR's zoom tiles and region
crops, :class:`avi.backends.ocr.RapidOcrEngine`), so the same window whose pixels are unchanged since the frame it was last
read in is not read again (issue 38: those passes were 45 % of a text_extract call on a street scene).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import replace
from typing import Callable, Sequence

import cv2
import numpy as np

from avi.video.decode import Frame

_SIDE = 640  # long side, pixels, of the grey copies compared


def grey_thumb(image: np.ndarray, code: int = cv2.COLOR_RGB2GRAY) -> np.ndarray:
    """A grey uint8 copy of a colour frame (RGB; ``code`` another cv2 conversion to grey) with its long side at most
    640 pixels."""
    h, w = image.shape[:2]
    scale = min(1.0, _SIDE / max(h, w))
    grey = cv2.cvtColor(image, code)
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


def grey_window(bgr: np.ndarray, window: Sequence[int]) -> np.ndarray:
    """A grey uint8 copy of ``bgr[y0:y1, x0:x1]`` (window: pixel xyxy ints) with its long side at most 640 pixels."""
    x0, y0, x1, y1 = window
    return grey_thumb(np.ascontiguousarray(bgr[y0:y1, x0:x1]), cv2.COLOR_BGR2GRAY)


class WindowReuse:
    """The result of the last pass over each window (same pixel box, kind and scale), reused while the window's
    pixels have not changed.

    Only the very same window is reused: a window a few pixels wider reads a letter more at its edge (a nearby
    window's result lost the first letter of a word on a moving box, ``box.mp4``). The newest ``size`` windows
    are kept (thread-safe); each holds a grey copy of at most 640x640 pixels, so at most about 50 MB at the default
    (a text_extract call's 16 frames read about 100 windows, most of them the same few).

    Args:
        size: how many windows to remember.

    Attributes:
        reused, computed: counts of passes reused and run.
    """

    def __init__(self, size: int = 128):
        self._lock = threading.Lock()
        self._last: OrderedDict = OrderedDict()
        self.size = size
        self.reused = 0
        self.computed = 0

    def get(self, bgr: np.ndarray, window: Sequence[int], scale: float, kind: str, t_s: float,
            compute: Callable[[], object], retime: Callable[[object, float], object]):
        """The pass ``compute()`` over ``window`` (pixel xyxy ints of ``bgr``, a BGR uint8 frame) at ``scale``,
        or the last one over the same window where its pixels are unchanged (:func:`frames_unchanged` on
        :func:`grey_window` copies), re-timed to ``t_s`` seconds by ``retime(result, t_s)``."""
        key = (kind, tuple(int(v) for v in window), round(float(scale), 4))
        grey = grey_window(bgr, key[1])
        with self._lock:
            hit = self._last.get(key)
        if hit is not None and frames_unchanged(hit[0], grey):
            with self._lock:
                self.reused += 1
            return retime(hit[1], t_s)
        result = compute()
        with self._lock:
            self._last[key] = (grey, result)
            self._last.move_to_end(key)
            while len(self._last) > self.size:
                self._last.popitem(last=False)
            self.computed += 1
        return result


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


def retime_pass(result, t_s: float):
    """An OCR pass's ``(lines, unread boxes)`` with its lines moved to ``t_s`` seconds."""
    lines, unread = result
    return _retime_lines(lines, t_s), list(unread)


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

    def read(self, frame: Frame, regions: Sequence[Sequence[float]] | None = None, script: str | None = None):
        key = tuple(tuple(round(v) for v in r) for r in regions) if regions else ()
        kwargs = {name: value for name, value in (("regions", regions), ("script", script)) if value}
        return self.memo.get(frame, ("read", key, script), lambda: self.engine.read(frame, **kwargs), _retime_lines)


class ReusingDetector:
    """A :class:`~avi.backends.detector.Detector` that runs on an unchanged frame only once per label set
    (module docstring); ``detect_all`` is reused the same way when the wrapped detector has it (else None).
    ``class_list`` and ``detect_batch`` are the wrapped detector's (a batch is not reused).

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
        self.class_list = detector.class_list
        self.detect_all = self._detect_all if detector.detect_all is not None else None
        self.detect_batch = detector.detect_batch

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
