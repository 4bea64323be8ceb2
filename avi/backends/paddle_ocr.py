"""PaddleOCR backend of the OCR role (gpu profile; AVI §3.3.2 ``text_extract``).

PP-OCR (Du et al. 2020, "PP-OCR: A Practical Ultra Lightweight OCR System";
PP-OCRv5 in PaddleOCR 3.x) through the ``paddleocr`` 3.x package, with the
text-detection, text-recognition and (optional) text-line orientation models
read from local inference directories: nothing is downloaded. Each directory
is a PaddleX inference export (``inference.yml`` plus ``inference.json`` or
``inference.pdmodel``, and ``inference.pdiparams``), e.g. the official
``PP-OCRv5_server_det`` / ``PP-OCRv5_server_rec`` /
``PP-LCNet_x1_0_textline_ori`` releases; the model name PaddleOCR requires is
read from each ``inference.yml`` (``Global.model_name``). PaddleOCR 2.x
directories (no ``inference.yml``) are not supported.

``paddleocr`` and ``paddlepaddle`` are not part of avi's install: they weigh
about 1.4 GB installed (paddlepaddle-3.3.1 CPU wheel 195 MB, 721 MB unpacked,
plus paddlex, modelscope, pandas, opencv-contrib); install them on the machine
that runs this profile (``pip install paddleocr paddlepaddle`` or
``paddlepaddle-gpu``).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Iterable, Sequence

import cv2
import numpy as np

from avi.backends.ocr_script import in_script
from avi.backends.types import OcrLine
from avi.errors import AviError
from avi.video.decode import Frame


def _model_name(model_dir: Path) -> str:
    """``Global.model_name`` of a PaddleX inference directory's ``inference.yml``."""
    import yaml

    try:
        cfg = yaml.safe_load((model_dir / "inference.yml").read_text(encoding="utf-8")) or {}
        name = cfg["Global"]["model_name"]
    except (OSError, KeyError, TypeError, yaml.YAMLError) as exc:
        raise AviError(f"cannot read Global.model_name from {model_dir / 'inference.yml'}") from exc
    return str(name)


def lines_from_result(result: Any, t_s: float, min_score: float = 0.5) -> list[OcrLine]:
    """OCR lines from one PaddleOCR 3.x result (a mapping with ``rec_texts``, ``rec_scores``, ``rec_polys``).

    Args:
        result: one item of ``PaddleOCR.predict(...)`` (an ``OCRResult``, dict-like).
        t_s: time of the frame in seconds.
        min_score: lines recognised with a lower confidence are dropped.

    Returns:
        lines in reading order (rows of ~20 px top to bottom, then left to right);
        each box is the pixel xyxy hull of the detected quadrilateral.
    """
    texts = result.get("rec_texts") or []
    scores = result.get("rec_scores")
    polys = result.get("rec_polys")
    if polys is None or len(polys) != len(texts):
        polys = result.get("rec_boxes")  # (N, 4) xyxy
    lines = []
    for i, text in enumerate(texts):
        text = str(text).strip()
        score = float(scores[i]) if scores is not None else 0.0
        if not text or score < min_score or polys is None:
            continue
        q = np.asarray(polys[i], dtype=float).reshape(-1, 2)
        box = (float(q[:, 0].min()), float(q[:, 1].min()), float(q[:, 0].max()), float(q[:, 1].max()))
        lines.append(OcrLine(text, score, box, t_s))
    lines.sort(key=lambda ln: (round(ln.box[1] / 20), ln.box[0]))
    return lines


class PaddleOcrEngine:
    """PaddleOCR 3.x (PP-OCR det + rec, optional text-line orientation) from local model directories.

    Same interface as :class:`~avi.backends.ocr.RapidOcrEngine`: :meth:`read`
    returns the text lines of a frame. Document orientation and unwarping (whole
    page models) are off: frames are not scanned pages.

    Args:
        det_dir: text-detection inference directory (e.g. PP-OCRv5_server_det).
        rec_dir: text-recognition inference directory (e.g. PP-OCRv5_server_rec).
        cls_dir: optional text-line orientation directory (e.g.
            PP-LCNet_x1_0_textline_ori); None turns orientation correction off.
        min_score: lines recognised with a lower confidence (in [0, 1]) are dropped.
        device: PaddlePaddle device string (``"gpu:0"``, ``"cpu"``); None = Paddle's default.

    Raises:
        AviError: a directory is missing or has no ``inference.yml``; paddleocr
            is not installed; PaddleOCR rejects the models.
    """

    name = "paddleocr"

    def __init__(self, det_dir: str | Path | None, rec_dir: str | Path | None, cls_dir: str | Path | None = None,
                 min_score: float = 0.5, device: str | None = None):
        if det_dir is None or rec_dir is None:
            raise AviError("PaddleOCR needs both a text-detection and a text-recognition model directory "
                           "(AVI_OCR_PADDLE_DET_DIR, AVI_OCR_PADDLE_REC_DIR)")
        dirs = {"det": Path(det_dir), "rec": Path(rec_dir)}
        if cls_dir is not None:
            dirs["cls"] = Path(cls_dir)
        for role, d in dirs.items():
            if not d.is_dir():
                raise AviError(f"PaddleOCR {role} model directory not found: {d}")
        for d in dirs.values():
            if not (d / "inference.yml").is_file():
                raise AviError(f"{d} is not a PaddleOCR 3.x inference directory (no inference.yml)")
        # PaddleX probes model hosters over the network at start-up unless told not to (air-gapped sites).
        os.environ.setdefault("PADDLE_PDX_DISABLE_MODEL_SOURCE_CHECK", "True")
        try:
            from paddleocr import PaddleOCR
        except ImportError as exc:
            raise AviError("PaddleOCR is not installed: pip install paddleocr paddlepaddle "
                           "(or paddlepaddle-gpu)") from exc
        logging.getLogger("paddlex").setLevel(logging.WARNING)  # no per-model "Creating model" lines
        kwargs: dict[str, Any] = dict(
            text_detection_model_name=_model_name(dirs["det"]), text_detection_model_dir=str(dirs["det"]),
            text_recognition_model_name=_model_name(dirs["rec"]), text_recognition_model_dir=str(dirs["rec"]),
            use_doc_orientation_classify=False, use_doc_unwarping=False, use_textline_orientation="cls" in dirs)
        if "cls" in dirs:
            kwargs.update(textline_orientation_model_name=_model_name(dirs["cls"]),
                          textline_orientation_model_dir=str(dirs["cls"]))
        if device:
            kwargs["device"] = device
        try:
            self._engine = PaddleOCR(**kwargs)
        except (ValueError, FileNotFoundError, RuntimeError) as exc:
            raise AviError(f"PaddleOCR cannot load the models: {str(exc).splitlines()[0]}") from exc
        self.min_score = float(min_score)
        self.model_names = {"det": kwargs["text_detection_model_name"], "rec": kwargs["text_recognition_model_name"]}
        if "cls" in dirs:
            self.model_names["cls"] = kwargs["textline_orientation_model_name"]
        self.name = f"paddleocr:{self.model_names['det']}+{self.model_names['rec']}"

    def read(self, frame: Frame, regions: Sequence[Sequence[float]] | None = None,
             script: str | None = None) -> list[OcrLine]:
        """Text lines of an RGB uint8 frame (H, W, 3) in reading order; boxes pixel xyxy in the frame.

        ``regions`` (the :class:`~avi.backends.ocr.OcrEngine` protocol's optional boxes to read closely) is
        accepted and ignored: the server detector reads the whole frame. ``script``
        (:data:`avi.backends.ocr_script.LATIN`): PaddleOCR's pipeline gives no hook into its CTC decoder, so
        lines with a character outside the script are dropped instead of decoded again (the cpu engine decodes
        them in the script).
        """
        bgr = np.ascontiguousarray(cv2.cvtColor(frame.image, cv2.COLOR_RGB2BGR))
        results: Iterable[Any] = self._engine.predict(bgr)
        lines: list[OcrLine] = []
        for result in results:
            lines += lines_from_result(result, frame.t_s, self.min_score)
        if script:
            lines = [ln for ln in lines if in_script(ln.text, script)]
        lines.sort(key=lambda ln: (round(ln.box[1] / 20), ln.box[0]))
        return lines
