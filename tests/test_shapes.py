"""Flat geometric shapes on the cpu profile (avi/backends/shapes.py): drawn frames with known shapes, the words
that name them, the route through the cpu detector, and real sample frames where no drawn shape exists."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import sample_video
from PIL import Image, ImageDraw, ImageFont

from avi.backends.shapes import (
    CAPTION_MAX_STD,
    ShapeDetector,
    describe_shapes,
    find_shapes,
    shape_query,
)
from avi.video.decode import Frame


def _frame(draw_fn, size=(640, 360), background=(34, 34, 34), noise=2, seed=0) -> np.ndarray:
    img = Image.new("RGB", size, background)
    draw_fn(ImageDraw.Draw(img))
    arr = np.asarray(img).astype(np.int16)
    rng = np.random.default_rng(seed)
    arr += rng.integers(-noise, noise + 1, size=arr.shape, dtype=np.int16)
    return arr.clip(0, 255).astype(np.uint8)


def _scene(d: ImageDraw.ImageDraw) -> None:
    d.ellipse([60, 60, 150, 150], fill=(224, 32, 32))  # red circle, 90 px
    d.rectangle([250, 60, 330, 140], fill=(32, 80, 224))  # blue square, 80 px
    d.polygon([(420, 160), (470, 60), (520, 160)], fill=(240, 208, 32))  # yellow triangle
    d.rectangle([60, 230, 260, 290], fill=(32, 192, 64))  # green rectangle, 200 x 60
    d.text((330, 250), "O O O", fill=(255, 255, 255), font=ImageFont.load_default(size=48))  # letters are no shapes


def test_find_shapes_names_kind_colour_and_box():
    blobs = find_shapes(_frame(_scene))
    found = sorted((b.colour, b.kind) for b in blobs)
    assert found == [("blue", "square"), ("green", "rectangle"), ("red", "circle"), ("yellow", "triangle")]
    circle = next(b for b in blobs if b.kind == "circle")
    assert all(abs(a - b) <= 3 for a, b in zip(circle.box, (60, 60, 151, 151)))  # pixel xyxy
    assert all(b.std <= CAPTION_MAX_STD for b in blobs) and all(0.8 <= b.score <= 1.0 for b in blobs)


def test_find_shapes_works_at_any_resolution_and_ignores_the_background():
    big = np.asarray(Image.fromarray(_frame(_scene)).resize((1280, 720)))
    blobs = find_shapes(big)
    assert sorted(b.kind for b in blobs) == ["circle", "rectangle", "square", "triangle"]
    circle = next(b for b in blobs if b.kind == "circle")
    assert abs(circle.box[0] - 120) <= 6 and abs(circle.box[2] - 302) <= 6  # boxes in the given frame's pixels
    assert find_shapes(_frame(lambda d: None)) == []  # an empty screen has no shapes
    # a shape cut by the frame's edge is not measured as a whole shape
    assert find_shapes(_frame(lambda d: d.ellipse([-40, 100, 50, 190], fill=(224, 32, 32)))) == []
    with pytest.raises(ValueError):
        find_shapes(np.zeros((10, 10), np.uint8))


def test_texture_is_not_a_shape():
    rng = np.random.default_rng(1)
    img = _frame(_scene)
    img[50:160, 50:160] = rng.integers(0, 255, (110, 110, 3), dtype=np.uint8)  # texture over the red circle
    assert "circle" not in {b.kind for b in find_shapes(img)}


@pytest.mark.parametrize("label, expected", [
    ("circle", (None, "circle")), ("red squares", ("red", "square")), ("big yellow triangle", ("yellow", "triangle")),
    ("grey rectangle", ("gray", "rectangle")), ("shapes", (None, "shape")), ("dots", (None, "circle")),
    ("person", None), ("red car", None), ("traffic sign", None), ("circle square", None), ("box", None),
])
def test_shape_query_reads_colour_and_kind(label, expected):
    assert shape_query(label) == expected


def test_shape_detector_answers_shape_words_only():
    det = ShapeDetector()
    frame = Frame(12.5, _frame(_scene))
    res = det.detect(frame, ["red circle", "shapes", "rectangles", "person"])
    assert res.unsupported == ["person"]
    by = {}
    for d in res.detections:
        by.setdefault(d.label, []).append(d.cls)
    assert by["red circle"] == ["red circle"]
    assert sorted(by["shapes"]) == ["blue square", "green rectangle", "red circle", "yellow triangle"]
    assert sorted(by["rectangles"]) == ["blue square", "green rectangle"]  # a square is a rectangle too
    assert all(d.t_s == 12.5 and d.frame_size == (640, 360) for d in res.detections)
    assert describe_shapes(find_shapes(frame.image)) == \
        "1 blue square, 1 green rectangle, 1 red circle, 1 yellow triangle"


def test_cpu_detector_routes_shape_words_to_the_shape_finder():
    from avi.backends.detector import CpuDetector, OpenCvDetector

    class _Coco:  # a COCO detector test double: knows "ball" and nothing is in the frame
        name = "coco-double"

        def supports(self, label):
            return label in ("ball", "person")

        def detect(self, frame, labels):
            from avi.backends.types import DetectionResult
            return DetectionResult(frame.t_s, [], [])

    det = CpuDetector(_Coco(), OpenCvDetector())
    assert det.supports("circle") and det.supports("yellow triangles") and det.supports("ball")
    assert not det.supports("tripod") and "triangle" in det.class_list
    res = det.detect(Frame(0.0, _frame(_scene)), ["yellow triangle", "ball", "tripod"])
    assert [d.cls for d in res.detections] == ["yellow triangle"] and res.unsupported == ["tripod"]


@pytest.mark.parametrize("name", ["vtest.avi", "bigbuckbunny.mp4", "carphone_pristine.mp4", "bikes.mp4"])
def test_real_sample_frames_hold_no_caption_shapes(name):
    """Frames of real sample videos (pedestrians, a meadow, a man in a car, street scenes) hold no drawn graphics:
    at the captions' flatness nothing in them is named a shape."""
    from avi.video.decode import VideoReader, probe

    reader = VideoReader(probe(sample_video(name)))
    for f in reader.frames_at([0.5, 2.0, 4.0, 5.0, 8.0]):
        assert find_shapes(f.image, max_std=CAPTION_MAX_STD) == [], (name, f.t_s)
