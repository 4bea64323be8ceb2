"""GroundingDinoDetector on a tiny random-weight Grounding DINO built at test time (.venv-gpu only).

Exercises the real loading (AutoProcessor / AutoModelForZeroShotObjectDetection
from a local dir), the prompt, the processor's post-processing with target
sizes, the phrase-to-label mapping, clipping, NMS and batching. Random weights:
only geometry and plumbing are asserted, never what is detected.
Run: ``.venv-gpu/bin/python -m pytest -m gpu_paths tests/test_grounding_dino.py -q``.
"""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gpu_paths
pytest.importorskip("torchvision")
pytest.importorskip("transformers")

from tiny_models import build_tiny_grounding_dino  # noqa: E402

from avi.backends.boxes import box_iou  # noqa: E402
from avi.backends.detector import Detector  # noqa: E402
from avi.backends.grounding_dino import GroundingDinoDetector, build_prompt, load_grounding_dino  # noqa: E402
from avi.backends.types import Detection, DetectionResult  # noqa: E402
from avi.errors import AviError  # noqa: E402
from avi.video.decode import Frame  # noqa: E402

H, W = 90, 200  # non-square: a swapped (H, W) would put boxes outside the frame
LABELS = ["Person", "red car", "dog"]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny_grounding_dino(tmp_path_factory.mktemp("tiny-gdino") / "tiny-grounding-dino")


@pytest.fixture(scope="module")
def frames():
    rng = np.random.default_rng(0)
    return [Frame(0.5 * i, rng.integers(0, 256, (H, W, 3), dtype=np.uint8)) for i in range(2)]


def make(tiny_dir, **kw) -> GroundingDinoDetector:
    args = dict(box_threshold=0.0, text_threshold=0.0, iou_threshold=0.5, device="cpu")
    args.update(kw)
    return GroundingDinoDetector(tiny_dir, **args)


@pytest.fixture(scope="module")
def det(tiny_dir):
    return make(tiny_dir)


def test_protocol_and_loading(det, tiny_dir):
    assert isinstance(det, Detector)
    assert det.vocabulary == "any object named in text" and det.supports("a purple giraffe")
    assert type(det.processor).__name__ == "GroundingDinoProcessor"
    assert type(det.model).__name__ == "GroundingDinoForObjectDetection" and det.device == "cpu"
    assert det.name == "grounding-dino:tiny-grounding-dino" and det.max_text_len == 64
    assert isinstance(load_grounding_dino(tiny_dir, device="cpu"), GroundingDinoDetector)


def test_output_types_labels_and_frame_geometry(det, frames):
    res = det.detect(frames[1], LABELS)
    assert isinstance(res, DetectionResult) and res.t_s == 0.5 and res.unsupported == []
    assert res.detections, "threshold 0.0 keeps every query that names a label"
    scores = [d.score for d in res.detections]
    assert scores == sorted(scores, reverse=True)
    for d in res.detections:
        assert isinstance(d, Detection) and d.label in LABELS  # the requested spelling, nothing else
        assert 0.0 <= d.score <= 1.0 and d.t_s == 0.5 and d.frame_size == (W, H)
        x1, y1, x2, y2 = d.box
        assert 0.0 <= x1 < x2 <= W and 0.0 <= y1 < y2 <= H


def test_boxes_are_the_models_boxes_scaled_to_the_original_frame(det, frames):
    """Each box is one predicted (cx, cy, w, h) in [0, 1] times the frame's (W, H), as xyxy, clipped."""
    import torch
    from PIL import Image

    prompt, _, _ = build_prompt(LABELS)
    inputs = det.processor(images=[Image.fromarray(frames[0].image)], text=[prompt], return_tensors="pt")
    assert inputs["pixel_values"].shape[-2:] != (H, W)  # the model saw a resized frame
    with torch.inference_mode():
        cx, cy, bw, bh = det.model(**inputs).pred_boxes[0].unbind(-1)
    expected = torch.stack([(cx - bw / 2) * W, (cy - bh / 2) * H, (cx + bw / 2) * W, (cy + bh / 2) * H], -1)
    expected[:, 0::2] = expected[:, 0::2].clamp(0, W)
    expected[:, 1::2] = expected[:, 1::2].clamp(0, H)
    dets = det.detect(frames[0], LABELS).detections
    assert dets
    for d in dets:
        dist = (expected - torch.tensor(d.box)).abs().max(dim=-1).values
        assert float(dist.min()) < 1e-2, d.box


def test_thresholds_filter(tiny_dir, det, frames, monkeypatch):
    assert det.detect(frames[0], LABELS).detections  # 0.0 / 0.0: every query that names a label
    monkeypatch.setattr(det, "box_threshold", 1.0)
    assert det.detect(frames[0], LABELS).detections == []
    monkeypatch.setattr(det, "box_threshold", 0.0)
    monkeypatch.setattr(det, "text_threshold", 1.0)  # no token above 1.0: no phrase, no label, no detection
    assert det.detect(frames[0], LABELS).detections == []
    with pytest.raises(AviError, match="box_threshold"):
        make(tiny_dir, box_threshold=1.5)


def test_nms_and_clipping_with_frame_sized_boxes(tiny_dir, frames):
    """Push every box's width and height to ~1 (bias on the last box layer): boxes overflow the frame and overlap."""
    import torch

    wide = make(tiny_dir, iou_threshold=1.0)
    last = wide.model.bbox_embed[-1].layers[-1]  # shared by the decoder layers; predicts (dcx, dcy, dw, dh)
    with torch.no_grad():
        last.weight.zero_()
        last.bias.copy_(torch.tensor([0.0, 0.0, 6.0, 6.0]))
    kept_all = wide.detect(frames[0], LABELS).detections  # IoU 1.0: nothing suppressed
    wide.iou_threshold = 0.5
    kept = wide.detect(frames[0], LABELS).detections
    assert 0 < len(kept) < len(kept_all)
    for d in kept_all:
        x1, y1, x2, y2 = d.box
        assert 0.0 <= x1 < x2 <= W and 0.0 <= y1 < y2 <= H
    assert any(d.box[0] == 0.0 or d.box[2] == W for d in kept_all)  # clipped at the frame's edge
    for label in LABELS:
        boxes = [d.box for d in kept if d.label == label]
        assert all(box_iou(a, b) <= 0.5 + 1e-6 for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_batch_matches_single_frames(det, frames):
    batch = det.detect_batch(frames[:2] + [Frame(9.0, np.zeros((64, 48, 3), np.uint8))], LABELS)
    assert [r.t_s for r in batch] == [0.0, 0.5, 9.0]
    for frame, res in zip(frames[:2], batch):
        single = det.detect(frame, LABELS)
        assert [d.label for d in res.detections] == [d.label for d in single.detections]
        assert np.allclose([d.box for d in res.detections], [d.box for d in single.detections], atol=1e-2)
    assert batch[2].detections and all(d.box[2] <= 48 and d.box[3] <= 64 for d in batch[2].detections)
    assert det.detect_batch([], LABELS) == [] and det.detect(frames[0], [" ", ""]).detections == []


def test_long_label_lists_are_split_to_fit_max_text_len(det, frames):
    labels = [f"{c} {n}" for c in ("red", "blue") for n in ("car", "dog", "cat", "bus", "truck", "man", "woman",
                                                             "face", "person", "bicycle", "light", "traffic")]
    groups = det._label_groups(labels)
    assert len(groups) >= 2 and sorted(i for g in groups for i in g) == list(range(len(labels)))
    tok = det.processor.tokenizer
    for g in groups:
        prompt = " ".join(f"{labels[i]} ." for i in g)
        assert len(tok(prompt)["input_ids"]) <= det.max_text_len
    res = det.detect(frames[0], labels)
    assert res.detections and {d.label for d in res.detections} <= set(labels)


def test_bad_model_dirs(tmp_path):
    with pytest.raises(AviError, match="not found"):
        load_grounding_dino(tmp_path / "nope")
    with pytest.raises(AviError, match="holds no Grounding-DINO"):
        load_grounding_dino(tmp_path)
    with pytest.raises(AviError, match="config.json"):
        GroundingDinoDetector(tmp_path)
