"""OCR role (``text_extract`` and perception captions).

Backends:
    * :class:`RapidOcrEngine` (cpu profile): rapidocr 3.x with the PP-OCRv6
      det/rec ONNX models that ship inside its wheel; no download at run time.
    * :class:`avi.backends.paddle_ocr.PaddleOcrEngine` (gpu profile): PaddleOCR
      3.x with local model directories; same :class:`OcrEngine` protocol.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from functools import partial
from typing import Protocol, Sequence, runtime_checkable

import cv2
import numpy as np

from avi.backends.frame_reuse import retime_pass
from avi.backends.ocr_passes import candidate_windows, fit_scale, merge_lines, region_crops, tile_grid, touches_inner_edge
from avi.backends.ocr_script import charset_mask, check_script, restrict_preds
from avi.backends.types import OcrLine
from avi.video.decode import Frame


@runtime_checkable
class OcrEngine(Protocol):
    """Reads text lines from a frame."""

    name: str

    def read(self, frame: Frame, regions: Sequence[Sequence[float]] | None = None,
             script: str | None = None) -> list[OcrLine]:
        """Text lines in reading order (top to bottom, left to right).

        ``regions`` (optional) are pixel xyxy boxes where text is likely (e.g. vehicle boxes from the object
        detector); an engine may read them more closely or ignore them. Boxes of the returned lines are pixel
        xyxy in the frame either way. ``script`` (optional, :data:`avi.backends.ocr_script.LATIN`): return
        reads in that script only (:mod:`avi.backends.ocr_script`); None reads every script.
        """
        ...


def read_lines(ocr: OcrEngine, frame: Frame, regions: Sequence[Sequence[float]] = (),
               script: str | None = None) -> list[OcrLine]:
    """``ocr.read(frame)``, with ``regions`` (pixel xyxy boxes to read closely) and ``script`` passed only when
    given, so engines written before the arguments existed still serve."""
    kwargs: dict = {}
    if regions:
        kwargs["regions"] = regions
    if script:
        kwargs["script"] = script
    return ocr.read(frame, **kwargs)


#: the script of the :meth:`RapidOcrEngine.read` running in this thread (None: every script)
_READ_SCRIPT: ContextVar[str | None] = ContextVar("avi_ocr_read_script", default=None)


class ScriptDecode:
    """rapidocr's CTC decoder (``TextRecognizer.postprocess_op``) with the classes outside the running read's
    script zeroed before best-path decoding (:func:`avi.backends.ocr_script.restrict_preds`); a read without a
    script decodes as rapidocr does. Other attributes are the wrapped decoder's.

    Args:
        decode: rapidocr's ``CTCLabelDecode`` (its ``character`` list, index 0 the blank).
    """

    def __init__(self, decode):
        self.decode = decode
        self.masks: dict[str, np.ndarray] = {}

    def __getattr__(self, name):
        return getattr(self.__dict__["decode"], name)

    def __call__(self, preds, *args, **kwargs):
        script = _READ_SCRIPT.get()
        if script is not None:
            mask = self.masks.get(script)
            if mask is None:
                mask = self.masks[script] = charset_mask(self.decode.character, script)
            preds = restrict_preds(preds, mask)
        return self.decode(preds, *args, **kwargs)


# PP-OCR's detectors are trained with ImageNet normalisation (PaddleOCR's det configs: NormalizeImage mean
# 0.485/0.456/0.406, std 0.229/0.224/0.225); rapidocr 3.10 defaults to 0.5/0.5, which leaves the PP-OCRv6 small
# detector's probability map weak on isolated signs (scripts/bench_ocr.py: 24 px exact match 0.70 -> 0.96).
_DET_PARAMS = {
    "Det.mean": [0.485, 0.456, 0.406],
    "Det.std": [0.229, 0.224, 0.225],
    "Det.score_mode": "slow",  # box score = mean probability inside the polygon, not its bounding rectangle
    "Det.limit_type": "max",  # the engine resizes (read()); rapidocr only rounds sides to multiples of 32
    "Det.limit_side_len": 100_000,
    "Global.max_side_len": 100_000,
}


class RapidOcrEngine:
    """rapidocr (PP-OCRv6 small det/rec ONNX, bundled in the wheel), with zoomed and region passes.

    Every pass runs rapidocr's own steps: detection alone with a low box threshold (``candidate_thresh``),
    then recognition (after the text-direction classifier) of the boxes scoring at least ``box_thresh``.
    :meth:`read` runs up to three kinds of pass, then merges their lines by position
    (:func:`avi.backends.ocr_passes.merge_lines`):

    1. *full*: the whole frame resized so its long side is in ``[min_side, max_side]`` pixels (the PP-OCRv6
       small detector loses text on larger inputs).
    2. *zoom* (only where it can help): windows around the full pass's candidates that gave no line (a weak
       detection, or a box whose recognition scored below ``min_score``), cut into tiles of at most
       ``max_side / zoom`` pixels and upscaled ``zoom`` times; at most ``max_windows`` tiles. Frames without
       such candidates, or whose full pass was already upscaled about as much, cost nothing extra.
    3. *regions* (only when the caller gives them): each region's whole box and its top part, upscaled to at
       least ``min_side`` pixels; where detection finds nothing in a wide crop, recognition alone on the crop.

    A read with a ``script`` decodes every line in that script only (:class:`ScriptDecode`): a cut Latin sign
    whose best-path read is a CJK glyph is read as the best Latin characters instead, with the lower score
    those have (so a texture read usually falls below ``min_score``).

    Args:
        model_paths: ``{"det": path, "rec": path, "cls": path}`` of verified
            local ONNX files (from weights.lock); None uses the wheel's copies.
        min_score: lines recognised with a lower confidence (0..1) are dropped.
        passes: False runs the full pass only (no zoom windows; regions ignored).
        min_side, max_side: long-side bounds in pixels of every detector input.
        zoom: upscale factor of zoom tiles.
        box_thresh: detector box score (0..1) from which a box is recognised.
        candidate_thresh: detector box score (0..1) from which a box can call for a zoom window.
        max_windows: most zoom tiles per frame.
        window_reuse: an :class:`avi.backends.frame_reuse.WindowReuse` through which zoom tiles and region
            crops go: one whose pixels did not change since a recent frame is not read again. None reads every
            window of every frame.

    Raises:
        AviError: rapidocr is not installed.
    """

    name = "rapidocr-ppocrv6"

    def __init__(self, model_paths: dict[str, str] | None = None, min_score: float = 0.5, passes: bool = True,
                 min_side: int = 960, max_side: int = 1152, zoom: float = 3.0, box_thresh: float = 0.3,
                 candidate_thresh: float = 0.15, max_windows: int = 4, window_reuse=None):
        try:
            from rapidocr import RapidOCR
        except ImportError as exc:  # pragma: no cover - depends on the install
            from avi.errors import AviError

            raise AviError("rapidocr is not installed: pip install 'avi[cpu]'") from exc
        for name in ("RapidOCR", "rapidocr"):
            logging.getLogger(name).setLevel(logging.ERROR)
        params: dict = {"Global.log_level": "error", **_DET_PARAMS}
        for key, path in (model_paths or {}).items():
            params[f"{key.capitalize()}.model_path"] = str(path)
        self._engine = RapidOCR(params=params)
        self._use_cls = bool(self._engine.cfg.Global.use_cls)
        self.min_score = min_score
        self.passes = passes
        self.min_side, self.max_side, self.zoom = min_side, max_side, zoom
        self.box_thresh, self.candidate_thresh, self.max_windows = box_thresh, candidate_thresh, max_windows
        self.window_reuse = window_reuse

    def read(self, frame: Frame, regions: Sequence[Sequence[float]] | None = None,
             script: str | None = None) -> list[OcrLine]:
        """Text lines of an RGB uint8 frame (H, W, 3) in reading order.

        Args:
            frame: the frame.
            regions: optional pixel xyxy boxes to read closely (see the class docstring); ignored when
                ``passes`` is False.
            script: decode in this script only (:data:`avi.backends.ocr_script.LATIN`); None: every script.

        Returns:
            merged lines; boxes are pixel xyxy in the frame.

        Raises:
            ValueError: a region is not four numbers, or ``script`` is unknown.
        """
        if script:
            check_script(script)  # an unknown script raises here, not only where a line is decoded
            self._script_decoder()
        token = _READ_SCRIPT.set(script)
        try:
            return self._read(frame, regions, script)
        finally:
            _READ_SCRIPT.reset(token)

    def _read(self, frame: Frame, regions: Sequence[Sequence[float]] | None, script: str | None) -> list[OcrLine]:
        """:meth:`read` in the script already set for this thread."""
        bgr = np.ascontiguousarray(cv2.cvtColor(frame.image, cv2.COLOR_RGB2BGR))
        h, w = bgr.shape[:2]
        scale = fit_scale(h, w, self.min_side, self.max_side)
        lines, unread = self._pass(bgr, (0, 0, w, h), scale, frame.t_s)
        if self.passes:
            for window, zoom in self._zoom_windows(h, w, scale, unread):
                found, _ = self._reused(bgr, window, zoom, self._kind("zoom", script), frame.t_s,
                                        partial(self._pass, bgr, window, zoom, frame.t_s))
                lines += [ln for ln in found if self._plausible(ln)
                          and not touches_inner_edge(ln.box, window, h, w)]
            for crop in region_crops(regions or [], h, w):
                found, _ = self._reused(bgr, crop, 1.0, self._kind("region", script), frame.t_s,
                                        partial(self._region_pass, bgr, crop, frame.t_s))
                lines += [ln for ln in found if self._plausible(ln)]
        return merge_lines(lines)

    def _script_decoder(self) -> ScriptDecode:
        """The recogniser's decoder, wrapped in :class:`ScriptDecode` on first use (rapidocr 3.10 loads its
        recogniser, ``text_rec``, at the first recognition)."""
        recogniser = self._engine.text_rec
        if recogniser is None:
            self._engine(np.zeros((48, 96, 3), np.uint8), use_det=False, use_cls=False, use_rec=True)
            recogniser = self._engine.text_rec
        if not isinstance(recogniser.postprocess_op, ScriptDecode):
            recogniser.postprocess_op = ScriptDecode(recogniser.postprocess_op)
        return recogniser.postprocess_op

    @staticmethod
    def _kind(kind: str, script: str | None) -> str:
        """The window-reuse key of a pass: reads in different scripts are not the same reads."""
        return f"{kind}:{script}" if script else kind

    def _reused(self, bgr, window, scale: float, kind: str, t_s: float, compute):
        """``compute()`` (a pass's ``(lines, unread)``), or the same pass over this window of a recent frame
        where the window's pixels did not change (``window_reuse``)."""
        if self.window_reuse is None:
            return compute()
        return self.window_reuse.get(bgr, window, scale, kind, t_s, compute, retime_pass)

    def _plausible(self, line: OcrLine) -> bool:
        """Extra passes look closely at texture: a single-glyph read from them needs a score of 0.8."""
        return sum(ch.isalnum() for ch in line.text) >= 2 or line.score >= 0.8

    def _zoom_windows(self, h: int, w: int, scale: float,
                      unread: list[tuple[float, float, float, float]]) -> list[tuple[tuple[int, int, int, int], float]]:
        """Zoom tiles (frame pixel xyxy, upscale factor) over the windows around unread candidates, at most
        ``max_windows``, largest windows first; none where ``zoom`` is not well above the full pass's scale."""
        if self.zoom <= scale * 1.25:  # the full pass already looked this closely
            return []
        tiles = [t for win in candidate_windows(unread, h, w)
                 for t in tile_grid(win, self.max_side / self.zoom)]
        return [(t, self.zoom) for t in tiles[: self.max_windows]]

    def _region_pass(self, bgr: np.ndarray, crop: tuple[int, int, int, int], t_s: float):
        """:meth:`_read_region` as a pass: ``(lines, [])``."""
        return self._read_region(bgr, crop, t_s), []

    def _read_region(self, bgr: np.ndarray, crop: tuple[int, int, int, int], t_s: float) -> list[OcrLine]:
        """Detection + recognition on an upscaled region crop; recognition alone when detection finds nothing."""
        x0, y0, x1, y1 = crop
        scale = fit_scale(y1 - y0, x1 - x0, self.min_side, self.max_side)
        found, _ = self._pass(bgr, crop, scale, t_s)
        if found or (x1 - x0) < 1.5 * (y1 - y0):  # recognition alone reads one line: only wide crops
            return found
        result = self._engine(np.ascontiguousarray(bgr[y0:y1, x0:x1]), use_det=False, use_cls=False, use_rec=True)
        texts, scores = getattr(result, "txts", None) or (), getattr(result, "scores", None) or ()
        return [OcrLine(str(text).strip(), float(score), (float(x0), float(y0), float(x1), float(y1)), t_s)
                for text, score in zip(texts, scores) if str(text).strip() and float(score) >= self.min_score]

    def _pass(self, bgr: np.ndarray, window: tuple[int, int, int, int], scale: float,
              t_s: float) -> tuple[list[OcrLine], list[tuple[float, float, float, float]]]:
        """One pass over ``bgr[window]`` resized by ``scale``.

        Returns:
            (lines read, boxes of candidates that gave no line), all in frame pixel xyxy.
        """
        x0, y0, x1, y1 = window
        img = bgr[y0:y1, x0:x1]
        if scale != 1.0:
            interp = cv2.INTER_CUBIC if scale > 1 else cv2.INTER_AREA
            img = cv2.resize(img, (max(1, round((x1 - x0) * scale)), max(1, round((y1 - y0) * scale))),
                             interpolation=interp)
        img = np.ascontiguousarray(img)
        det = self._engine(img, use_det=True, use_cls=False, use_rec=False, box_thresh=self.candidate_thresh)
        if getattr(det, "boxes", None) is None or len(det.boxes) == 0:
            return [], []

        def frame_box(quad) -> tuple[float, float, float, float]:
            q = np.asarray(quad, dtype=float).reshape(-1, 2) / scale
            return (float(q[:, 0].min()) + x0, float(q[:, 1].min()) + y0,
                    float(q[:, 0].max()) + x0, float(q[:, 1].max()) + y0)

        strong = [i for i, s in enumerate(det.scores) if float(s) >= self.box_thresh]
        unread = [frame_box(det.boxes[i]) for i in range(len(det.boxes)) if i not in strong]
        if not strong:
            return [], unread
        crops = self._engine.crop_text_regions(img, det.boxes[strong])
        if self._use_cls:
            crops, _ = self._engine.cls_and_rotate(crops)
        rec = self._engine.recognize_txt(crops)
        lines = []
        for i, text, score in zip(strong, rec.txts, rec.scores):
            text = str(text).strip()
            if text and float(score) >= self.min_score:
                lines.append(OcrLine(text, float(score), frame_box(det.boxes[i]), t_s))
            else:
                unread.append(frame_box(det.boxes[i]))
        return lines, unread
