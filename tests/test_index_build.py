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
from avi.index.build import ensure_index, find_index, index_components, index_key
from avi.index.person_subjects import linker_id
from avi.index.store import SCHEMA_VERSION, VideoIndex
from avi.index.tracks import tracker_id
from avi.index.transcript import plan_transcript
from avi.video.decode import file_sha256, probe

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
    """Real embedder (from the session backends), stub captioner; no LLM (the tests turn the LLM stages off)."""

    def __init__(self, real):
        self.embedder = real.embedder
        self.captioner = StubCaptioner()
        self.settings = real.settings
        self._real = real

    def captioner_id(self, settings=None):
        return self._real.captioner_id(settings)

    def embedder_id(self, settings=None):
        return self._real.embedder_id(settings)

    def llm_id(self, settings=None):
        return self._real.llm_id(settings)

    def close(self):
        pass


def S(root: Path, **kw) -> Settings:
    """Settings for these tests: indexes under ``root``, the LLM stages off."""
    return Settings(index_root=root, graph_llm=False, summary_llm=False, **kw)


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


def test_layout_of_a_built_index(sign_index, sign_video, session_backends):
    path = sign_index.path
    sha = file_sha256(sign_video)
    assert KEY_RE.match(path.name), path.name
    assert path.name.startswith(sha[:16])
    settings = S(path.parent)
    expected = index_key(sha, settings, index_components(plan_transcript(sign_video, settings), settings,
                                                         session_backends))
    assert path.name == expected
    # the transcript setup is part of the key
    off = S(path.parent, transcript="off")
    assert expected != index_key(sha, off, index_components(plan_transcript(sign_video, off), off, session_backends))

    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["complete"] is True and manifest["schema"] == SCHEMA_VERSION == 2 and manifest["key"] == path.name
    assert manifest["video"]["sha256"] == sha
    assert manifest["video"]["duration_s"] == pytest.approx(20.0, abs=0.2)
    assert manifest["captioner"] == PerceptionCaptioner.name
    assert manifest["embedder"] == {"name": "all-minilm-l6-v2", "dim": 384}
    assert manifest["counts"]["clips"] == 4
    assert manifest["counts"]["frames"] == 40  # 2 fps over 20 s
    # the tracker's setup and the person linker's (with or without the face models) are part of the key
    assert manifest["components"]["tracker"] in (tracker_id(linker_id(True)), tracker_id(linker_id(False)))
    tracks = json.loads((path / "tracks.json").read_text())
    assert isinstance(tracks, list) and tracks == sign_index.tracks
    assert manifest["counts"]["tracks"] == len(tracks) and "tracks" in manifest["build_seconds"]
    assert (path / "person_faces.npz").is_file() and sign_index.person_faces == {}  # kept faces: none (no people)
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
    idx = ensure_index(sign_video, S(root), session_backends, progress=False)
    assert idx.path == path
    assert (path / "manifest.json").read_text() == before
    assert [c.text for c in idx.captions] == [c.text for c in sign_index.captions]
    assert "EXIT 42" in idx.search("EXIT 42", session_backends.embedder)[0].caption.text
    assert sorted(p.name for p in root.iterdir()) == [path.name]


@pytest.mark.parametrize("field, value", [("clip_seconds", 4.0), ("fps", 1.0), ("max_side", 640),
                                          ("caption_ocr_frames", 2), ("embedder", "other-embedder")])
def test_fingerprint_fields_change_the_key(sign_video, stub_backends, root, field, value):
    base, _, sha, *_ = find_index(probe(sign_video), S(root), stub_backends)
    other, *_ = find_index(probe(sign_video), S(root, **{field: value}), stub_backends)
    assert other != base and other.parent == base.parent == root
    assert other.name[:16] == base.name[:16] == sha[:16]


@pytest.mark.parametrize("field, value", [("top_k", 4), ("max_iterations", 3), ("llm_temperature", 0.5)])
def test_other_settings_keep_the_key(sign_video, stub_backends, root, field, value):
    base, *_ = find_index(probe(sign_video), S(root), stub_backends)
    same, *_ = find_index(probe(sign_video), S(root, **{field: value}), stub_backends)
    assert same == base


def test_changed_fingerprint_builds_a_new_directory(sign_index, sign_video, stub_backends, root):
    old = copy_index(sign_index, root)
    idx = ensure_index(sign_video, S(root, clip_seconds=4.0), stub_backends, progress=False)
    assert idx.path != old and idx.path.parent == root
    assert stub_backends.captioner.calls == 5  # 20 s in 4 s clips
    assert idx.manifest["settings"]["clip_seconds"] == 4.0 and idx.manifest["counts"]["clips"] == 5
    assert (old / "manifest.json").exists()  # the other setup's index is untouched
    assert [h for h in hidden(root) if not h.endswith(".lock")] == []


# ---------------------------------------------------------------- crash safety


def test_failed_build_resumes_without_redoing_finished_clips(sign_video, stub_backends, root, monkeypatch):
    captioner = stub_backends.captioner
    real = captioner.caption

    def third_fails(clip, frames, previous=None):
        if clip.index == 2:
            raise RuntimeError("captioner crashed on the third clip")
        return real(clip, frames, previous)

    monkeypatch.setattr(captioner, "caption", third_fails)
    settings = S(root)
    final, *_ = find_index(probe(sign_video), settings, stub_backends)
    with pytest.raises(RuntimeError, match="third clip"):
        ensure_index(sign_video, settings, stub_backends, progress=False)
    assert captioner.calls == 2
    assert not final.exists()  # nothing a later run would trust ...
    partial = root / f".{final.name}.partial"
    assert len((partial / "captions.partial.jsonl").read_text().splitlines()) == 2  # ... but the work is kept

    seen = []
    monkeypatch.setattr(captioner, "caption", lambda clip, frames, previous=None: (
        seen.append(clip.index), real(clip, frames, previous))[1])
    idx = ensure_index(sign_video, settings, stub_backends, progress=False)
    assert seen == [2, 3]  # only the missing clips
    assert idx.manifest["complete"] is True and idx.manifest["counts"]["clips"] == 4
    assert idx.manifest["resumed"] == {"resumed": True, "clips_captioned_in_last_run": 2}
    assert [c.clip_index for c in idx.captions] == [0, 1, 2, 3]
    assert idx.captions[2].data["frames_s"][0] == pytest.approx(10.0)  # the resumed decode starts at clip 2
    assert not partial.exists()


def test_torn_last_line_is_cut_and_redone(sign_video, stub_backends, root):
    settings = S(root)
    final, *_ = find_index(probe(sign_video), settings, stub_backends)
    partial = root / f".{final.name}.partial"
    partial.mkdir(parents=True)
    good = Caption(0, 0.0, 5.0, "Stub caption of clip 0: kept.", PerceptionCaptioner.name,
                   {"frames_s": [0.0], "subject_registry": {}, "ocr": []})
    (partial / "captions.partial.jsonl").write_text(json.dumps(good.to_dict()) + "\n" + '{"clip_index": 1, "sta')
    idx = ensure_index(sign_video, settings, stub_backends, progress=False)
    assert stub_backends.captioner.calls == 3  # clips 1-3; clip 0 came from the partial file
    assert idx.captions[0].text == "Stub caption of clip 0: kept."


def test_a_second_builder_is_refused(sign_video, stub_backends, root):
    import fcntl

    settings = S(root)
    final, *_ = find_index(probe(sign_video), settings, stub_backends)
    root.mkdir(parents=True)
    with open(root / f".{final.name}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        f.write("4242")
        f.flush()
        with pytest.raises(AviError, match="another avi process"):
            ensure_index(sign_video, settings, stub_backends, progress=False)
    assert stub_backends.captioner.calls == 0
    ensure_index(sign_video, settings, stub_backends, progress=False)  # free again


class SlowConcurrentCaptioner(StubCaptioner):
    """Test double declaring concurrency: sleeps so that several clips are in flight at once."""

    concurrency = 3

    def __init__(self):
        super().__init__()
        import threading

        self.active = 0
        self.peak = 0
        self._lock = threading.Lock()

    def caption(self, clip, frames, previous=None):
        with self._lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        time.sleep(0.3 if clip.index % 2 == 0 else 0.05)  # finish out of order
        with self._lock:
            self.active -= 1
        return super().caption(clip, frames, previous)


def test_concurrent_captioning_keeps_clip_order(sign_video, stub_backends, root):
    stub_backends.captioner = SlowConcurrentCaptioner()
    idx = ensure_index(sign_video, S(root), stub_backends, progress=False)
    assert stub_backends.captioner.peak >= 2
    assert [c.clip_index for c in idx.captions] == [0, 1, 2, 3]
    assert all(f"clip {c.clip_index}:" in c.text for c in idx.captions)


def _set_incomplete(path: Path) -> None:
    m = json.loads((path / "manifest.json").read_text())
    m["complete"] = False
    (path / "manifest.json").write_text(json.dumps(m))


def _break_manifest(path: Path) -> None:
    (path / "manifest.json").write_text('{"schema": 1, "complete": tr')


def _drop_captions(path: Path) -> None:
    (path / "captions.jsonl").unlink()


def _drop_both_captions(path: Path) -> None:
    (path / "captions.jsonl").unlink()
    (path / "captions.partial.jsonl").unlink()


@pytest.mark.parametrize("damage", [_set_incomplete, _break_manifest, _drop_captions, _drop_both_captions])
def test_untrusted_directory_is_rebuilt(sign_index, sign_video, stub_backends, root, damage):
    """A directory at the index's place that fails its checks is rebuilt, taking over every stage whose files
    pass (issue 55): a damaged manifest keeps the captions; captions.jsonl alone lost keeps them too (taken from
    the finished-clips file); both caption files lost caption again."""
    path = copy_index(sign_index, root)
    damage(path)
    if damage not in (_drop_captions, _drop_both_captions):
        with pytest.raises(AviError):
            VideoIndex(path)
    idx = ensure_index(sign_video, S(root), stub_backends, progress=False)
    assert idx.path == path
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["complete"] is True and manifest["rebuilt_from_broken"] and manifest["broken_files"]
    if damage is _drop_both_captions:
        assert stub_backends.captioner.calls == 4 and idx.captions[0].text.startswith("Stub caption")
    else:
        assert stub_backends.captioner.calls == 0
        assert [c.text for c in idx.captions] == [c.text for c in sign_index.captions]
    assert hidden(root) == []  # the replaced directory is gone too


def test_rebuild_replaces_a_complete_index(sign_index, sign_video, stub_backends, root):
    path = copy_index(sign_index, root)
    idx = ensure_index(sign_video, S(root), stub_backends, rebuild=True, progress=False)
    assert idx.path == path and stub_backends.captioner.calls == 4
    assert idx.captions[0].text.startswith("Stub caption")
    assert "Stub caption" in idx.search("clip 2", stub_backends.embedder)[0].caption.text
    assert sorted(p.name for p in root.iterdir()) == [path.name]


def test_rebuild_after_the_old_index_was_opened_serves_the_new_collection(sign_index, sign_video, session_backends,
                                                                          stub_backends, root):
    copy_index(sign_index, root)
    settings = S(root)
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


# ---------------------------------------------------------------- a killed `avi index`


@pytest.fixture(scope="module")
def short_video(tmp_path_factory):
    from synth import Spec, Text, make_video

    spec = Spec(duration_s=1.0, scenes=[(0.0, "navy")], texts=[Text("EXIT 42", 0.0, 1.0)])
    return make_video(tmp_path_factory.mktemp("short") / "short.mp4", spec)


def test_sigterm_during_build_leaves_no_trusted_index(short_video, tmp_path):
    root = tmp_path / "indexes"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AVI_")}
    env.update(AVI_INDEX_ROOT=str(root), AVI_HOME=str(tmp_path / "home"), AVI_TRACE_DIR=str(tmp_path / "traces"),
               AVI_GRAPH_LLM="false", AVI_SUMMARY_LLM="false")
    argv = [AVI, "index", str(short_video), "--quiet", "--json"]

    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    try:
        # Stop the process as soon as it starts captioning, check the build is not finished, and only then send
        # SIGTERM (delivered on SIGCONT): a plain sleep-then-signal raced the end of a 1-second build on a fast
        # machine, where the signal landed in the interpreter's exit and the exit status stayed 0.
        deadline = time.monotonic() + 60
        while not list(root.glob(".*.partial/captions.partial.jsonl")):
            assert proc.poll() is None, f"avi index ended before captioning: {proc.communicate()}"
            assert time.monotonic() < deadline, "no partial captions file appeared"
            time.sleep(0.01)
        proc.send_signal(signal.SIGSTOP)
        finished = [p for p in root.glob("*/manifest.json") if json.loads(p.read_text()).get("complete")]
        if proc.poll() is not None or finished or list(root.glob(".*.partial/chroma")):
            proc.send_signal(signal.SIGCONT)
            pytest.fail(f"the build got past captioning before it could be stopped: {proc.communicate()}")
        proc.send_signal(signal.SIGTERM)
        proc.send_signal(signal.SIGCONT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.kill()
            proc.wait()
    assert proc.returncode != 0
    assert "Traceback" not in err
    trusted = [p for p in root.iterdir() if not p.name.startswith(".") and (p / "manifest.json").exists()
               and json.loads((p / "manifest.json").read_text()).get("complete")]
    assert trusted == []
    # the work directory may stay (it is resumed); nothing in it is opened as an index

    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    final = Path(out["index_dir"])
    assert final.parent == root and KEY_RE.match(final.name)
    assert json.loads((final / "manifest.json").read_text())["complete"] is True
    assert out["clips"] == 1
    assert [h for h in hidden(root) if not h.endswith(".lock")] == []


# ---------------------------------------------------------------- folders and the LLM stages


def test_index_a_folder_continues_past_a_bad_video(short_video, tmp_path):
    folder = tmp_path / "videos"
    folder.mkdir()
    shutil.copy(short_video, folder / "a.mp4")
    shutil.copy(short_video, folder / "b.mp4")  # same content: the second reuses the first's index
    (folder / "broken.mp4").write_text("not a video")
    (folder / "notes.txt").write_text("ignored: not a video suffix")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AVI_")}
    env.update(AVI_INDEX_ROOT=str(tmp_path / "indexes"), AVI_HOME=str(tmp_path / "home"),
               AVI_GRAPH_LLM="false", AVI_SUMMARY_LLM="false")
    r = subprocess.run([AVI, "index", str(folder), "--json", "--quiet"], env=env, capture_output=True, text=True,
                       timeout=300, stdin=subprocess.DEVNULL)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1] == "avi: error: 1 of 3 videos failed to index"
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    ok = [row for row in rows if "index_dir" in row]
    bad = [row for row in rows if "error" in row]
    assert [Path(row["video"]).name for row in ok] == ["a.mp4", "b.mp4"] and ok[0]["index_dir"] == ok[1]["index_dir"]
    assert [Path(row["video"]).name for row in bad] == ["broken.mp4"] and "not a readable video" in bad[0]["error"]


@pytest.mark.slow
def test_llm_stages_with_the_real_orchestrator(sign_video, session_backends, tmp_path):
    """Graph extraction and the hierarchical summary with the real 1.5B model (AVI §3.2.3, §6.2)."""
    settings = Settings(index_root=tmp_path / "indexes", home=tmp_path / "home")
    idx = ensure_index(sign_video, settings, session_backends, progress=False)
    summary = json.loads((idx.path / "summary.json").read_text())
    assert summary["llm"] and summary["segments"] and summary["video"]
    assert summary["segments"][0]["start_s"] == 0.0 and summary["segments"][-1]["end_s"] == pytest.approx(20.0)
    extraction = idx.graph.graph["extraction"]
    assert extraction["llm"] and extraction["chunks"] == 1
    m = idx.manifest
    assert m["components"]["llm"].startswith("qwen2.5-coder-1.5b-instruct@")
    assert m["build_seconds"]["graph"] > 0 and m["build_seconds"]["summary"] > 0
    assert set(m["components"]["prompts"]) >= {"graph_extract", "summary_segment", "summary_video"}


def test_sigkill_mid_captions_resumes_from_the_last_finished_clip(tmp_path):
    """A build killed with SIGKILL (no handler runs) while captioning resumes: the clips already in
    captions.partial.jsonl are kept byte for byte and only the rest are captioned."""
    from synth import Spec, Text, make_video

    video = make_video(tmp_path / "long.mp4", Spec(duration_s=60.0, scenes=[(0.0, "navy"), (30.0, "olive")],
                                                   texts=[Text("GATE 7", 10.0, 40.0)]))
    root = tmp_path / "indexes"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AVI_")}
    env.update(AVI_INDEX_ROOT=str(root), AVI_HOME=str(tmp_path / "home"), AVI_GRAPH_LLM="false",
               AVI_SUMMARY_LLM="false", AVI_TRANSCRIPT="off")
    argv = [AVI, "index", str(video), "--quiet", "--json"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        partial: list[Path] = []
        while True:
            assert proc.poll() is None, f"avi index ended before 3 clips were captioned: {proc.communicate()}"
            assert time.monotonic() < deadline, "captioning did not reach 3 clips"
            partial = list(root.glob(".*.partial/captions.partial.jsonl"))
            if partial and partial[0].read_bytes().count(b"\n") >= 3:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    done = partial[0].read_bytes()
    done = done[:done.rfind(b"\n") + 1]  # whole lines only (a torn last line is cut on resume)
    n_done = done.count(b"\n")
    assert 3 <= n_done < 12

    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    final = Path(json.loads(r.stdout)["index_dir"])
    manifest = json.loads((final / "manifest.json").read_text())
    assert manifest["complete"] and manifest["counts"]["clips"] == 12
    assert manifest["resumed"] == {"resumed": True, "clips_captioned_in_last_run": 12 - n_done}
    def comparable(c: dict) -> dict:  # the subject merge (after captioning) adds global ids to the registry
        data = {k: v for k, v in c["data"].items() if k != "subject_registry"}
        reg = {k: {f: v for f, v in s.items() if f != "global_id"} for k, s in c["data"]["subject_registry"].items()}
        return {**c, "data": data, "registry": reg}

    lines = [comparable(json.loads(x)) for x in done.decode().splitlines()]
    kept = [comparable(json.loads(x)) for x in (final / "captions.jsonl").read_text().splitlines()][:n_done]
    assert kept == lines


# ---------------------------------------------------------------- LLM stages after the first question (issue 17)


class FakeIndexLLM:
    """A scripted stand-in for the orchestrator in the two LLM stages: graph extraction gets an empty graph
    (schema-valid JSON), the summary calls get one sentence; counts its calls."""

    def __init__(self):
        self.calls = 0

    def chat(self, messages, tools=None, **kw):
        from avi.backends.llm import ChatResult

        self.calls += 1
        content = '{"subjects": [], "interactions": []}' if kw.get("json_schema") else "A short summary."
        return ChatResult(content=content, prompt_tokens=10, completion_tokens=5, seconds=0.01)


def test_search_stages_first_then_the_llm_stages(stub_backends, sign_video, root):
    """``stages="search"`` puts a usable index in place before any LLM call; ``finish_index`` (or an
    ``ensure_index`` with every stage) builds the graph and the summary into it, and the manifest says so."""
    from avi.index.build import finish_index, pending_stages

    settings = Settings(index_root=root, graph_llm=True, summary_llm=True)
    stub_backends.llm = FakeIndexLLM()
    index = ensure_index(sign_video, settings, stub_backends, progress=False, stages="search")
    assert index.pending == ["graph", "summary"] == pending_stages(settings)
    assert stub_backends.llm.calls == 0 and not (index.path / "graph.json").exists()
    assert not (index.path / "summary.json").exists() and (index.path / "chroma").is_dir()
    with pytest.raises(AviError, match="not built yet"):
        index.graph  # noqa: B018 - the first graph_retrieve call builds it (tests/test_lazy_stages.py)
    assert ensure_index(sign_video, settings, stub_backends, progress=False, stages="search").pending  # reused
    assert stub_backends.captioner.calls == 4  # captioned once
    done = finish_index(index, settings, stub_backends, progress=False)
    assert done.pending == [] and (done.path / "graph.json").exists() and (done.path / "summary.json").exists()
    m = json.loads((done.path / "manifest.json").read_text())
    assert m["pending"] == [] and {"graph", "summary", "captions"} <= set(m["build_seconds"])
    assert stub_backends.llm.calls > 0 and done.path == index.path
    # an index with nothing pending is returned as it is; the key does not depend on when the stages ran
    assert ensure_index(sign_video, settings, stub_backends, progress=False).path == index.path
    with pytest.raises(ValueError):
        ensure_index(sign_video, settings, stub_backends, stages="some")


def test_every_stage_finishes_a_pending_index(stub_backends, sign_video, root):
    settings = Settings(index_root=root, graph_llm=True, summary_llm=False)
    stub_backends.llm = FakeIndexLLM()
    index = ensure_index(sign_video, settings, stub_backends, progress=False, stages="search")
    assert index.pending == ["graph"] and (index.path / "summary.json").exists()  # no LLM: built at once
    full = ensure_index(sign_video, settings, stub_backends, progress=False)
    assert full.pending == [] and (full.path / "graph.json").exists()


def test_several_videos_wait_only_for_the_search_stages(stub_backends, sign_video, short_video, root):
    """``avi-run`` over several videos: each index is put in place with its LLM stages pending (a tool that needs
    one builds it, as for one video), and finishing one leaves the other as it was."""
    from avi.index.build import finish_index
    from avi.videos.pipeline import prepare_many

    settings = Settings(index_root=root, graph_llm=True, summary_llm=True)
    stub_backends.llm = FakeIndexLLM()
    prepared = prepare_many([sign_video, short_video], settings, stub_backends, progress=False, stages="search")
    assert [p.index.pending for p in prepared.values()] == [["graph", "summary"]] * 2
    assert stub_backends.llm.calls == 0
    first, second = prepared.values()
    assert finish_index(first.index, settings, stub_backends, progress=False).pending == []
    assert VideoIndex(second.index.path).pending == ["graph", "summary"]
