"""avi/index/reuse.py: a new index key starts from the stages a sibling index of the same video already holds.

The sibling is the session's real ``sign_index`` (real captioner and embedder); the new builds use the stub
captioner of test_index_build.py, which counts its calls, so a stage that was copied shows as zero calls and
captions identical to the real ones (a stub caption would read "Stub caption ...").
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_index_build import S, StubBackends, copy_index  # tests/ is on sys.path (conftest)

from avi.index.build import ensure_index
from avi.index.reuse import find_sibling, stage_inputs


@pytest.fixture
def stub_backends(session_backends):
    return StubBackends(session_backends)


@pytest.fixture
def root(tmp_path):
    return tmp_path / "indexes"


def _prompts_with_new_graph_prompt(tmp_path: Path) -> Path:
    src = Path(__file__).resolve().parent.parent / "prompts"
    dst = tmp_path / "prompts"
    shutil.copytree(src, dst)
    (dst / "graph_extract.md").write_text((src / "graph_extract.md").read_text() + "\nList people only.\n")
    return dst


def test_a_graph_prompt_change_reuses_captions_and_embeddings(sign_index, sign_video, stub_backends, root, tmp_path):
    old = copy_index(sign_index, root)
    settings = S(root, prompts_dir=_prompts_with_new_graph_prompt(tmp_path))
    idx = ensure_index(sign_video, settings, stub_backends, progress=False)
    assert idx.path != old  # the prompt is part of the key
    assert stub_backends.captioner.calls == 0
    assert idx.manifest["reused"] == {"from": old.name, "stages": ["transcript", "captions", "embeddings"]}
    assert [c.text for c in idx.captions] == [c.text for c in sign_index.captions]
    hit = idx.search("EXIT 42", stub_backends.embedder)[0]
    assert "EXIT 42" in hit.caption.text  # the copied Chroma collection answers queries
    assert json.loads((old / "manifest.json").read_text())["complete"]  # the sibling is untouched


def test_a_caption_setting_change_captions_again(sign_index, sign_video, stub_backends, root):
    copy_index(sign_index, root)
    idx = ensure_index(sign_video, S(root, caption_ocr_frames=2), stub_backends, progress=False)
    assert stub_backends.captioner.calls == idx.manifest["counts"]["clips"] > 0
    assert idx.manifest["reused"] == {"from": sign_index.path.name, "stages": ["transcript"]}
    assert all(c.text.startswith("Stub caption") for c in idx.captions)


def test_rebuild_reuses_nothing(sign_index, sign_video, stub_backends, root, tmp_path):
    copy_index(sign_index, root)
    settings = S(root, prompts_dir=_prompts_with_new_graph_prompt(tmp_path))
    idx = ensure_index(sign_video, settings, stub_backends, progress=False, rebuild=True)
    assert idx.manifest["reused"] is None and stub_backends.captioner.calls > 0


def test_incomplete_or_unreadable_siblings_are_skipped(sign_index, root):
    old = copy_index(sign_index, root)
    manifest = json.loads((old / "manifest.json").read_text())
    key = old.name.split("-")[0] + "-" + "0" * 12
    fields, components = manifest["settings"], manifest["components"]
    assert find_sibling(root, key, fields, components)[1] == ["transcript", "captions", "embeddings"]
    (old / "manifest.json").write_text(json.dumps({**manifest, "complete": False}))
    assert find_sibling(root, key, fields, components) is None
    (old / "manifest.json").write_text("{not json")
    assert find_sibling(root, key, fields, components) is None


def test_stage_inputs_separate_the_stages():
    base = stage_inputs({"fps": 2.0, "max_side": 1280, "clip_seconds": 5.0, "caption_ocr_frames": 3, "graph_llm": True},
                        {"captioner": "c", "embedder": "e", "transcript": {"mode": "auto"}, "llm": "l",
                         "prompts": {"graph_extract": "g", "caption_clip": "p"}})
    other_llm = stage_inputs({"fps": 2.0, "max_side": 1280, "clip_seconds": 5.0, "caption_ocr_frames": 3,
                              "graph_llm": False},
                             {"captioner": "c", "embedder": "e", "transcript": {"mode": "auto"}, "llm": "m",
                              "prompts": {"graph_extract": "h", "caption_clip": "p"}})
    assert base == other_llm  # LLM, graph settings and graph prompts shape none of the copied stages
    other_embedder = stage_inputs({"fps": 2.0}, {"captioner": "c", "embedder": "x", "transcript": {"mode": "auto"}})
    assert other_embedder["transcript"] == base["transcript"] and other_embedder["embeddings"] != base["embeddings"]
