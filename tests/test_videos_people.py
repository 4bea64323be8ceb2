"""People linked across videos by the face descriptors their indexes keep (issue 36, item 2; avi.videos.people).

The indexes are stand-ins (SimpleNamespace with ``person_faces`` and ``tracks``, what VideoIndex gives): the
linking is pure arithmetic on stored descriptors; tests/test_people_models.py runs it on real faces."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from avi.index.person_subjects import FACE_SAME
from avi.videos.people import shared_people, shared_people_lines, subject_spans


def unit(*weights, dim=8):
    """A unit row with ``weights`` on the first axes."""
    v = np.zeros(dim, np.float32)
    v[:len(weights)] = weights
    return v / np.linalg.norm(v)


def index(faces: dict, spans: dict | None = None):
    tracks = [{"id": f"T{i}", "label": "person", "first_s": a, "last_s": b, "subject": sid}
              for i, (sid, (a, b)) in enumerate((spans or {}).items())]
    return SimpleNamespace(person_faces={k: np.stack(v) for k, v in faces.items()}, tracks=tracks)


def test_the_same_face_in_two_videos_is_one_person_and_a_different_face_is_not():
    a = index({"P1": [unit(1, 0.1), unit(1, 0.2)], "P2": [unit(0, 0, 1)]}, {"P1": (0.0, 4.0), "P2": (5.0, 9.0)})
    b = index({"P1": [unit(0, 1)], "P2": [unit(1, 0.15)]}, {"P1": (1.0, 2.0), "P2": (3.0, 7.5)})
    people = shared_people({"car": a, "street": b})
    assert [[(m["video"], m["subject"], m["spans"]) for m in p["people"]] for p in people] == \
        [[("car", "P1", [[0.0, 4.0]]), ("street", "P2", [[3.0, 7.5]])]]
    assert people[0]["face_cosine"] >= FACE_SAME
    assert shared_people_lines(people) == ["- the same person (the face matches) in car [0.0s–4.0s]; "
                                           "street [3.0s–7.5s]"]


def test_the_bound_is_the_mean_cosine_over_all_pairs():
    # one descriptor pair agrees exactly, the other is orthogonal: mean 0.5, under the bound
    a = index({"P1": [unit(1), unit(0, 1)]})
    b = index({"P1": [unit(1)]})
    assert shared_people({"a": a, "b": b}) == []
    assert shared_people({"a": a, "b": b}, face_same=0.5)  # at the bound


def test_subjects_of_one_video_are_not_linked_to_each_other_directly():
    a = index({"P1": [unit(1)], "P2": [unit(1, 0.05)]})  # the within-video linker kept them apart
    assert shared_people({"a": a}) == []
    c = index({"P4": [unit(1, 0.02)]})
    people = shared_people({"a": a, "c": c})  # through another video's subject they are one person
    assert [(m["video"], m["subject"]) for m in people[0]["people"]] == [("a", "P1"), ("a", "P2"), ("c", "P4")]


def test_videos_without_faces_and_indexes_without_the_file_link_nothing():
    a = index({"P1": [unit(1)]})
    assert shared_people({"a": a, "b": index({}), "old": SimpleNamespace(tracks=[])}) == []


def test_subject_spans_merge_a_subjects_tracks_and_skip_other_classes():
    tracks = [{"id": "T1", "label": "person", "first_s": 5.0, "last_s": 8.0, "subject": "P2"},
              {"id": "T2", "label": "person", "first_s": 0.0, "last_s": 2.0, "subject": "P2"},
              {"id": "T3", "label": "person", "first_s": 7.0, "last_s": 9.0, "subject": "P2"},
              {"id": "T4", "label": "car", "first_s": 0.0, "last_s": 9.0},
              {"id": "T5", "label": "person", "first_s": 1.0, "last_s": 3.0, "subject": "P1"}]
    assert subject_spans(tracks) == {"P2": [[0.0, 2.0], [5.0, 9.0]], "P1": [[1.0, 3.0]]}


def test_json_output_over_several_videos_lists_the_shared_people():
    from avi.videos.output import many_json

    shared = [{"people": [{"video": "a", "subject": "P1", "spans": [[0.0, 4.0]]},
                          {"video": "b", "subject": "P2", "spans": [[3.0, 7.5]]}], "face_cosine": 0.81}]
    videos = [{"name": n, "path": f"/v/{n}.mp4", "duration_s": 9.0, "sha256": "x"} for n in ("a", "b")]
    out = many_json(SimpleNamespace(videos=videos, answer_videos=["a"], shared_people=shared))
    assert out["shared_people"] == shared and out["answer_videos"] == ["a"]
    assert many_json(SimpleNamespace(videos=videos, answer_videos=None, shared_people=[]))["shared_people"] == []
    assert many_json(SimpleNamespace(videos=[])) == {}  # one video: the output is unchanged
