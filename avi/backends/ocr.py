"""OCR role (``text_extract`` and perception captions).

Backends:
    * :class:`RapidOcrEngine` (cpu profile): rapidocr 3.x with the PP-OCRv6
      det/rec ONNX models that ship inside its wheel; no download at run time.
    * :class:`avi.backends.paddle_ocr.PaddleOcrEngine` (gpu profile): PaddleOCR
      3.x with local model directories; same :class:`OcrEngine` protocol.
"""

from __future__ import annotations

import logging
from typing import Protocol, runtime_checkable

import cv2
import numpy as np

from avi.backends.types import OcrLine
from avi.video.decode import Frame


@runtime_checkable
class OcrEngine(Protocol):
    """Reads text lines from a frame."""

    name: str

    def read(self, frame: Frame) -> list[OcrLine]:
        """Text lines in reading order (top to bottom, left to right)."""
        ...


class RapidOcrEngine:
    """rapidocr (PP-OCRv6 small det/rec ONNX, bundled in the wheel).

    Args:
        model_paths: ``{"det": path, "rec": path, "cls": path}`` of verified
            local ONNX files (from weights.lock); None uses the wheel's copies.
        min_score: lines recognised with a lower confidence are dropped.
    """

    name = "rapidocr-ppocrv6"

    def __init__(self, model_paths: dict[str, str] | None = None, min_score: float = 0.5):
        try:
            from rapidocr import RapidOCR
        except ImportError as exc:  # pragma: no cover - depends on the install
            from avi.errors import AviError

            raise AviError("rapidocr is not installed: pip install 'avi[cpu]'") from exc
        for name in ("RapidOCR", "rapidocr"):
            logging.getLogger(name).setLevel(logging.ERROR)
        params = {"Global.log_level": "error"}
        for key, path in (model_paths or {}).items():
            params[f"{key.capitalize()}.model_path"] = str(path)
        self._engine = RapidOCR(params=params)
        self.min_score = min_score

    def read(self, frame: Frame) -> list[OcrLine]:
        bgr = cv2.cvtColor(frame.image, cv2.COLOR_RGB2BGR)
        result = self._engine(bgr)
        if result is None or result.boxes is None or result.txts is None:
            return []
        lines = []
        for quad, text, score in zip(result.boxes, result.txts, result.scores):
            text = str(text).strip()
            if not text or float(score) < self.min_score:
                continue
            q = np.asarray(quad, dtype=float).reshape(-1, 2)
            box = (float(q[:, 0].min()), float(q[:, 1].min()), float(q[:, 0].max()), float(q[:, 1].max()))
            lines.append(OcrLine(text, float(score), box, frame.t_s))
        lines.sort(key=lambda ln: (round(ln.box[1] / 20), ln.box[0]))
        return lines
