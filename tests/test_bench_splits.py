"""The development benchmark's splits (bench/README.md, "Splits"; issue 34) and its pinned package footage
(bench/package_videos.py). Fast: reads the question files; the fetch test uses a wheel made here, no network."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
import zipfile
from collections import Counter, defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
QUESTIONS = REPO / "bench" / "questions"


def rows() -> list[dict]:
    out = []
    for f in sorted(QUESTIONS.glob("*.jsonl")):
        out += [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
    return out


def content(video: str) -> str:
    """Videos that are one recording (carphone pristine/distorted) count as one for the split."""
    return "carphone" if video.startswith("carphone_") else video


def test_every_question_has_a_split_fixed_by_video():
    splits: dict[str, set] = defaultdict(set)
    for q in rows():
        assert q.get("split") in ("tune", "report"), q["qid"]
        splits[content(q["video"])].add(q["split"])
    assert all(len(s) == 1 for s in splits.values()), {v: s for v, s in splits.items() if len(s) > 1}


def test_both_splits_hold_real_and_synthetic_footage():
    by = Counter((q["split"], q["source"]) for q in rows())
    for split in ("tune", "report"):
        assert by[(split, "real")] > 0 and by[(split, "synthetic")] > 0, by


def test_new_footage_is_report_only_and_as_the_issue_asks():
    new = [q for q in rows() if "new_footage" in q["tags"]]
    assert len(new) >= 40 and len({q["video"] for q in new}) >= 4
    assert all(q["split"] == "report" and q["source"] == "real" and q["how"].strip() for q in new)
    types = Counter(q["type"] for q in new)
    assert types["yesno"] >= 10 and types["interval"] >= 8 and types["choice"] >= 10, types
    yes = sum(q["answer"] == "yes" for q in new if q["type"] == "yesno")
    assert abs(2 * yes - types["yesno"]) <= 2  # about half yes
    letters = Counter(q["answer"] for q in new if q["type"] == "choice")
    assert max(letters.values()) - min(letters.get(x, 0) for x in "ABCD") <= 1, letters


@pytest.fixture(scope="module")
def pv():
    spec = importlib.util.spec_from_file_location("bench_package_videos", REPO / "bench" / "package_videos.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_every_new_footage_video_is_pinned(pv):
    pinned = {v.name for v in pv.PACKAGE_VIDEOS}
    assert {q["video"] for q in rows() if "new_footage" in q["tags"]} <= pinned
    for v in pv.PACKAGE_VIDEOS:
        assert len(v.sha256) == 64 and v.version[0].isdigit() and v.member and v.licence


def test_fetch_video_checks_the_pin(pv, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    data = b"\x00\x00\x00\x18ftypmp42 not really a video"
    with zipfile.ZipFile(cache / "demo_pkg-1.0-py3-none-any.whl", "w") as z:
        z.writestr("demo_pkg/data/clip.mp4", data)
    good = pv.PackageVideo("clip.mp4", "demo-pkg", "1.0", "demo_pkg/data/clip.mp4",
                           hashlib.sha256(data).hexdigest(), "test")
    dest = tmp_path / "clip.mp4"
    assert pv.fetch_video(good, dest, cache) is True and dest.read_bytes() == data
    assert pv.fetch_video(good, dest, cache) is False  # already there with the pinned sha256
    bad = pv.PackageVideo("clip.mp4", "demo-pkg", "1.0", "demo_pkg/data/clip.mp4", "0" * 64, "test")
    dest.unlink()
    with pytest.raises(pv.PackageVideoError, match="is not the pinned"):
        pv.fetch_video(bad, dest, cache)
    assert not dest.exists()  # the wrong file is not left behind
    missing = pv.PackageVideo("x.mp4", "demo-pkg", "1.0", "demo_pkg/nothing.mp4", "0" * 64, "test")
    with pytest.raises(pv.PackageVideoError, match="no member"):
        pv.fetch_video(missing, tmp_path / "x.mp4", cache)
