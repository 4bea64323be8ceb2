"""The cpu COCO detector's word mapping, box words, and NanoDet-m decoding on rendered input."""

from __future__ import annotations

import numpy as np
import pytest

from avi.backends.box_words import box_words
from avi.backends.coco_detector import BENCH_THRESHOLDS, COCO_CLASSES, coco_classes_for
from avi.backends.detector import CpuDetector, OpenCvDetector
from avi.backends.types import Detection
from avi.video.decode import Frame


@pytest.mark.parametrize("word, classes", [
    ("bike", ("bicycle",)), ("Bikes", ("bicycle",)), ("buses", ("bus",)), ("wine glasses", ("wine glass",)),
    ("glass", ("wine glass", "cup")), ("phone", ("cell phone",)), ("a red car", ("car",)), ("vans", ("car", "truck")),
    ("people", ("person",)), ("knives", ("knife",)), ("ties", ("tie",)), ("traffic lights", ("traffic light",)),
    ("glasses", ()), ("tree", ()), ("face", ()), ("", ()),
    # a phrase with a preposition is its head: the cyclist, not the helmet; the man, not the cup
    ("cyclist in a helmet", ("person",)), ("man with a cup", ("person",)), ("helmet on a cyclist", ()),
    ("cup of tea", ("cup",)), ("person riding a bicycle", ("person",)),
])
def test_words_map_to_coco_classes(word, classes):
    assert coco_classes_for(word) == classes


def test_every_class_maps_to_itself_and_bench_thresholds_name_classes():
    assert len(COCO_CLASSES) == 80
    for c in COCO_CLASSES:
        # "orange" and "remote" are mostly a colour and an adjective in questions: deliberately no class
        assert coco_classes_for(c) == (() if c in ("orange", "remote") else (c,)), c
    assert coco_classes_for("oranges") == ("orange",) and coco_classes_for("tv remote") == ()
    assert set(BENCH_THRESHOLDS) <= set(COCO_CLASSES)


@pytest.mark.parametrize("box, words", [
    ((0, 0, 20, 20), "left, top, small"),
    ((300, 200, 340, 280), "centre, small"),
    ((500, 300, 640, 480), "right, bottom, medium"),
    ((0, 100, 640, 480), "centre, very large"),
])
def test_box_words(box, words):
    assert box_words(box, (640, 480)) == words


def test_box_words_rejects_empty_frame():
    with pytest.raises(ValueError):
        box_words((0, 0, 1, 1), (0, 480))


class _FakeCoco:
    """Stands in for NanoDet-m: returns fixed boxes (a fake, named as such: the real model is tested below)."""

    name = "fake-coco"

    def supports(self, label):
        return bool(coco_classes_for(label))

    def detect(self, frame, labels):
        from avi.backends.types import DetectionResult

        size = (640, 480)
        return DetectionResult(frame.t_s, [Detection(labels[0], 0.6, (10, 10, 50, 50), frame.t_s, size, cls="car")])

    def detect_all(self, frame):
        return [Detection("car", 0.6, (10, 10, 50, 50), frame.t_s, (640, 480), cls="car"),
                Detection("person", 0.9, (100, 100, 150, 300), frame.t_s, (640, 480), cls="person")]


def test_cpu_detector_routes_faces_to_haar_and_the_rest_to_coco():
    det = CpuDetector(_FakeCoco(), OpenCvDetector())
    assert det.supports("face") and det.supports("bike") and not det.supports("tree")
    frame = Frame(1.0, np.zeros((480, 640, 3), np.uint8))
    res = det.detect(frame, ["taxi", "face", "tree"])
    assert [d.label for d in res.detections] == ["taxi"] and res.unsupported == ["tree"]
    hog = CpuDetector(_FakeCoco(), OpenCvDetector(), person_backend="hog")
    assert [d.label for d in hog.detect_all(frame)] == ["car"]  # the fake's person is replaced by HOG (none here)
    assert {d.label for d in det.detect_all(frame)} == {"car", "person"}


class _NoOcr:
    name = "no-ocr"

    def read(self, frame, regions=None):
        return []


class _ScriptedAll:
    """A detector double with ``detect_all``: per frame time a list of (class, score) boxes (a fake: the real
    NanoDet-m captions are tested on vtest in test_backends_cpu.py)."""

    name = "scripted"
    vocabulary = "scripted classes"
    class_list = None
    detect_batch = None

    def __init__(self, script):
        self.script = script

    def supports(self, label):
        return True

    def detect_all(self, frame):
        return [Detection(c, sc, (500, 10, 600, 60), frame.t_s, (640, 480), cls=c)
                for c, sc in self.script.get(frame.t_s, [])]


def test_caption_names_objects_seen_in_two_frames_or_once_confidently():
    from avi.backends.captioner import PerceptionCaptioner
    from avi.video.clips import Clip

    frames = [Frame(t, np.full((480, 640, 3), 90, np.uint8)) for t in (0.0, 0.5, 1.0, 1.5)]
    det = _ScriptedAll({0.0: [("car", 0.35), ("bird", 0.46)], 0.5: [("car", 0.4)], 1.0: [("dog", 0.7)],
                        1.5: [("person", 0.9), ("person", 0.8)]})
    cap = PerceptionCaptioner(_NoOcr(), det).caption(Clip(0, 0.0, 2.0), frames)
    assert "Objects: car (up to 1, in 2 of 4 frames) (right, top, small); dog (up to 1, in 1 of 4 frames)" in cap.text
    assert "bird" not in cap.text and "bird" not in cap.data["subject_registry"]  # once, weakly: not named
    assert cap.data["subject_registry"]["person"]["max_count"] == 2
    assert cap.data["objects_per_frame"]["car"] == [[0.0, 1], [0.5, 1], [1.0, 0], [1.5, 0]]


def test_object_detect_lists_the_vocabulary_for_a_word_with_no_class():
    from types import SimpleNamespace

    from avi.tools.base import ToolContext
    from avi.tools.perceive import object_detect

    det = CpuDetector(_FakeCoco(), OpenCvDetector())
    ctx = ToolContext(settings=SimpleNamespace(fps=2.0, perceive_max_frames=16), index=None,
                      video=SimpleNamespace(info=SimpleNamespace(duration_s=60.0)), backends=SimpleNamespace(detector=det))
    obs = object_detect.run(ctx, {"time_ranges": [[1, 2]], "objects": ["tree"]})
    assert obs.error and "no class for tree" in obs.text
    assert "toothbrush" in obs.text and "traffic light" in obs.text and "face" in obs.text


def test_index_key_follows_the_detector_weights_and_threshold(tmp_path):
    """A different detector file (sha256 in weights.lock) or threshold makes another captioner id: a new index."""
    from avi.backends import Backends
    from avi.config import Settings
    from avi.weights import load_lock

    real = Settings()
    sha = load_lock(real.weights_lock)[real.coco_detector].sha256
    other = tmp_path / "weights.lock"
    other.write_text(real.weights_lock.read_text().replace(sha, "0" * 64))
    a = Backends(real).captioner_id()
    b = Backends(Settings(weights_lock=other)).captioner_id()
    c = Backends(Settings(coco_score_threshold=0.6)).captioner_id()
    assert sha[:16] in a and a != b and a != c and "perception-caption-v5" in a


def test_text_regions_are_the_largest_text_bearing_boxes():
    from avi.backends.coco_detector import text_regions

    size = (640, 480)
    dets = [Detection("car", 0.9, (0, 0, 100, 60), 0.0, size, cls="car"),
            Detection("bike", 0.9, (0, 0, 300, 300), 0.0, size, cls="bicycle"),  # no text expected on it
            Detection("bus", 0.5, (100, 100, 400, 300), 0.0, size, cls="bus"),
            Detection("truck", 0.5, (0, 0, 200, 10), 0.0, size, cls="truck"),  # too low to hold text
            Detection("tv", 0.5, (10, 10, 40, 40), 0.0, size)]
    assert text_regions(dets) == [(100, 100, 400, 300), (0, 0, 100, 60), (10, 10, 40, 40)]
    assert text_regions(dets, max_regions=1) == [(100, 100, 400, 300)]


class _RecordingOcr:
    name = "recording-ocr"

    def __init__(self):
        self.calls = []

    def read(self, frame, regions=None):
        self.calls.append((frame.t_s, regions))
        return []


def test_captions_and_text_extract_hand_vehicle_boxes_to_ocr_as_regions():
    from types import SimpleNamespace

    from avi.backends.captioner import PerceptionCaptioner
    from avi.tools.base import ToolContext
    from avi.tools.perceive import text_extract
    from avi.video.clips import Clip

    frames = [Frame(t, np.full((480, 640, 3), 90, np.uint8)) for t in (0.0, 0.5, 1.0)]
    det = _ScriptedAll({t: [("car", 0.9)] for t in (0.0, 0.5, 1.0)})
    ocr = _RecordingOcr()
    PerceptionCaptioner(ocr, det, ocr_frames=1).caption(Clip(0, 0.0, 1.5), frames)
    assert ocr.calls == [(0.5, [(500, 10, 600, 60)])]

    class _Video:
        info = SimpleNamespace(duration_s=10.0)

        def frames_at(self, times):
            return [Frame(t, np.full((480, 640, 3), 90, np.uint8)) for t in times]

    ocr2 = _RecordingOcr()
    ctx = ToolContext(settings=SimpleNamespace(fps=2.0, perceive_max_frames=16), index=None, video=_Video(),
                      backends=SimpleNamespace(ocr=ocr2, detector=_ScriptedAll({0.0: [("bus", 0.8)]})))
    obs = text_extract.run(ctx, {"time_ranges": [[0, 0.5]]})
    assert not obs.error, obs.text
    assert ocr2.calls == [(0.0, [(500, 10, 600, 60)]), (0.5, None)]


class _RecordingPeople:
    """A people-reader double (a fake: the real models are tested in test_people_models.py): reads whatever it is
    given and records the frame times it was run on."""

    def __init__(self, posture="sitting", expression=("happy", 0.8), holding=("cup",)):
        self.times, self.reading = [], (posture, expression, list(holding))

    def read(self, image, detections):
        from avi.backends.people.reader import PersonReading

        self.times.append(float(image[0, 0, 0]))
        posture, expression, holding = self.reading
        return [PersonReading(tuple(d.box), posture=posture, expression=expression, holding=list(holding))
                for d in detections if d.label == "person"]


def test_caption_reads_the_people_of_the_frame_with_the_most_people():
    from avi.backends.captioner import PerceptionCaptioner
    from avi.video.clips import Clip

    frames = [Frame(t, np.full((480, 640, 3), int(t * 10), np.uint8)) for t in (0.0, 0.5, 1.0, 1.5, 2.0)]
    det = _ScriptedAll({0.0: [("person", 0.9)], 0.5: [("person", 0.9), ("person", 0.8)],
                        1.0: [("person", 0.9), ("person", 0.8)], 2.0: [("cup", 0.9)]})
    people = _RecordingPeople()
    cap = PerceptionCaptioner(_NoOcr(), det, people=people).caption(Clip(0, 0.0, 2.5), frames)
    assert people.times == [10.0]  # two people at 0.5 s and 1.0 s: the one nearer the clip's middle (1.0 s)
    assert "People read at 1.0s: a person (right, top, small) sitting, a hand on a cup" in cap.text
    assert cap.data["people_read"]["t_s"] == 1.0 and len(cap.data["people_read"]["people"]) == 2
    # an expression and an unclear posture are not written; nothing else read: no sentence, the data kept
    quiet = _RecordingPeople(posture="unclear", expression=("happy", 0.9), holding=())
    cap = PerceptionCaptioner(_NoOcr(), det, people=quiet).caption(Clip(0, 0.0, 2.5), frames)
    assert "People read" not in cap.text and "people_read" in cap.data
    # no person in the clip: the models are not run
    nobody = _RecordingPeople()
    PerceptionCaptioner(_NoOcr(), _ScriptedAll({}), people=nobody).caption(Clip(0, 0.0, 2.5), frames)
    assert nobody.times == []


def test_captioner_id_names_the_people_models_only_when_captions_read_people():
    from avi.backends import Backends
    from avi.config import Settings

    off, on = Settings(), Settings(caption_people=True)
    b = Backends(off)
    assert "|people=" not in b.captioner_id(off)
    assert b.captioner_id(on).startswith(b.captioner_id(off) + "|people-v2=")
