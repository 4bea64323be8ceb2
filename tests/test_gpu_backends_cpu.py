"""The gpu-profile detector and OCR backends' pure parts and errors, runnable in the cpu ``.venv``.

Grounding DINO's prompt, phrase-to-label mapping, token spans, clipping and NMS
(no model needed); the backends' argument errors; the settings that choose them.
The model paths themselves are tested in test_grounding_dino.py (.venv-gpu) and,
where paddleocr + paddlepaddle are installed, by test_paddle_ocr_runs_local_dirs below.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from pydantic import ValidationError

from avi.backends import Backends
from avi.backends.grounding_dino import (
    GroundingDinoDetector,
    GroundingDinoOriginalDetector,
    _finish,
    build_prompt,
    label_token_spans,
    load_grounding_dino,
    match_label,
    normalize_label,
)
from avi.backends.paddle_ocr import PaddleOcrEngine, lines_from_result
from avi.backends.types import OcrLine
from avi.config import Settings
from avi.errors import AviError
from avi.video.decode import Frame

HAS_PADDLE = importlib.util.find_spec("paddleocr") is not None and importlib.util.find_spec("paddle") is not None


# --- Grounding DINO: prompt and phrase -> label


def test_prompt_format():
    assert normalize_label("  Traffic   Light. ") == "traffic light"
    prompt, canonical, requested = build_prompt(["Person", "red car", "person", " ", "St. Bernard dog"])
    assert prompt == "person . red car . st bernard dog ."
    assert canonical == ["person", "red car", "st bernard dog"]
    assert requested == ["Person", "red car", "St. Bernard dog"]  # the first spelling of each, stripped
    assert build_prompt([]) == ("", [], [])


@pytest.mark.parametrize("phrase, expected", [
    ("car", "car"),
    ("red car", "red car"),              # exact beats the partial overlap with "car"
    ("red", "red car"),                  # a fragment of one label
    ("red car. [SEP]", "red car"),       # transformers' decoded posmap keeps separators and [SEP]
    ("[CLS] person [SEP]", "person"),
    (". [SEP]", None),                   # separators only
    ("giraffe", None),                   # names no requested label
    ("", None),
])
def test_match_label(phrase, expected):
    labels = ["person", "car", "red car"]
    idx = match_label(phrase, labels)
    assert (labels[idx] if idx is not None else None) == expected


def test_match_label_ties_use_token_scores():
    labels = ["person", "red car"]
    assert match_label("person. red car.", labels) == 0  # no scores: the earlier label
    assert match_label("person. red car.", labels, [0.2, 0.9]) == 1
    assert match_label("person. red car.", labels, [0.9, 0.2]) == 0
    assert match_label("red", ["red car", "red light"], [0.3, 0.6]) == 1


def test_label_token_spans():
    # [CLS] person . red car . [SEP]
    ids = [101, 7, 1012, 8, 9, 1012, 102]
    assert label_token_spans(ids, {1012, 102}, 2) == [[1], [3, 4]]
    assert label_token_spans([101, 7, 1012, 8, 102], {1012, 102}, 3) == [[1], [3], []]  # truncated prompt


def test_finish_maps_clips_and_suppresses():
    frame = Frame(2.0, np.zeros((90, 200, 3), np.uint8))
    canonical, requested = ["person", "red car"], ["Person", "Red car"]
    boxes = np.array([[-10, -5, 50, 40],      # person, clipped to (0, 0, 50, 40)
                      [0, 0, 48, 41],        # person, IoU > 0.5 with the first: suppressed (lower score)
                      [150, 50, 260, 120],   # red car, clipped to (150, 50, 200, 90)
                      [210, 95, 300, 130],   # red car, entirely outside the frame: dropped
                      [10, 10, 20, 20]],     # names nothing requested: dropped
                     dtype=float)
    scores = np.array([0.9, 0.8, 0.7, 0.95, 0.99])
    phrases = ["person", "person", "red car", "car", "giraffe"]
    dets = _finish(frame, boxes, scores, phrases, np.zeros((5, 2)), canonical, requested, 0.5)
    assert [(d.label, d.box, d.score) for d in dets] == [("Person", (0.0, 0.0, 50.0, 40.0), 0.9),
                                                         ("Red car", (150.0, 50.0, 200.0, 90.0), 0.7)]
    assert all(d.t_s == 2.0 and d.frame_size == (200, 90) for d in dets)
    kept_all = _finish(frame, boxes, scores, phrases, np.zeros((5, 2)), canonical, requested, 1.0)
    assert len(kept_all) == 3  # IoU threshold 1.0 suppresses nothing


def test_grounding_dino_dir_errors(tmp_path):
    with pytest.raises(AviError, match="not found"):
        load_grounding_dino(tmp_path / "missing")
    with pytest.raises(AviError, match="holds no Grounding-DINO"):
        load_grounding_dino(tmp_path)
    with pytest.raises(AviError, match="config.json"):
        GroundingDinoDetector(tmp_path)
    (tmp_path / "groundingdino_swint_ogc.pth").write_bytes(b"")
    with pytest.raises(AviError, match="bert-base-uncased"):
        load_grounding_dino(tmp_path)  # original layout: the config .py and local BERT are missing
    with pytest.raises(AviError, match="box_threshold"):
        GroundingDinoOriginalDetector(tmp_path, box_threshold=-0.1)


# --- PaddleOCR


def test_paddle_ocr_argument_errors(tmp_path):
    with pytest.raises(AviError, match="both"):
        PaddleOcrEngine(tmp_path, None)
    with pytest.raises(AviError, match="det model directory not found"):
        PaddleOcrEngine(tmp_path / "det", tmp_path)
    (tmp_path / "det").mkdir()
    (tmp_path / "rec").mkdir()
    with pytest.raises(AviError, match="no inference.yml"):
        PaddleOcrEngine(tmp_path / "det", tmp_path / "rec")
    with pytest.raises(AviError, match="cls model directory not found"):
        PaddleOcrEngine(tmp_path / "det", tmp_path / "rec", tmp_path / "cls")


@pytest.mark.skipif(HAS_PADDLE, reason="paddleocr is installed")
def test_paddle_ocr_missing_package_is_a_clear_error(tmp_path):
    for role in ("det", "rec"):
        (tmp_path / role).mkdir()
        (tmp_path / role / "inference.yml").write_text(f"Global:\n  model_name: PP-OCRv5_server_{role}\n")
    with pytest.raises(AviError, match="PaddleOCR is not installed"):
        PaddleOcrEngine(tmp_path / "det", tmp_path / "rec")


def test_lines_from_paddle_result():
    result = {"rec_texts": ["EXIT 42", "  ", "low", "Platform 3"],
              "rec_scores": [0.98, 0.99, 0.2, 0.91],
              "rec_polys": [np.array([[300, 16], [380, 14], [381, 34], [301, 36]]),
                            np.zeros((4, 2)), np.zeros((4, 2)),
                            np.array([[20, 12], [120, 12], [120, 32], [20, 32]])]}
    lines = lines_from_result(result, 4.5, min_score=0.5)
    assert lines == [OcrLine("Platform 3", 0.91, (20.0, 12.0, 120.0, 32.0), 4.5),  # one row, left to right
                     OcrLine("EXIT 42", 0.98, (300.0, 14.0, 381.0, 36.0), 4.5)]
    assert lines_from_result({"rec_texts": [], "rec_scores": [], "rec_polys": []}, 0.0) == []


def test_paddle_ocr_drops_lines_outside_the_questions_script():
    """PaddleOCR's pipeline gives no hook into its decoder: with ``script`` the lines with a character outside it
    are dropped. The pipeline is a fake here (paddleocr is not part of avi's install)."""

    class FakePipeline:  # stands in for paddleocr.PaddleOCR: one result with fixed lines
        def predict(self, bgr):
            box = np.array([[10, 10], [60, 10], [60, 30], [10, 30]])
            return [{"rec_texts": ["TAXI", "日"], "rec_scores": [0.9, 0.92], "rec_polys": [box, box + 40]}]

    engine = PaddleOcrEngine.__new__(PaddleOcrEngine)
    engine._engine, engine.min_score = FakePipeline(), 0.5
    frame = Frame(2.0, np.zeros((120, 160, 3), np.uint8))
    assert [ln.text for ln in engine.read(frame)] == ["TAXI", "日"]
    assert [ln.text for ln in engine.read(frame, script="latin")] == ["TAXI"]
    with pytest.raises(ValueError, match="unknown OCR script"):
        engine.read(frame, script="klingon")


@pytest.mark.skipif(not HAS_PADDLE, reason="paddleocr + paddlepaddle are not installed (not part of avi's install)")
def test_paddle_ocr_runs_local_dirs(tmp_path):
    from tiny_models import build_tiny_paddleocr_dirs

    det_dir, rec_dir = build_tiny_paddleocr_dirs(tmp_path)
    engine = PaddleOcrEngine(det_dir, rec_dir, min_score=0.0, device="cpu")
    assert engine.name == "paddleocr:PP-OCRv5_mobile_det+PP-OCRv5_mobile_rec"
    image = np.zeros((180, 320, 3), np.uint8)
    image[60:100, 40:220] = 255
    image[130:160, 200:300] = 255
    lines = engine.read(Frame(1.5, image))
    assert len(lines) == 2 and all(isinstance(ln, OcrLine) and ln.t_s == 1.5 for ln in lines)
    first, second = (ln.box for ln in lines)  # reading order: the upper block first
    assert first[0] < 40 + 10 and first[2] > 220 - 10 and first[1] < 60 and 100 < first[3] < 140
    assert second[0] < 200 and second[2] <= 320 and second[1] < 130 and second[3] <= 180


# --- settings and role selection


def test_settings_and_roles(tmp_path, monkeypatch):
    s = Settings()
    assert (s.detector_model_dir, s.detector_box_threshold, s.detector_text_threshold) == (None, 0.35, 0.25)
    assert (s.ocr_paddle_det_dir, s.ocr_paddle_rec_dir, s.ocr_paddle_cls_dir) == (None, None, None)
    monkeypatch.setenv("AVI_DETECTOR_BOX_THRESHOLD", "0.5")
    monkeypatch.setenv("AVI_DETECTOR_MODEL_DIR", str(tmp_path / "gdino"))
    s = Settings()
    assert s.detector_box_threshold == 0.5 and s.detector_model_dir == tmp_path / "gdino"
    with pytest.raises(AviError, match="not found"):
        Backends(s).detector  # noqa: B018 - the role is built on access
    with pytest.raises(ValidationError):
        Settings(detector_text_threshold=1.5)
    with pytest.raises(AviError, match="both"):
        Backends(Settings(ocr_paddle_det_dir=tmp_path)).ocr  # noqa: B018
