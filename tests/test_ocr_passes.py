"""OCR passes (issue 15 part 4): merging lines by position, zoom windows and tiles, caller regions, and the real
rapidocr engine on a sign that the old settings missed and on small real text that needs the zoom pass."""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from avi.backends import ocr_passes
from avi.backends.ocr import OcrEngine, RapidOcrEngine
from avi.backends.types import OcrLine
from avi.video.decode import Frame, VideoReader, probe


def _line(text: str, score: float, box) -> OcrLine:
    return OcrLine(text, score, tuple(float(v) for v in box), 1.0)


def test_merge_keeps_higher_score_of_overlapping_lines_and_reading_order():
    lines = [_line("EXIT 42", 0.80, (100, 50, 200, 70)), _line("EXlT 42", 0.95, (102, 51, 201, 71)),
             _line("ROOM 7B", 0.90, (300, 52, 380, 70)), _line("TOP", 0.70, (10, 5, 40, 20))]
    merged = ocr_passes.merge_lines(lines)
    assert [ln.text for ln in merged] == ["TOP", "EXlT 42", "ROOM 7B"]  # higher score wins; rows, then x


def test_merge_prefers_whole_read_over_a_cut_one():
    whole, cut = _line("TAXI", 0.93, (0, 56, 238, 171)), _line("AXI", 0.99, (60, 58, 238, 170))
    assert ocr_passes.merge_lines([cut, whole]) == [whole]
    weak_whole = _line("TAXI", 0.70, (0, 56, 238, 171))  # more than 0.1 below: the score decides
    assert ocr_passes.merge_lines([cut, weak_whole]) == [cut]


def test_tiles_cover_the_window_within_the_side():
    window = (40, 10, 640, 480)
    tiles = ocr_passes.tile_grid(window, 384)
    assert all(t[2] - t[0] <= 384 and t[3] - t[1] <= 384 for t in tiles)
    assert min(t[0] for t in tiles) == 40 and max(t[2] for t in tiles) == 640
    assert min(t[1] for t in tiles) == 10 and max(t[3] for t in tiles) == 480
    assert ocr_passes.tile_grid((0, 0, 300, 200), 384) == [(0, 0, 300, 200)]
    with pytest.raises(ValueError):
        ocr_passes.tile_grid(window, 0)


def test_candidate_windows_join_neighbours_and_clip():
    wins = ocr_passes.candidate_windows([(100, 100, 110, 108), (130, 100, 140, 108), (600, 400, 640, 480)], 480, 640)
    assert len(wins) == 2  # the two close boxes share one window
    assert all(0 <= w[0] < w[2] <= 640 and 0 <= w[1] < w[3] <= 480 for w in wins)
    assert all(w[2] - w[0] >= 40 for w in wins)


def test_region_crops_whole_box_and_top_part():
    crops = ocr_passes.region_crops([(-20, 100, 500, 300), (5, 5, 7, 7)], 272, 640)
    assert crops == [(0, 100, 500, 272), (0, 100, 500, 186)]  # clipped; the tiny box is skipped
    with pytest.raises(ValueError):
        ocr_passes.region_crops([(1, 2, 3)], 272, 640)


def test_touches_inner_edge():
    tile = (256, 0, 640, 384)
    assert ocr_passes.touches_inner_edge((258, 100, 300, 120), tile, 480, 640)  # cut by the tile's left edge
    assert not ocr_passes.touches_inner_edge((300, 100, 639, 120), tile, 480, 640)  # the frame's edge is fine


@pytest.fixture(scope="module")
def ocr(session_backends) -> RapidOcrEngine:
    engine = getattr(session_backends.ocr, "engine", session_backends.ocr)  # the engine inside frame reuse
    if not isinstance(engine, RapidOcrEngine):
        pytest.skip("the cpu profile's rapidocr engine is not configured")
    return engine


def test_engine_keeps_the_protocol(ocr):
    assert isinstance(ocr, OcrEngine)


def test_sign_missed_by_old_defaults_is_read(ocr):
    """A 32 px sign alone in a 1280x720 frame: rapidocr's default detector settings (mean/std 0.5) found no
    text here (scripts/bench_ocr.py, plain 32px, 'before'); the engine reads it."""
    img = Image.new("RGB", (1280, 720), (0, 50, 70))
    ImageDraw.Draw(img).text((418, 100), "LXB", fill=(200, 215, 225), font=ImageFont.load_default(size=32))
    frame = Frame(3.0, np.asarray(img))
    from rapidocr import RapidOCR

    cfg = ocr._engine.cfg
    old = RapidOCR(params={"Global.log_level": "error", "Det.model_path": cfg.Det.model_path,
                           "Rec.model_path": cfg.Rec.model_path, "Cls.model_path": cfg.Cls.model_path})
    assert getattr(old(cv2.cvtColor(frame.image, cv2.COLOR_RGB2BGR)), "txts", None) is None
    lines = ocr.read(frame)
    assert [ln.text for ln in lines] == ["LXB"] and lines[0].t_s == 3.0
    x0, y0, x1, y1 = lines[0].box
    assert 405 <= x0 <= 430 and 90 <= y0 <= 115 and 470 <= x1 <= 500


def _box_video(tmp_path: Path) -> Path:
    """box.mp4 of the OpenCV samples (opencv-doc ships it gzipped), unpacked into ``tmp_path``."""
    gz = Path("/usr/share/doc/opencv-doc/opencv4/html/box.mp4.gz")
    if not gz.exists():
        msg = "box.mp4.gz of opencv-doc not installed (scripts/setup.sh installs opencv-doc)"
        if os.environ.get("AVI_REQUIRE_SAMPLES") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    out = tmp_path / "box.mp4"
    with gzip.open(gz) as f, open(out, "wb") as w:
        shutil.copyfileobj(f, w)
    return out


def test_small_real_text_needs_the_zoom_pass(ocr, tmp_path):
    """box.mp4 at 4 s (bench/ocr): CAMPRODON in ~7 px letters on a biscuit box; one pass finds nothing, the zoom
    tiles around the detector's weak candidates read it."""
    frame = VideoReader(probe(_box_video(tmp_path))).frames_at([4.0])[0]
    one_pass = RapidOcrEngine.__new__(RapidOcrEngine)
    one_pass.__dict__.update(ocr.__dict__, passes=False)
    assert "CAMPRODON" not in " ".join(ln.text for ln in one_pass.read(frame))
    lines = [ln for ln in ocr.read(frame) if ln.text == "CAMPRODON"]
    assert len(lines) == 1
    x0, y0, x1, y1 = lines[0].box
    assert 230 <= x0 <= 290 and 95 <= y0 <= 130 and 330 <= x1 <= 380 and 140 <= y1 <= 180


def test_regions_read_a_sign_inside_a_caller_box(ocr):
    """A 9 px sign on a 'car' in a 1280x720 frame, with the car as the caller's region: the region crops are
    read and merged with the full pass (one line, frame coordinates inside the region). The full and zoom passes
    already read this clean rendered sign; the region pass is for real signs they miss."""
    img = Image.new("RGB", (1280, 720), (90, 90, 90))
    draw = ImageDraw.Draw(img)
    draw.rectangle((600, 380, 720, 450), fill=(60, 60, 60))  # the car
    draw.rectangle((630, 384, 690, 398), fill=(225, 225, 215))  # the roof sign
    draw.text((640, 386), "TAXI", fill=(170, 40, 40), font=ImageFont.load_default(size=9))
    frame = Frame(0.0, np.asarray(img))
    lines = ocr.read(frame, regions=[(600, 380, 720, 450)])
    assert "TAXI" in [ln.text for ln in lines]
    line = next(ln for ln in lines if ln.text == "TAXI")
    assert 600 <= line.box[0] and line.box[2] <= 720 and 380 <= line.box[1] and line.box[3] <= 450
