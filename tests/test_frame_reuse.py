"""Reuse of OCR and detector results on unchanged frames (avi/backends/frame_reuse.py, issue 17)."""

from __future__ import annotations

import numpy as np

from avi.backends.frame_reuse import ReusingDetector, ReusingOcr, WindowReuse, frames_unchanged, grey_thumb, retime_pass
from avi.backends.types import Detection, DetectionResult, OcrLine
from avi.video.decode import Frame


def _slide(text_pixels: int = 0, noise: int = 1, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    img = np.full((360, 640, 3), 40, np.int16) + rng.integers(-noise, noise + 1, (360, 640, 3), dtype=np.int16)
    img[100:160, 100:400] = 230  # a title
    if text_pixels:
        img[300:310, 500:500 + text_pixels // 10] = 230  # small print appears
    return img.clip(0, 255).astype(np.uint8)


def test_unchanged_means_the_same_picture_up_to_grain():
    a, b = grey_thumb(_slide(seed=1)), grey_thumb(_slide(seed=2))
    assert frames_unchanged(a, b)  # +-1 grain of rendered graphics
    assert not frames_unchanged(a, grey_thumb(_slide(text_pixels=200)))  # a 20 x 10 px digit appears
    assert not frames_unchanged(a, grey_thumb(_slide()[:300]))  # another size
    big = np.asarray(np.kron(_slide(seed=3), np.ones((3, 3, 1))), np.uint8)  # 1920 x 1080: compared at 640
    assert grey_thumb(big).shape == (360, 640)


class _CountingOcr:
    name = "counting-ocr"

    def __init__(self):
        self.calls = 0

    def read(self, frame, regions=None):
        self.calls += 1
        return [OcrLine("TITLE", 0.9, (100, 100, 400, 160), frame.t_s)]


def test_ocr_reads_an_unchanged_frame_once_and_retimes_it():
    engine = _CountingOcr()
    ocr = ReusingOcr(engine)
    first = ocr.read(Frame(1.0, _slide(seed=1)))
    again = ocr.read(Frame(1.5, _slide(seed=2)))
    assert engine.calls == 1 and again[0].t_s == 1.5 and first[0].t_s == 1.0 and again[0].text == "TITLE"
    ocr.read(Frame(2.0, _slide(seed=3)), regions=[(0, 0, 50, 50)])  # other regions: read again
    ocr.read(Frame(2.5, _slide(text_pixels=300)))  # changed: read again
    assert engine.calls == 3 and ocr.memo.reused == 1 and ocr.name == "counting-ocr"


class _CountingDetector:
    name = "counting-det"
    vocabulary = "things"
    class_list = ("thing",)
    detect_batch = None

    def __init__(self):
        self.calls = 0

    def supports(self, label):
        return label == "thing"

    def detect(self, frame, labels):
        self.calls += 1
        return DetectionResult(frame.t_s, [Detection("thing", 0.8, (1, 2, 3, 4), frame.t_s, (640, 360))], [])

    def detect_all(self, frame):
        self.calls += 1
        return [Detection("thing", 0.8, (1, 2, 3, 4), frame.t_s, (640, 360))]


def test_detector_runs_once_per_unchanged_frame_and_label_set():
    inner = _CountingDetector()
    det = ReusingDetector(inner)
    r1 = det.detect(Frame(0.0, _slide(seed=1)), ["thing"])
    r2 = det.detect(Frame(0.5, _slide(seed=2)), ["thing"])
    assert inner.calls == 1 and r2.t_s == 0.5 and r2.detections[0].t_s == 0.5 and r1.detections[0].t_s == 0.0
    det.detect(Frame(1.0, _slide(seed=2)), ["thing", "other"])
    assert inner.calls == 2
    assert det.detect_all(Frame(1.0, _slide()))[0].t_s == 1.0 and det.detect_all(Frame(1.5, _slide()))[0].t_s == 1.5
    assert inner.calls == 3
    assert det.supports("thing") and det.class_list == ("thing",) and det.vocabulary == "things"
    bare = type("NoAll", (), {"name": "n", "vocabulary": "v", "class_list": None, "detect_all": None,
                              "detect_batch": None})
    assert ReusingDetector(object.__new__(bare)).detect_all is None


def test_a_window_is_read_again_only_when_its_pixels_or_its_box_change():
    reuse, calls = WindowReuse(size=2), []

    def read(t):
        def compute():
            calls.append(t)
            return [OcrLine("TITLE", 0.9, (100, 100, 400, 160), t)], [(0.0, 0.0, 5.0, 5.0)]
        return compute

    title = (90, 90, 410, 170)
    bgr = _slide(seed=1)
    lines, unread = reuse.get(bgr, title, 3.0, "zoom", 1.0, read(1.0), retime_pass)
    moving = _slide(seed=2)
    moving[200:260, 0:80] = 255  # someone walks in beside the title: the frame changed, the window did not
    lines, unread = reuse.get(moving, title, 3.0, "zoom", 1.5, read(1.5), retime_pass)
    assert calls == [1.0] and lines[0].t_s == 1.5 and lines[0].text == "TITLE" and unread == [(0.0, 0.0, 5.0, 5.0)]
    reuse.get(moving, (92, 90, 410, 170), 3.0, "zoom", 2.0, read(2.0), retime_pass)  # 2 px narrower: read
    reuse.get(moving, title, 2.0, "zoom", 2.5, read(2.5), retime_pass)  # another scale: read
    reuse.get(moving, title, 3.0, "region", 3.0, read(3.0), retime_pass)  # another kind: read
    changed = _slide(seed=3)
    changed[120:140, 150:250] = 0  # the title's text changes
    reuse.get(changed, title, 3.0, "zoom", 3.5, read(3.5), retime_pass)
    assert calls == [1.0, 2.0, 2.5, 3.0, 3.5] and reuse.reused == 1 and reuse.computed == 5
    assert len(reuse._last) == 2  # the newest windows only


def test_rapidocr_engine_reads_an_unchanged_zoom_tile_once(monkeypatch):
    """RapidOcrEngine sends its zoom tiles through its WindowReuse (the model itself is not run here)."""
    from avi.backends.ocr import RapidOcrEngine

    engine = RapidOcrEngine.__new__(RapidOcrEngine)
    engine.min_side, engine.max_side, engine.zoom, engine.max_windows, engine.passes = 960, 1152, 3.0, 4, True
    engine.window_reuse = WindowReuse()
    passes = []

    def fake_pass(bgr, window, scale, t_s):
        passes.append((window, scale))
        if window == (0, 0, bgr.shape[1], bgr.shape[0]):
            return [], [(100.0, 100.0, 400.0, 160.0)]  # a weak candidate: calls for a zoom tile
        cx, cy = (window[0] + window[2]) / 2, (window[1] + window[3]) / 2  # a line inside the tile
        return [OcrLine("TITLE", 0.9, (cx - 20, cy - 5, cx + 20, cy + 5), t_s)], []

    monkeypatch.setattr(engine, "_pass", fake_pass)
    first = engine.read(Frame(1.0, _slide(seed=1)))
    again = engine.read(Frame(1.5, _slide(seed=2)))
    full = [p for p in passes if p[0] == (0, 0, 640, 360)]
    assert len(full) == 2 and len(passes) - len(full) >= 1  # the tile ran for the first frame only
    assert {ln.text for ln in first} == {ln.text for ln in again} == {"TITLE"} and again[0].t_s == 1.5
    assert engine.window_reuse.reused == len(passes) - len(full)
