"""Person tracks linked into one subject per person (issue 36, item 2): clothing histograms, faces, cannot-links."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from avi.index.person_subjects import (
    KEPT_FACES,
    SAMPLES,
    TrackLook,
    clothing_histogram,
    clothing_similarity,
    link_looks,
    link_person_tracks,
    linker_id,
    load_subject_faces,
    sample_boxes,
    save_subject_faces,
    score_matrices,
)

H, W = 240, 320
COLOURS = {"red-blue": ((200, 30, 30), (30, 40, 160)), "green-grey": ((40, 170, 60), (120, 120, 120)),
           "yellow-black": ((230, 210, 40), (20, 20, 20))}


def person(image, box, clothes, noise=None):
    """Paint a person in ``clothes`` (top, trousers) into ``image`` at the pixel xyxy ``box``."""
    x1, y1, x2, y2 = box
    h = y2 - y1
    top, legs = COLOURS[clothes]
    image[y1:y1 + int(0.55 * h), x1:x2] = top
    image[y1 + int(0.55 * h):y2, x1:x2] = legs
    if noise is not None:
        patch = image[y1:y2, x1:x2].astype(int) + noise.integers(-12, 13, size=(y2 - y1, x2 - x1, 3))
        image[y1:y2, x1:x2] = np.clip(patch, 0, 255).astype(np.uint8)


def video(people, seconds, seed=0):
    """``frames_at`` over a grey scene where each ``(clothes, first_s, last_s, x)`` person stands in view, and the
    tracks a tracker would give (one per person, ids T1...)."""
    rng = np.random.default_rng(seed)
    times = [k / 2 for k in range(int(seconds * 2))]
    images = {}
    for t in times:
        image = np.full((H, W, 3), 90, np.uint8)
        for clothes, first, last, x in people:
            if first <= t <= last:
                person(image, (x, 60, x + 40, 200), clothes, rng)
        images[t] = image
    tracks = []
    for i, (_, first, last, x) in enumerate(people):
        boxes = [[t, float(x), 60.0, float(x + 40), 200.0] for t in times if first <= t <= last]
        tracks.append({"id": f"T{i + 1}", "label": "person", "first_s": boxes[0][0], "last_s": boxes[-1][0],
                       "frames": len(boxes), "boxes": boxes})

    def frames_at(ts):
        return [SimpleNamespace(t_s=t, image=images[min(images, key=lambda k: abs(k - t))]) for t in ts]
    return tracks, frames_at


def test_clothing_histogram_separates_clothes_and_matches_the_same_clothes():
    a, b, c = (np.full((H, W, 3), 90, np.uint8) for _ in range(3))
    person(a, (10, 20, 60, 200), "red-blue")
    person(b, (200, 50, 240, 190), "red-blue")  # the same clothes elsewhere, another size
    person(c, (10, 20, 60, 200), "green-grey")
    ha, hb, hc = (clothing_histogram(img, box) for img, box in
                  ((a, (10, 20, 60, 200)), (b, (200, 50, 240, 190)), (c, (10, 20, 60, 200))))
    assert ha.shape == (256,) and ha.dtype == np.float32
    assert clothing_similarity(ha, hb) > 0.95 and clothing_similarity(ha, hc) < 0.3
    assert clothing_histogram(a, (400, 10, 420, 50)) is None  # outside the frame


def test_a_person_who_leaves_and_comes_back_is_one_subject():
    tracks, frames_at = video([("red-blue", 0.0, 8.0, 20), ("green-grey", 2.0, 12.0, 150),
                               ("red-blue", 20.0, 30.0, 250), ("yellow-black", 22.0, 26.0, 100)], 32)
    tracks.append({"id": "T9", "label": "car", "first_s": 0.0, "last_s": 5.0, "frames": 11,
                   "boxes": [[0.0, 0, 0, 10, 10]]})
    subjects = link_person_tracks(tracks, frames_at)
    by_id = {t["id"]: t for t in tracks}
    assert by_id["T1"]["subject"] == by_id["T3"]["subject"] == "P1" and by_id["T1"]["linked_by"] == "clothing"
    assert len({by_id[t]["subject"] for t in ("T1", "T2", "T4")}) == 3
    assert "subject" not in by_id["T9"]
    assert subjects[0] == {"id": "P1", "tracks": ["T1", "T3"], "spans": [[0.0, 8.0], [20.0, 30.0]],
                           "linked_by": "clothing", "faces": None}  # no face models: no face kept
    assert [s["linked_by"] for s in subjects[1:]] == ["alone", "alone"]


def test_two_people_in_view_at_once_are_never_one_subject():
    tracks, frames_at = video([("red-blue", 0.0, 10.0, 20), ("red-blue", 5.0, 15.0, 200)], 16)
    link_person_tracks(tracks, frames_at)
    assert tracks[0]["subject"] != tracks[1]["subject"]


def unit(*weights):
    v = np.zeros((1, 1024), np.float32)
    v[0, :len(weights)] = weights
    return v / np.linalg.norm(v)


def test_faces_decide_when_they_agree_or_clearly_differ_and_clothing_decides_in_between():
    cloth = np.random.default_rng(0).random(256).astype(np.float32)
    other = np.random.default_rng(1).random(256).astype(np.float32)
    a, b = unit(1.0), unit(0.0, 1.0)  # cosine 0: two different faces
    looks = [TrackLook("T1", 0, 5, cloth, a), TrackLook("T2", 10, 15, cloth, b), TrackLook("T3", 20, 25, other, a)]
    face, clothing, apart = score_matrices(looks)
    assert face[0, 2] == pytest.approx(1.0) and face[0, 1] == pytest.approx(0.0) and apart[0, 0] and not apart[0, 1]
    # the same clothes do not join T1 and T2 (faces differ); the same face joins T1 and T3 in other clothes
    assert link_looks(looks) == [[0, 2], [1]]
    # without faces the clothes decide: T1 and T2
    assert link_looks([TrackLook(lk.track_id, lk.first_s, lk.last_s, lk.clothing, None) for lk in looks]) == [[0, 1],
                                                                                                          [2]]
    # faces neither alike nor clearly different (cosine 0.55): the clothes decide
    unsure = [TrackLook("T1", 0, 5, cloth, unit(1.0, 0.0)), TrackLook("T2", 10, 15, cloth, unit(0.55, 0.835))]
    assert score_matrices(unsure)[0][0, 1] == pytest.approx(0.55, abs=0.01) and link_looks(unsure) == [[0, 1]]


def test_average_linkage_does_not_chain_through_a_middle_track():
    """A is like B and B like C, but A and C differ: average linkage keeps the third out once two merged."""
    rng = np.random.default_rng(1)
    base = rng.random(256).astype(np.float32)
    a, c = base.copy(), base.copy()
    a[:128] += 2 * rng.random(128).astype(np.float32)
    c[128:] += 2 * rng.random(128).astype(np.float32)
    b = (a + c) / 2
    looks = [TrackLook("T1", 0, 1, a, None), TrackLook("T2", 2, 3, b, None), TrackLook("T3", 4, 5, c, None)]
    _, clothing, _ = score_matrices(looks)
    threshold = (clothing[0, 1] + clothing[1, 2]) / 2 - 0.01
    assert clothing[0, 2] < threshold - 0.1
    assert len(link_looks(looks, clothing_same=threshold)) == 2


def test_sample_boxes_spread_and_linker_id():
    tr = {"boxes": [[k / 2, 0, 0, 1, 1] for k in range(40)]}
    picked = sample_boxes(tr)
    assert len(picked) == SAMPLES and picked[0][0] == 0.0 and picked[-1][0] == 19.5
    assert sample_boxes({"boxes": tr["boxes"][:3]}) == tr["boxes"][:3]
    assert linker_id(True) != linker_id(False) and "faces=none" in linker_id(False)


@pytest.mark.parametrize("tracks", [[], [{"id": "T1", "label": "car", "first_s": 0, "last_s": 1, "boxes": []}]])
def test_no_person_track_no_subject(tracks):
    assert link_person_tracks(tracks, lambda ts: []) == []


def test_kept_faces_round_trip_through_the_index_file(tmp_path):
    rng = np.random.default_rng(3)
    many = rng.standard_normal((3 * KEPT_FACES, 1024)).astype(np.float32)
    many /= np.linalg.norm(many, axis=1, keepdims=True)
    subjects = [{"id": "P1", "faces": many[:KEPT_FACES]}, {"id": "P2", "faces": None}, {"id": "P3", "faces": many[:2]}]
    path = tmp_path / "person_faces.npz"
    save_subject_faces(path, subjects)
    got = load_subject_faces(path)
    assert set(got) == {"P1", "P3"} and got["P1"].shape == (KEPT_FACES, 1024) and got["P1"].dtype == np.float32
    assert np.allclose(got["P1"], many[:KEPT_FACES], atol=2e-3)  # float16 on disk, unit rows again on load
    assert np.allclose(np.linalg.norm(got["P3"], axis=1), 1.0, atol=1e-5)
    assert [p.name for p in tmp_path.iterdir()] == ["person_faces.npz"]  # no temporary file left
    save_subject_faces(path, [])
    assert load_subject_faces(path) == {} and load_subject_faces(tmp_path / "missing.npz") == {}
    path.write_bytes(b"not an archive")
    with pytest.raises((ValueError, OSError)):
        load_subject_faces(path)


def test_a_subject_keeps_faces_spread_over_its_tracks():
    """Three tracks of one person, each with faces: the subject keeps KEPT_FACES of them, spread over all three."""
    tracks, frames_at = video([("red-blue", 0.0, 9.5, 20), ("red-blue", 20.0, 29.5, 20), ("red-blue", 40.0, 49.5, 20)],
                              50)
    marks = iter(range(10_000))

    class Faces:  # stand-ins for BlazeFace and FaceRes (named as such): one big face per head; one face with a
        def detect(self, image):  # small mark of its own (axis 1 + the k-th face read) to tell them apart
            return [SimpleNamespace(score=0.9, box=(0.0, 0.0, 150.0, 150.0))]

        def describe(self, image, boxes):
            v = np.zeros(1024, np.float32)
            v[0], v[1 + next(marks)] = 1.0, 0.05
            return [SimpleNamespace(vector=v / np.linalg.norm(v))]

    subjects = link_person_tracks(tracks, frames_at, Faces(), Faces())
    assert len(subjects) == 1 and subjects[0]["tracks"] == ["T1", "T2", "T3"] and subjects[0]["linked_by"] == "face"
    kept = subjects[0]["faces"]
    assert 3 * SAMPLES > KEPT_FACES and kept.shape == (KEPT_FACES, 1024)
    marks_kept = kept[:, 1:].argmax(axis=1)
    assert marks_kept[0] == 0 and marks_kept[-1] == 3 * SAMPLES - 1 and list(marks_kept) == sorted(marks_kept)
