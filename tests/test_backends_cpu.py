"""The cpu profile's model backends on real frames: OCR, detector, embedder, captioner, frame analyzer."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import sample_video

from avi.backends.boxes import nms
from avi.backends.detector import OpenCvDetector
from avi.video.clips import Clip
from avi.video.decode import Frame, VideoReader, probe, sample_frames


@pytest.fixture(scope="module")
def sign_frames(sign_video):
    return VideoReader(probe(sign_video)).frames_at([2.0, 5.0, 13.0])


def test_ocr_reads_drawn_text(session_backends, sign_frames):
    ocr = session_backends.ocr
    assert ocr.read(sign_frames[0]) == []
    lines = ocr.read(sign_frames[1])
    assert [l.text for l in lines] == ["EXIT 42"]
    line = lines[0]
    assert line.score > 0.9 and line.t_s == 5.0
    x1, y1, x2, y2 = line.box  # drawn at (60, 140), 64 px font
    assert 40 <= x1 <= 80 and 120 <= y1 <= 170 and x2 > x1 + 150 and y2 > y1 + 30
    assert [l.text for l in ocr.read(sign_frames[2])] == ["ROOM 7B"]


def test_detector_counts_people_and_cars_on_vtest(session_backends):
    frame = VideoReader(probe(sample_video("vtest.avi"))).frames_at([40.0])[0]
    res = session_backends.detector.detect(frame, ["person", "cars"])
    # Three pedestrians on the path and two parked cars at the top right at 40 s (bench/detect, by eye).
    people = [d for d in res.detections if d.label == "person"]
    cars = [d for d in res.detections if d.label == "cars"]
    assert len(people) == 3 and 1 <= len(cars) <= 2
    assert all(d.cls == "car" for d in cars)
    for d in people:
        x1, y1, x2, y2 = d.box
        assert 0 <= x1 < x2 <= 768 and 0 <= y1 < y2 <= 576
        assert (y2 - y1) > (x2 - x1)  # people are taller than wide
        assert 0.0 <= d.score <= 1.0
    assert all(d.box[1] < 120 for d in cars)  # the parked cars are at the top of the frame
    assert res.unsupported == []


def test_a_word_for_two_classes_gets_one_box_per_thing_with_its_colour(session_backends):
    """vtest at 44 s: the white van at the top right is found by NanoDet as both "car" and "truck"; "van" names
    both classes, so one box per thing remains. bench/REAL.md: the van is white, the other car light blue."""
    from types import SimpleNamespace

    from avi.tools.base import ToolContext
    from avi.tools.perceive import object_detect

    info = probe(sample_video("vtest.avi"))
    ctx = ToolContext(settings=SimpleNamespace(fps=2.0, perceive_max_frames=16), index=None,
                      video=VideoReader(info), backends=session_backends)
    obs = object_detect.run(ctx, {"time_ranges": [[44, 44]], "objects": ["van"]})
    assert "van (class car, truck): 2 found at 44.0s" in obs.text
    assert "white)" in obs.text and "cyan)" in obs.text


def test_box_colours_name_the_middle_of_the_box():
    from avi.video.analysis import box_colours

    img = np.zeros((100, 200, 3), np.uint8)
    img[20:80, 50:150] = (220, 30, 30)  # a red block on black
    assert box_colours(img, (40, 10, 160, 90)) == ["red"]  # the black rim is cut away
    assert box_colours(img, (0, 0, 0, 0)) == []


def test_detector_finds_the_cyclist_and_motorbike_in_bikes(session_backends):
    frame = VideoReader(probe(sample_video("bikes.mp4"))).frames_at([5.0])[0]
    res = session_backends.detector.detect(frame, ["bike", "motorbike", "person"])
    labels = {d.label for d in res.detections}
    assert {"bike", "motorbike", "person"} <= labels
    assert {d.cls for d in res.detections if d.label == "bike"} == {"bicycle"}


def test_detector_label_mapping_and_unsupported(session_backends, sign_frames):
    res = session_backends.detector.detect(sign_frames[0], ["people", "dog", "Face", "traffic light", "tree", "cone"])
    assert res.unsupported == ["tree", "cone"]
    assert session_backends.detector.supports("bikes") and not session_backends.detector.supports("glasses")
    assert OpenCvDetector.canonical("pedestrians") == "person"
    assert OpenCvDetector.canonical("faces") == "face"
    assert OpenCvDetector.canonical("car") is None
    # no people, faces or dogs in a synthetic frame of text and colour
    assert res.detections == []


def test_haar_finds_the_face_in_carphone(session_backends):
    frames = list(sample_frames(probe(sample_video("carphone_pristine.mp4")), fps=1.0))
    found = [len(session_backends.detector.detect(f, ["face"]).detections) for f in frames]
    assert max(found) >= 1


def test_nms_suppresses_overlaps():
    boxes = [(0, 0, 100, 100), (5, 5, 105, 105), (200, 200, 250, 250)]
    keep = nms(boxes, [0.9, 0.8, 0.7], 0.5)
    assert keep == [0, 2]
    assert nms(boxes, [0.9, 0.8, 0.7], 0.99) == [0, 1, 2]
    assert nms([], [], 0.5) == []


def test_embedder_similarity(session_backends):
    emb = session_backends.embedder
    vecs = emb.embed(["a red car on the street", "a crimson automobile on a road", "a bowl of soup"])
    assert vecs.shape == (3, emb.dim) and emb.dim == 384
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.2
    assert emb.embed([]).shape == (0, 384)


def test_perception_caption(session_backends, sign_video):
    info = probe(sign_video)
    frames = list(sample_frames(info, fps=2.0, start_s=5.0, end_s=10.0))
    cap = session_backends.captioner.caption(Clip(1, 5.0, 10.0), frames)
    assert cap.captioner == "perception-caption-v5"
    assert "EXIT 42" in cap.text and "no people" in cap.text.lower()
    assert cap.data["ocr"][0]["text"] == "EXIT 42"
    assert cap.data["subject_registry"] == {}
    assert "blue" in [c for c, _ in cap.data["colours"]]
    # the next clip starts with the cut at 10 s
    nxt = list(sample_frames(info, fps=2.0, start_s=10.0, end_s=15.0))
    cap2 = session_backends.captioner.caption(Clip(2, 10.0, 15.0), nxt, previous=frames[-1])
    assert cap2.data["shot_changes_s"] == [10.0] and "Shot change at 10.0s" in cap2.text


def test_perception_caption_people_registry(session_backends):
    info = probe(sample_video("vtest.avi"))
    frames = list(sample_frames(info, fps=2.0, start_s=40.0, end_s=45.0))
    cap = session_backends.captioner.caption(Clip(8, 40.0, 45.0), frames)
    reg = cap.data["subject_registry"]
    assert "person" in reg and reg["person"]["max_count"] >= 2
    assert 40.0 <= reg["person"]["first_seen"] < 45.0
    assert "people visible" in cap.text
    # the captions name COCO objects, with where they are: the parked cars at the top right (bench/detect)
    assert "car" in reg and reg["car"]["appearance"][0].startswith("right, top")
    assert "Objects: car (up to " in cap.text and "car" in cap.data["objects_per_frame"]
    # every box of every sampled frame is kept for the index's tracks: as many frames as sampled, the person
    # counts of the caption, boxes inside the analysed frame
    boxes = cap.data["boxes"]
    assert [t for t, _ in boxes] == [f.t_s for f in frames]
    assert [sum(b[0] == "person" for b in bs) for _, bs in boxes] == [n for _, n in cap.data["people_per_frame"]]
    w, h = cap.data["frame_size"]
    assert (w, h) == (frames[0].image.shape[1], frames[0].image.shape[0])
    assert all(0 <= b[2] < b[4] <= w and 0 <= b[3] < b[5] <= h and 0 < b[1] <= 1 for _, bs in boxes for b in bs)


def test_frame_analyzer_is_a_measurement(session_backends, sign_frames):
    res = session_backends.frame_analyzer.analyze(sign_frames, "what does the sign say?")
    assert "cpu profile has no VLM" in res.text
    assert '"EXIT 42"' in res.text and '"ROOM 7B"' in res.text
    assert [r["t_s"] for r in res.data["frames"]] == [2.0, 5.0, 13.0]
    assert res.data["shot_changes_s"] == [13.0]


def test_empty_clip_caption(session_backends):
    cap = session_backends.captioner.caption(Clip(0, 0.0, 5.0), [])
    assert "no frames" in cap.text.lower()


def test_frame_type_shapes():
    f = Frame(1.5, np.zeros((4, 6, 3), np.uint8))
    assert f.t_s == 1.5 and f.image.shape == (4, 6, 3)


def test_frame_analyzer_merges_identical_neighbours(session_backends, sign_video):
    frames = VideoReader(probe(sign_video)).frames_at([5.0, 5.5, 6.0, 13.0])
    res = session_backends.frame_analyzer.analyze(frames, "what is shown?")
    assert '5.0–6.0s (3 frames): 0 people; text "EXIT 42"; colours blue' in res.text
    assert '13.0s: 0 people; text "ROOM 7B"; colours green' in res.text
    assert len(res.data["frames"]) == 4  # the trace keeps every frame


def test_embedder_from_local_model_dir(tmp_path):
    """``embedder_model_dir`` (how Qwen3-Embedding-4B is used in-process) loads any sentence-transformers
    directory; its name and a fingerprint of the directory go into the index key."""
    import shutil

    from avi.backends import Backends
    from avi.config import Settings
    from avi.weights import resolve

    base = Settings()
    src = resolve(base.embedder, base.models_dir, base.weights_lock)
    local = tmp_path / "my-embedder"
    shutil.copytree(src, local)
    b = Backends(Settings(embedder_model_dir=local))
    assert b.embedder.name == "my-embedder" and b.embedder.dim == 384
    first = b.embedder_id()
    assert first.startswith("my-embedder@") and first != Backends(base).embedder_id()
    (local / "config.json").write_text((local / "config.json").read_text().replace("384", "384 "))
    assert Backends(Settings(embedder_model_dir=local)).embedder_id() != first
