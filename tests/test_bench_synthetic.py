"""The development benchmark's synthetic questions (bench/make_videos.py, bench/questions/synthetic.jsonl).

Fast: nothing is encoded; a few frames are drawn with the same renderer the videos use.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from avi.agent.question import parse_options

REPO = Path(__file__).resolve().parent.parent
COMMITTED = REPO / "bench" / "questions" / "synthetic.jsonl"
KEYS = ["qid", "video", "question", "type", "answer", "options", "tags", "source", "split", "how"]  # bench/README.md
TYPES = {"choice", "text", "number", "yesno", "interval", "cannot_tell"}


@pytest.fixture(scope="module")
def mv():
    spec = importlib.util.spec_from_file_location("bench_make_videos", REPO / "bench" / "make_videos.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def lines() -> list[dict]:
    return [json.loads(line) for line in COMMITTED.read_text(encoding="utf-8").splitlines()]


def test_committed_file_is_what_the_generator_writes(mv):
    assert COMMITTED.read_text(encoding="utf-8") == mv.questions_jsonl(), \
        "bench/questions/synthetic.jsonl is stale: run python bench/make_videos.py --questions-only"


def test_synthetic_md_tables_are_current(mv):
    text = (REPO / "bench" / "SYNTHETIC.md").read_text(encoding="utf-8")
    a, b = text.index(mv.BEGIN) + len(mv.BEGIN), text.index(mv.END)
    assert text[a:b].strip() == mv.event_tables().strip(), \
        "bench/SYNTHETIC.md's event tables are stale: run python bench/make_videos.py --questions-only"


def test_every_line_is_valid(mv, lines):
    durations = {v.name: v.spec.duration_s for v in mv.videos()}
    assert len({q["qid"] for q in lines}) == len(lines)
    for q in lines:
        qid = q["qid"]
        assert list(q) == [k for k in KEYS if k in q], qid  # README's keys, in its order
        assert {"qid", "video", "question", "type", "answer", "tags", "source", "how"} <= set(q), qid
        assert q["video"] in durations and q["source"] == "synthetic" and q["how"].strip(), qid
        assert q["type"] in TYPES and isinstance(q["tags"], list), qid
        opts = parse_options(q["question"])
        a = q["answer"]
        if q["type"] == "choice":
            assert len(q["options"]) == 4 and a in "ABCD" and len(a) == 1, qid
            assert opts == dict(zip("ABCD", q["options"])), qid  # avi reads the same options from the text
            assert sum(t.startswith("mc:") for t in q["tags"]) == 1, qid
        else:
            assert "options" not in q and opts == {}, qid
        if q["type"] == "text":
            assert isinstance(a, list) and a and all(isinstance(s, str) and s.strip() for s in a), qid
        if q["type"] == "number":
            assert isinstance(a, (int, float)) and not isinstance(a, bool), qid
        if q["type"] == "yesno":
            assert a in ("yes", "no"), qid
        if q["type"] == "interval":
            assert len(a) == 2 and 0 <= a[0] < a[1] <= durations[q["video"]], qid
        if q["type"] == "cannot_tell":
            assert a is None or (isinstance(a, list) and a), qid


def test_mix_is_balanced(lines):
    assert len(lines) >= 33
    assert all(n >= 11 for n in Counter(q["video"] for q in lines).values())
    types = Counter(q["type"] for q in lines)
    assert set(types) == TYPES and types["cannot_tell"] >= 3
    letters = Counter(q["answer"] for q in lines if q["type"] == "choice")
    assert set(letters) == set("ABCD") and max(letters.values()) - min(letters.values()) <= 1, letters
    formats = Counter(t for q in lines for t in q["tags"] if t.startswith("mc:"))
    assert set(formats) == {"mc:paren", "mc:dot", "mc:bracket", "mc:lines"}
    assert max(formats.values()) - min(formats.values()) <= 1, formats
    yn = Counter(q["answer"] for q in lines if q["type"] == "yesno")
    assert abs(yn["yes"] - yn["no"]) <= 1, yn
    kinds = {t for q in lines for t in q["tags"] if t.startswith("tw:")}
    assert len(kinds) >= 4 and all("time_words" in q["tags"] for q in lines if any(t.startswith("tw:")
                                                                                     for t in q["tags"]))
    for tag in ("speech", "colour", "count", "ocr", "small_text"):
        assert any(tag in q["tags"] for q in lines), tag
    spans = [q["answer"] for q in lines if q["type"] == "interval"]
    assert any(b - a > 10 for a, b in spans) and any(a % 5 or b % 5 for a, b in spans)


def test_videos_are_long_and_fit_the_frame(mv):
    for v in mv.videos():
        assert v.spec.duration_s >= 600 and v.spec.size == (640, 360)
        mv.check_layout(v)
        # events spread over the whole video: something starts in every third of it
        starts = [x.start_s for x in [*v.spec.texts, *v.spec.shapes]] + [s.start_s for s in v.speech]
        d = v.spec.duration_s
        assert all(any(k * d / 3 <= s < (k + 1) * d / 3 for s in starts) for k in range(3)), v.name


def _diff(frame: np.ndarray, box, bg: str) -> float:
    """Mean absolute difference from the background colour inside ``box``."""
    import synth  # noqa: F401  (on sys.path via conftest)
    from PIL import ImageColor

    l, t, r, b = box
    ref = np.array(ImageColor.getrgb(bg), dtype=np.float32)
    return float(np.abs(frame[t:b, l:r].astype(np.float32) - ref).mean())


@pytest.mark.parametrize("video,needle", [("lecture", "Room C305"), ("lecture", "FAMOUS LIGHTHOUSES"),
                                          ("mixed", "Gate 7"), ("mixed", "HALF TIME")])
def test_text_event_is_drawn_where_the_list_says(mv, video, needle):
    import synth

    v = mv.VIDEOS[video]()
    _, tx = mv.text_event(v.spec, needle)
    box = synth.text_box(tx)
    rng = np.random.default_rng(0)
    inside = (tx.start_s + tx.end_s) / 2
    assert v.spec.size == synth.render_frame(v.spec, inside, rng).shape[1::-1]
    for t, drawn in [(tx.start_s, True), (inside, True), (tx.end_s - 0.2, True),
                     (tx.start_s - 0.2, False), (tx.end_s, False)]:
        others = [x for x in mv.visible(v.spec.texts, t) if x is not tx and _overlap(synth.text_box(x), box)]
        if others:  # another event draws here then: only check when the box is ours alone
            continue
        frame = synth.render_frame(v.spec, t, rng)
        d = _diff(frame, box, mv.scene_at(v.spec, t)[1])
        assert (d > 8) == drawn, (needle, t, d)


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_moving_shape_is_drawn_at_its_position(mv):
    import synth

    v = mv.shapes()
    sq = next(s for s in v.spec.shapes if s.kind == "square" and s.speed_px_s > 0)
    rng = np.random.default_rng(0)
    for t in (sq.start_s + 1, sq.end_s - 1):
        frame = synth.render_frame(v.spec, t, rng)
        l, top, r, b = sq.box(t)
        core = frame[top + 5:b - 5, l + 5:r - 5].reshape(-1, 3).mean(axis=0)
        assert np.allclose(core, [0xE0, 0x20, 0x20], atol=6), (t, core)
    assert sq.box(sq.end_s - 1)[0] > sq.box(sq.start_s + 1)[0]  # moves right, as the question's truth says


def test_spec_hash_follows_the_event_lists(mv):
    a, b = mv.lecture(), mv.lecture()
    assert mv.spec_hash(a) == mv.spec_hash(b)
    b.spec.texts[0] = replace(b.spec.texts[0], end_s=b.spec.texts[0].end_s + 1)
    assert mv.spec_hash(a) != mv.spec_hash(b)
    c = mv.lecture()
    c.speech[0] = replace(c.speech[0], start_s=7.0)
    assert mv.spec_hash(a) != mv.spec_hash(c)
