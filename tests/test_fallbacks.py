"""Fallbacks are logged and counted, never silent (issue 22, item 4): broken indexes, unreadable parts, bad packets."""

from __future__ import annotations

import json
import logging
import shutil
from types import SimpleNamespace

import av
import pytest

from avi.config import Settings
from avi.errors import AviError
from avi.index.build import ensure_index
from avi.index.store import VideoIndex
from avi.pipeline import question_fallbacks
from avi.tools.retrieve.common import caption_vectors
from avi.video.decode import DecodeStats, _timed_frames


class _Packet:
    def __init__(self, bad: bool):
        self.bad = bad

    def decode(self):
        if self.bad:
            raise av.error.InvalidDataError(1094995529, "Invalid data found when processing input")
        return []


def test_undecodable_packets_are_counted_and_the_first_logged(caplog):
    container = SimpleNamespace(name="/videos/broken.mp4",
                                demux=lambda stream: iter([_Packet(False), _Packet(True), _Packet(True)]))
    stats = DecodeStats()
    with caplog.at_level(logging.WARNING, logger="avi.video.decode"):
        assert list(_timed_frames(container, None, 0.0, stats)) == []
    assert stats.bad_packets == 2 and "Invalid data" in stats.first_error
    assert stats.to_dict() == {"undecodable_packets": 2, "first_decode_error": stats.first_error}
    assert len([r for r in caplog.records if "broken.mp4" in r.getMessage()]) == 1  # logged once, counted twice
    assert list(_timed_frames(container, None, 0.0)) == []  # without stats: skipped as before


def _copy(index: VideoIndex, tmp_path) -> VideoIndex:
    dst = tmp_path / index.path.name
    shutil.copytree(index.path, dst)
    return VideoIndex(dst)


def test_a_broken_index_is_reported_with_its_cause_then_rebuilt(tmp_path, sign_video, session_backends, caplog):
    settings = Settings(index_root=tmp_path / "indexes", graph_llm=False, summary_llm=False)
    first = ensure_index(sign_video, settings, session_backends, progress=False)
    assert first.manifest["rebuilt_from_broken"] is None
    assert first.manifest["decode"] == {"undecodable_packets": 0, "first_decode_error": None}
    (first.path / "captions.jsonl").write_text("{not json\n")
    with caplog.at_level(logging.WARNING, logger="avi.index.build"):
        again = ensure_index(sign_video, settings, session_backends, progress=False)
    assert "captions.jsonl: line 1: not valid JSON" in again.manifest["rebuilt_from_broken"]
    assert any("cannot be used" in r.getMessage() and "captions.jsonl: line 1: not valid JSON" in r.getMessage()
               for r in caplog.records)
    assert again.manifest["counts"]["clips"] == first.manifest["counts"]["clips"] == len(again.captions)


def test_an_unreadable_graph_is_a_recorded_problem(sign_index, tmp_path, caplog):
    index = _copy(sign_index, tmp_path)
    (index.path / "graph.json").write_text("{")
    with caplog.at_level(logging.WARNING, logger="avi.index.store"), pytest.raises(AviError, match="entity graph"):
        index.graph  # noqa: B018
    assert "graph.json: not valid JSON" in index.problems["entity graph (graph.json)"]
    assert any("graph_retrieve is not offered" in r.getMessage() for r in caplog.records)
    reader = SimpleNamespace(stats=DecodeStats(3, "InvalidDataError: x"))
    assert question_fallbacks(index, reader) == {"index_problems": index.problems, "index_pending": [],
                                                 "undecodable_packets": 3, "first_decode_error": "InvalidDataError: x"}


def test_an_unreadable_collection_is_a_recorded_problem(sign_index, session_backends, tmp_path):
    index = _copy(sign_index, tmp_path)
    shutil.rmtree(index.path / "chroma")
    ctx = SimpleNamespace(index=index, backends=session_backends)
    vecs = caption_vectors(ctx, sorted(index.captions, key=lambda c: c.start_s))
    assert len(vecs) == len(index.captions)  # embedded again from the captions
    assert set(index.problems) == {"clip collection (chroma/)"}
    fresh = _copy(sign_index, tmp_path / "fresh")
    caption_vectors(SimpleNamespace(index=fresh, backends=session_backends), list(fresh.captions))
    assert fresh.problems == {}  # the stored vectors were read: nothing to report
    assert json.loads((fresh.path / "manifest.json").read_text())["decode"]["undecodable_packets"] == 0
