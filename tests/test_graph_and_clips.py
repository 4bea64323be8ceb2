"""Unit tests for avi/video/clips.py (segmentation) and avi/index/graph/ (entity graph)."""

from __future__ import annotations

import pytest

from avi.backends.types import Caption
from avi.index.graph import build_entity_graph, load_graph, save_graph
from avi.video.clips import Clip, segment
from avi.video.spans import merge_spans

# ----------------------------------------------------------------- segment


def _bounds(clips):
    return [(c.index, c.start_s, c.end_s) for c in clips]


def test_segment_exact_multiple():
    assert _bounds(segment(15.0)) == [(0, 0.0, 5.0), (1, 5.0, 10.0), (2, 10.0, 15.0)]


def test_segment_short_tail_merged():
    assert _bounds(segment(15.3)) == [(0, 0.0, 5.0), (1, 5.0, 10.0), (2, 10.0, 15.3)]


def test_segment_tail_kept_at_threshold():
    assert _bounds(segment(15.5)) == [(0, 0.0, 5.0), (1, 5.0, 10.0), (2, 10.0, 15.0), (3, 15.0, 15.5)]
    assert _bounds(segment(17.0)) == [(0, 0.0, 5.0), (1, 5.0, 10.0), (2, 10.0, 15.0), (3, 15.0, 17.0)]


def test_segment_custom_sizes():
    assert _bounds(segment(12.0, clip_seconds=5.0, min_tail_s=3.0)) == [(0, 0.0, 5.0), (1, 5.0, 12.0)]
    assert _bounds(segment(3.0, clip_seconds=1.0)) == [(0, 0.0, 1.0), (1, 1.0, 2.0), (2, 2.0, 3.0)]


def test_segment_shorter_than_one_clip():
    assert _bounds(segment(0.3)) == [(0, 0.0, 0.3)]


def test_segment_covers_duration_contiguously():
    clips = segment(123.4, clip_seconds=2.5)
    assert clips[0].start_s == 0.0 and clips[-1].end_s == pytest.approx(123.4)
    assert [c.index for c in clips] == list(range(len(clips)))
    for a, b in zip(clips, clips[1:]):
        assert a.end_s == b.start_s and a.start_s < a.end_s


@pytest.mark.parametrize("duration, clip_s", [(0, 5.0), (-1.0, 5.0), (10.0, 0), (10.0, -5.0)])
def test_segment_non_positive_raises(duration, clip_s):
    with pytest.raises(ValueError):
        segment(duration, clip_seconds=clip_s)


def test_clip_helpers():
    c = Clip(7, 35.0, 40.0)
    assert c.id == "clip-00007"
    assert c.contains(35.0) and c.contains(39.99)
    assert not c.contains(40.0) and not c.contains(34.9)


# ----------------------------------------------------------------- merge_spans


def test_merge_spans():
    assert merge_spans([[5.0, 10.0], [0.0, 5.0], [12.0, 13.0], [10.0005, 11.0]]) == [[0.0, 11.0], [12.0, 13.0]]
    assert merge_spans([[0.0, 10.0], [2.0, 3.0]]) == [[0.0, 10.0]]
    assert merge_spans([[0.0, 1.0], [1.1, 2.0]]) == [[0.0, 1.0], [1.1, 2.0]]
    assert merge_spans([[0.0, 1.0], [1.5, 2.0]], gap_s=0.5) == [[0.0, 2.0]]
    assert merge_spans([]) == []


# ----------------------------------------------------------------- build_entity_graph


def _cap(i, subjects=None, ocr=None, cuts=None):
    data = {}
    if subjects is not None:
        data["subject_registry"] = subjects
    if ocr is not None:
        data["ocr"] = ocr
    if cuts is not None:
        data["shot_changes_s"] = cuts
    return Caption(i, 5.0 * i, 5.0 * (i + 1), f"clip {i}", "test", data)


@pytest.fixture
def captions():
    """Four clips: a man and an EXIT sign, then a shot change at 12 s, a dog in a new scene, the man again."""
    return [
        _cap(0, {"s1": {"name": "Man", "first_seen": 1.0, "max_count": 1}}, [{"text": "EXIT", "t_s": 2.0}]),
        _cap(1, {"s1": {"name": "Man", "max_count": 2}}, [{"text": "exit.", "t_s": 6.0}]),
        _cap(2, {"d": {"max_count": 1}}, [{"text": "  ", "t_s": 11.0}], cuts=[12.0]),
        _cap(3, {"s1": {"name": "man", "first_seen": 16.0}}),
    ]


def test_graph_nodes(captions):
    g = build_entity_graph(list(reversed(captions)))  # input order does not matter
    assert set(g.nodes) == {"scene:0", "scene:1", "subject:man", "subject:d", "text:exit"}
    man = g.nodes["subject:man"]
    assert man["kind"] == "subject" and man["name"] == "Man"
    assert man["spans"] == [[0.0, 10.0], [15.0, 20.0]]
    assert man["clips"] == [0, 1, 3]
    assert man["first_seen"] == 1.0
    assert man["max_count"] == 2
    d = g.nodes["subject:d"]
    assert d["name"] == "d" and d["first_seen"] == 10.0 and d["spans"] == [[10.0, 15.0]]
    txt = g.nodes["text:exit"]
    assert txt["kind"] == "text" and txt["name"] == "EXIT"
    assert txt["spans"] == [[0.0, 10.0]] and txt["clips"] == [0, 1] and txt["first_seen"] == 2.0


def test_graph_scenes_split_at_shot_change(captions):
    g = build_entity_graph(captions)
    s0, s1 = g.nodes["scene:0"], g.nodes["scene:1"]
    assert s0["kind"] == s1["kind"] == "scene"
    assert (s0["name"], s1["name"]) == ("scene 0", "scene 1")
    assert s0["spans"] == [[0.0, 10.0]] and s0["clips"] == [0, 1]
    assert s1["spans"] == [[10.0, 20.0]] and s1["clips"] == [2, 3]


def test_graph_contains_edges(captions):
    g = build_entity_graph(captions)
    contains = {(a, b) for a, b, r in g.edges(data="relation") if r == "contains"}
    assert contains == {("scene:0", "subject:man"), ("scene:0", "text:exit"),
                        ("scene:1", "subject:d"), ("scene:1", "subject:man")}
    assert g.edges["scene:1", "subject:man"]["spans"] == [[15.0, 20.0]]
    assert g.edges["scene:0", "subject:man"]["spans"] == [[0.0, 10.0]]


def test_graph_co_occurs_both_directions(captions):
    g = build_entity_graph(captions)
    co = {(a, b) for a, b, r in g.edges(data="relation") if r == "co_occurs"}
    assert co == {("subject:man", "text:exit"), ("text:exit", "subject:man")}
    assert g.edges["subject:man", "text:exit"]["spans"] == [[0.0, 10.0]]
    assert g.edges["text:exit", "subject:man"]["spans"] == [[0.0, 10.0]]
    assert not g.has_edge("subject:man", "subject:d")  # never in the same clip


def test_graph_without_structured_fields():
    g = build_entity_graph([_cap(0), _cap(1)])
    assert list(g.nodes) == ["scene:0"]
    assert g.number_of_edges() == 0
    assert g.nodes["scene:0"]["spans"] == [[0.0, 10.0]]


def test_graph_empty():
    assert build_entity_graph([]).number_of_nodes() == 0


def test_save_load_round_trip(captions, tmp_path):
    g = build_entity_graph(captions)
    path = tmp_path / "graph.json"
    save_graph(g, path)
    h = load_graph(path)
    assert h.is_directed()
    assert dict(h.nodes(data=True)) == dict(g.nodes(data=True))
    assert {(a, b): d for a, b, d in h.edges(data=True)} == {(a, b): d for a, b, d in g.edges(data=True)}
    assert h.nodes["subject:man"]["max_count"] == 2
    assert h.edges["text:exit", "subject:man"]["relation"] == "co_occurs"
