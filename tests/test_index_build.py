"""avi/index/build.py and store.py: layout, content, reuse, fingerprints and crash safety.

What the index contains is checked on the session's ``sign_index``, built by
``ensure_index`` with the real cpu backends (PerceptionCaptioner over RapidOCR
and the HOG/Haar detector, MiniLM embeddings in Chroma). The reuse and crash
tests build further indexes of the same video with the real embedder and a
stub captioner (:class:`StubCaptioner`): real captioning costs ~5 s per clip on
a small CPU, and those tests are about what lands on disk, not about captions.
The SIGTERM test runs the real ``avi index`` console script.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from avi.backends.captioner import PerceptionCaptioner
from avi.backends.types import Caption
from avi.config import Settings
from avi.errors import AviError
from avi.index.build import ensure_index, find_index, index_key
from avi.index.store import SCHEMA_VERSION, VideoIndex
from avi.index.transcript import transcript_fingerprint
from avi.video.decode import file_sha256

AVI = str(Path(__file__).resolve().parent.parent / ".venv" / "bin" / "avi")
KEY_RE = re.compile(r"^[0-9a-f]{16}-[0-9a-f]{12}$")


class StubCaptioner:
    """Stands in for PerceptionCaptioner where only the build's bookkeeping matters; counts its calls."""

    name = PerceptionCaptioner.name

    def __init__(self):
        self.calls = 0

    def caption(self, clip, frames, previous=None) -> Caption:
        self.calls += 1
        return Caption(clip.index, clip.start_s, clip.end_s,
                       f"Stub caption of clip {clip.index}: {len(frames)} frames.", self.name,
                       {"frames_s": [f.t_s for f in frames], "ocr": [], "subject_registry": {}})


class StubBackends:
    """Real embedder (from the session backends), stub captioner."""

    def __init__(self, real):
        self.embedder = real.embedder
        self.captioner = StubCaptioner()
        self.settings = real.settings

    def close(self):
        pass


class FakeEmbedder:
    def __init__(self, name: str, dim: int):
        self.name, self.dim = name, dim

    def embed(self, texts):
        return np.zeros((len(texts), self.dim), dtype=np.float32)


@pytest.fixture
def stub_backends(session_backends):
    return StubBackends(session_backends)


@pytest.fixture
def root(tmp_path):
    return tmp_path / "indexes"


def hidden(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith(".")) if root.exists() else []


def copy_index(index: VideoIndex, root: Path) -> Path:
    """A copy of a built index directory under ``root`` (same key: the key does not depend on the root)."""
    root.mkdir(parents=True, exist_ok=True)
    dst = root / index.path.name
    shutil.copytree(index.path, dst)
    return dst


# ---------------------------------------------------------------- layout and content (real build)


def test_layout_of_a_built_index(sign_index, sign_video):
    path = sign_index.path
    sha = file_sha256(sign_video)
    assert KEY_RE.match(path.name), path.name
    assert path.name.startswith(sha[:16])
    settings = Settings(index_root=path.parent)
    expected = index_key(sha, settings, PerceptionCaptioner.name, "all-minilm-l6-v2",
                         transcript_fingerprint(sign_video, settings))
    assert path.name == expected
    # the transcript setup is part of the key
    assert expected != index_key(sha, settings, PerceptionCaptioner.name, "all-minilm-l6-v2",
                                 transcript_fingerprint(sign_video, Settings(transcript="off")))

    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["complete"] is True and manifest["schema"] == SCHEMA_VERSION == 2 and manifest["key"] == path.name
    assert manifest["video"]["sha256"] == sha
    assert manifest["video"]["duration_s"] == pytest.approx(20.0, abs=0.2)
    assert manifest["captioner"] == PerceptionCaptioner.name
    assert manifest["embedder"] == {"name": "all-minilm-l6-v2", "dim": 384}
    assert manifest["counts"]["clips"] == 4
    assert manifest["counts"]["frames"] == 40  # 2 fps over 20 s
    assert manifest["settings"]["clip_seconds"] == 5.0

    lines = (path / "captions.jsonl").read_text().splitlines()
    assert len(lines) == 4
    caps = [json.loads(line) for line in lines]
    assert [(c["clip_index"], c["start_s"], c["end_s"]) for c in caps] == [
        (0, 0.0, 5.0), (1, 5.0, 10.0), (2, 10.0, 15.0), (3, 15.0, 20.0)]
    assert all(c["text"] and c["captioner"] == PerceptionCaptioner.name for c in caps)
    assert (path / "graph.json").is_file()
    assert (path / "chroma").is_dir()
    assert hidden(path.parent) == []  # no temporary build directory left next to it


def test_captions_report_text_and_shot_change(sign_index):
    caps = sign_index.captions
    with_exit = [c for c in caps if "EXIT 42" in c.text]
    with_room = [c for c in caps if "ROOM 7B" in c.text]
    assert 1 in [c.clip_index for c in with_exit], [c.text for c in caps]  # 5-10 s: the sign is on 5-9 s
    assert all(c.start_s < 9.0 and c.end_s > 4.0 for c in with_exit)  # never outside 4-9 s
    assert 2 in [c.clip_index for c in with_room]  # 10-15 s: the sign is on from 12 s
    assert all(c.start_s < 17.0 and c.end_s > 12.0 for c in with_room)

    cut_clip = caps[2]
    cuts = cut_clip.data["shot_changes_s"]
    assert len(cuts) == 1 and abs(cuts[0] - 10.0) <= 0.5, cuts
    assert re.search(r"[Ss]hot change at (9\.5|10\.0|10\.5)s", cut_clip.text), cut_clip.text
    for c in caps:
        if c.clip_index != 2:
            assert c.data["shot_changes_s"] == [], (c.clip_index, c.data["shot_changes_s"])


def test_search_ranks_the_clip_with_the_text_first(sign_index, session_backends):
    hits = sign_index.search("EXIT 42", session_backends.embedder)
    assert len(hits) == 4
    assert "EXIT 42" in hits[0].caption.text
    sims = [h.similarity for h in hits]
    assert sims == sorted(sims, reverse=True)
    assert all(-1.0 <= s <= 1.0 for s in sims)
    hits = sign_index.search("ROOM 7B", session_backends.embedder, top_k=2)
    assert len(hits) == 2 and all("ROOM 7B" in h.caption.text for h in hits)


def test_graph_has_text_and_scene_nodes(sign_index):
    g = sign_index.graph
    texts = {d["name"]: d for _, d in g.nodes(data=True) if d["kind"] == "text"}
    assert "EXIT 42" in texts, texts
    assert all(0.0 <= s <= e <= 10.0 for s, e in texts["EXIT 42"]["spans"])
    assert "ROOM 7B" in texts
    assert all(10.0 <= s <= e <= 20.0 for s, e in texts["ROOM 7B"]["spans"])
    scenes = sorted((d["spans"] for _, d in g.nodes(data=True) if d["kind"] == "scene"))
    assert scenes == [[[0.0, 10.0]], [[10.0, 20.0]]]


def test_clip_at(sign_index):
    assert sign_index.clip_at(0.0).clip_index == 0
    assert sign_index.clip_at(7.5).clip_index == 1
    assert sign_index.clip_at(19.99).clip_index == 3
    assert sign_index.clip_at(-1.0) is None


# ---------------------------------------------------------------- reuse and fingerprints


def test_second_ensure_index_reuses(sign_index, sign_video, session_backends, root, monkeypatch):
    path = copy_index(sign_index, root)
    before = (path / "manifest.json").read_text()

    def boom(*a, **k):
        raise AssertionError("the captioner was called: the index was rebuilt")

    monkeypatch.setattr(PerceptionCaptioner, "caption", boom)
    idx = ensure_index(sign_video, Settings(index_root=root), session_backends, progress=False)
    assert idx.path == path
    assert (path / "manifest.json").read_text() == before
    assert [c.text for c in idx.captions] == [c.text for c in sign_index.captions]
    assert "EXIT 42" in idx.search("EXIT 42", session_backends.embedder)[0].caption.text
    assert sorted(p.name for p in root.iterdir()) == [path.name]


@pytest.mark.parametrize("field, value", [("clip_seconds", 4.0), ("fps", 1.0), ("max_side", 640),
                                          ("caption_ocr_frames", 2), ("embedder", "other-embedder")])
def test_fingerprint_fields_change_the_key(sign_video, stub_backends, root, field, value):
    base, _, sha = find_index(sign_video, Settings(index_root=root), stub_backends)
    other, _, _ = find_index(sign_video, Settings(index_root=root, **{field: value}), stub_backends)
    assert other != base and other.parent == base.parent == root
    assert other.name[:16] == base.name[:16] == sha[:16]


@pytest.mark.parametrize("field, value", [("top_k", 4), ("max_iterations", 3), ("llm_base_url", "http://x/v1")])
def test_other_settings_keep_the_key(sign_video, stub_backends, root, field, value):
    base, _, _ = find_index(sign_video, Settings(index_root=root), stub_backends)
    same, _, _ = find_index(sign_video, Settings(index_root=root, **{field: value}), stub_backends)
    assert same == base


def test_changed_fingerprint_builds_a_new_directory(sign_index, sign_video, stub_backends, root):
    old = copy_index(sign_index, root)
    idx = ensure_index(sign_video, Settings(index_root=root, clip_seconds=4.0), stub_backends, progress=False)
    assert idx.path != old and idx.path.parent == root
    assert stub_backends.captioner.calls == 5  # 20 s in 4 s clips
    assert idx.manifest["settings"]["clip_seconds"] == 4.0 and idx.manifest["counts"]["clips"] == 5
    assert (old / "manifest.json").exists()  # the other setup's index is untouched
    assert hidden(root) == []


# ---------------------------------------------------------------- crash safety


def test_failed_build_leaves_nothing(sign_video, stub_backends, root, monkeypatch):
    captioner = stub_backends.captioner
    real = captioner.caption

    def third_fails(clip, frames, previous=None):
        if clip.index == 2:
            raise RuntimeError("captioner crashed on the third clip")
        return real(clip, frames, previous)

    monkeypatch.setattr(captioner, "caption", third_fails)
    settings = Settings(index_root=root)
    with pytest.raises(RuntimeError, match="third clip"):
        ensure_index(sign_video, settings, stub_backends, progress=False)
    assert captioner.calls == 2
    assert list(root.iterdir()) == []  # neither the final nor a hidden .building- directory

    monkeypatch.setattr(captioner, "caption", real)
    idx = ensure_index(sign_video, settings, stub_backends, progress=False)
    assert idx.manifest["complete"] is True and idx.manifest["counts"]["clips"] == 4
    assert hidden(root) == []


def _set_incomplete(path: Path) -> None:
    m = json.loads((path / "manifest.json").read_text())
    m["complete"] = False
    (path / "manifest.json").write_text(json.dumps(m))


def _break_manifest(path: Path) -> None:
    (path / "manifest.json").write_text('{"schema": 1, "complete": tr')


def _drop_captions(path: Path) -> None:
    (path / "captions.jsonl").unlink()


@pytest.mark.parametrize("damage", [_set_incomplete, _break_manifest, _drop_captions])
def test_untrusted_directory_is_rebuilt(sign_index, sign_video, stub_backends, root, damage):
    path = copy_index(sign_index, root)
    damage(path)
    if damage is not _drop_captions:
        with pytest.raises(AviError):
            VideoIndex(path)
    idx = ensure_index(sign_video, Settings(index_root=root), stub_backends, progress=False)
    assert idx.path == path
    assert stub_backends.captioner.calls == 4
    assert json.loads((path / "manifest.json").read_text())["complete"] is True
    assert idx.captions[0].text.startswith("Stub caption")
    assert hidden(root) == []  # the replaced directory is gone too


def test_rebuild_replaces_a_complete_index(sign_index, sign_video, stub_backends, root):
    path = copy_index(sign_index, root)
    idx = ensure_index(sign_video, Settings(index_root=root), stub_backends, rebuild=True, progress=False)
    assert idx.path == path and stub_backends.captioner.calls == 4
    assert idx.captions[0].text.startswith("Stub caption")
    assert "Stub caption" in idx.search("clip 2", stub_backends.embedder)[0].caption.text
    assert sorted(p.name for p in root.iterdir()) == [path.name]


def test_rebuild_after_the_old_index_was_opened_serves_the_new_collection(sign_index, sign_video, session_backends,
                                                                          stub_backends, root):
    copy_index(sign_index, root)
    settings = Settings(index_root=root)
    old = ensure_index(sign_video, settings, session_backends, progress=False)
    assert "EXIT 42" in old.search("EXIT 42", session_backends.embedder)[0].caption.text  # opens Chroma
    new = ensure_index(sign_video, settings, stub_backends, rebuild=True, progress=False)
    docs = new.collection(stub_backends.embedder).get(include=["documents"])["documents"]
    assert all(d.startswith("Stub caption") for d in docs), docs


@pytest.mark.parametrize("name, dim", [("other-embedder", 384), ("all-minilm-l6-v2", 128)])
def test_embedder_mismatch_is_refused(sign_index, name, dim):
    idx = VideoIndex(sign_index.path)
    with pytest.raises(AviError, match="rebuild it"):
        idx.collection(FakeEmbedder(name, dim))
    with pytest.raises(AviError):
        idx.search("EXIT 42", FakeEmbedder(name, dim))


def test_stale_building_dir_of_dead_build_is_removed(sign_video, stub_backends, root):
    final, _, _ = find_index(sign_video, Settings(index_root=root), stub_backends)
    root.mkdir(parents=True)
    dead = root / f".{final.name}.building-99999999-dead0000"
    (dead / "chroma").mkdir(parents=True)
    (dead / "captions.jsonl").write_text("half written\n")
    live = root / f".{final.name}.building-{os.getppid()}-live0000"  # a build still running elsewhere
    live.mkdir()
    idx = ensure_index(sign_video, Settings(index_root=root), stub_backends, progress=False)
    assert idx.path == final
    assert not dead.exists()
    assert live.exists()
    assert hidden(root) == [live.name]


# ---------------------------------------------------------------- a killed `avi index`


@pytest.fixture(scope="module")
def short_video(tmp_path_factory):
    from synth import Spec, Text, make_video

    spec = Spec(duration_s=1.0, scenes=[(0.0, "navy")], texts=[Text("EXIT 42", 0.0, 1.0)])
    return make_video(tmp_path_factory.mktemp("short") / "short.mp4", spec)


def test_sigterm_during_build_leaves_no_trusted_index(short_video, tmp_path):
    root = tmp_path / "indexes"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AVI_")}
    env.update(AVI_INDEX_ROOT=str(root), AVI_HOME=str(tmp_path / "home"), AVI_TRACE_DIR=str(tmp_path / "traces"))
    argv = [AVI, "index", str(short_video), "--quiet", "--json"]

    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not list(root.glob(".*.building-*")):
            assert proc.poll() is None, f"avi index ended before building: {proc.communicate()}"
            assert time.monotonic() < deadline, "no .building- directory appeared"
            time.sleep(0.05)
        time.sleep(1.0)  # well inside the build: models load, frames are captioned
        if proc.poll() is not None:
            pytest.fail(f"the build finished before SIGTERM could interrupt it: {proc.communicate()}")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0
    assert "Traceback" not in err
    trusted = [p for p in root.iterdir() if not p.name.startswith(".") and (p / "manifest.json").exists()
               and json.loads((p / "manifest.json").read_text()).get("complete")]
    assert trusted == []
    for p in root.glob(".*.building-*"):  # if one is left, its pid is dead: the next build ignores it
        pid = int(p.name.rsplit("-", 2)[-2])
        assert not Path(f"/proc/{pid}").exists()

    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    final = Path(out["index_dir"])
    assert final.parent == root and KEY_RE.match(final.name)
    assert json.loads((final / "manifest.json").read_text())["complete"] is True
    assert out["clips"] == 1
    assert hidden(root) == []
