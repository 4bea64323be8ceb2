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


ALL = ["transcript", "captions", "embeddings", "graph", "summary"]


def _as_built_with_llm_stages(index_dir: Path, llm: str | None) -> None:
    """Make the copied sibling's manifest say its graph and summary were built with the LLM ``llm`` (the session
    index is built with them off, which needs no LLM; their files stay the structured graph and empty summary)."""
    m = json.loads((index_dir / "manifest.json").read_text())
    m["settings"].update(graph_llm=True, summary_llm=True)
    m["components"]["llm"] = llm
    (index_dir / "manifest.json").write_text(json.dumps(m))


def test_a_graph_prompt_change_reuses_every_stage_but_the_graph(sign_index, sign_video, stub_backends, root,
                                                                 tmp_path):
    old = copy_index(sign_index, root)
    settings = S(root, prompts_dir=_prompts_with_new_graph_prompt(tmp_path)).model_copy(
        update={"graph_llm": True, "summary_llm": True})
    _as_built_with_llm_stages(old, stub_backends.llm_id(settings))
    idx = ensure_index(sign_video, settings, stub_backends, progress=False, stages="search")  # calls no LLM
    assert idx.path != old  # the prompt is part of the key
    assert stub_backends.captioner.calls == 0
    assert idx.manifest["reused"] == {"from": old.name, "stages": ["transcript", "captions", "embeddings", "summary"]}
    assert idx.manifest["pending"] == ["graph"]  # the copied summary is not built again; the graph is
    assert not (idx.path / "graph.json").exists()
    assert (idx.path / "summary.json").read_bytes() == (old / "summary.json").read_bytes()
    assert [c.text for c in idx.captions] == [c.text for c in sign_index.captions]
    hit = idx.search("EXIT 42", stub_backends.embedder)[0]
    assert "EXIT 42" in hit.caption.text  # the copied Chroma collection answers queries
    assert json.loads((old / "manifest.json").read_text())["complete"]  # the sibling is untouched


def test_another_llm_reuses_neither_llm_stage(sign_index, sign_video, stub_backends, root):
    old = copy_index(sign_index, root)
    _as_built_with_llm_stages(old, "another-llm")
    settings = S(root).model_copy(update={"graph_llm": True, "summary_llm": True})
    idx = ensure_index(sign_video, settings, stub_backends, progress=False, stages="search")
    assert idx.manifest["reused"]["stages"] == ["transcript", "captions", "embeddings"]
    assert idx.manifest["pending"] == ["graph", "summary"]


def test_a_tracker_change_reuses_every_stage(sign_index, sign_video, stub_backends, root, monkeypatch):
    old = copy_index(sign_index, root)
    monkeypatch.setattr("avi.index.build.tracks_stage_id", lambda settings: "another-tracker")
    idx = ensure_index(sign_video, S(root), stub_backends, progress=False)
    assert idx.path != old and stub_backends.captioner.calls == 0
    assert idx.manifest["reused"] == {"from": old.name, "stages": ALL}
    assert (idx.path / "graph.json").read_bytes() == (old / "graph.json").read_bytes()
    assert idx.manifest["counts"]["entities"] == json.loads((old / "manifest.json").read_text())["counts"]["entities"]
    assert (idx.path / "tracks.json").exists()  # the changed stage itself is built
    assert not list(idx.path.glob(".*.copy"))


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
    assert find_sibling(root, key, fields, components)[1] == ALL
    (old / "manifest.json").write_text(json.dumps({**manifest, "pending": ["graph"]}))  # not built there
    assert find_sibling(root, key, fields, components)[1] == ["transcript", "captions", "embeddings", "summary"]
    (old / "manifest.json").write_text(json.dumps(manifest))
    (old / "summary.json").unlink()
    assert find_sibling(root, key, fields, components)[1] == ["transcript", "captions", "embeddings", "graph"]
    (old / "manifest.json").write_text(json.dumps({**manifest, "complete": False}))
    assert find_sibling(root, key, fields, components) is None
    (old / "manifest.json").write_text("{not json")
    assert find_sibling(root, key, fields, components) is None


def test_stage_inputs_separate_the_stages():
    fields = {"fps": 2.0, "max_side": 1280, "clip_seconds": 5.0, "caption_ocr_frames": 3, "graph_llm": True,
              "graph_chunk_chars": 6000, "summary_llm": True}
    comps = {"captioner": "c", "embedder": "e", "transcript": {"mode": "auto"}, "llm": "l",
             "prompts": {"graph_extract": "g", "summary_video": "s", "caption_clip": "p"}}
    base = stage_inputs(fields, comps)
    other_llm = stage_inputs(fields, {**comps, "llm": "m"})
    other_graph_prompt = stage_inputs(fields, {**comps, "prompts": {**comps["prompts"], "graph_extract": "h"}})
    other_summary_prompt = stage_inputs(fields, {**comps, "prompts": {**comps["prompts"], "summary_video": "t"}})
    other_chunks = stage_inputs({**fields, "graph_chunk_chars": 3000}, comps)
    other_embedder = stage_inputs(fields, {**comps, "embedder": "x"})
    lead = ("transcript", "captions", "embeddings")
    for other in (other_llm, other_graph_prompt, other_summary_prompt, other_chunks):
        assert all(other[s] == base[s] for s in lead)  # LLM, graph settings and prompts shape none of these
    assert other_llm["graph"] != base["graph"] and other_llm["summary"] != base["summary"]
    assert other_graph_prompt["graph"] != base["graph"] and other_graph_prompt["summary"] == base["summary"]
    assert other_summary_prompt["graph"] == base["graph"] and other_summary_prompt["summary"] != base["summary"]
    assert other_chunks["graph"] != base["graph"] and other_chunks["summary"] == base["summary"]
    assert other_embedder["transcript"] == base["transcript"] and other_embedder["embeddings"] != base["embeddings"]
    assert other_embedder["graph"] != base["graph"] and other_embedder["summary"] == base["summary"]
    # with an LLM stage off, its LLM and prompts shape nothing
    off = {**fields, "graph_llm": False, "summary_llm": False}
    bare = {**comps, "llm": "m", "prompts": {"caption_clip": "p"}}
    assert stage_inputs(off, comps)["graph"] == stage_inputs(off, bare)["graph"]
    assert stage_inputs(off, comps)["summary"] == stage_inputs(off, {**comps, "llm": None})["summary"]


def test_pending_stages_are_copied_once_a_sibling_has_built_them(sign_index, sign_video, stub_backends, root):
    from avi.index.build import finish_index

    old = copy_index(sign_index, root)
    settings = S(root).model_copy(update={"graph_llm": True, "summary_llm": True})
    _as_built_with_llm_stages(old, stub_backends.llm_id(settings))
    m = json.loads((old / "manifest.json").read_text())
    (old / "manifest.json").write_text(json.dumps({**m, "pending": ["graph", "summary"]}))  # not built there yet
    idx = ensure_index(sign_video, settings, stub_backends, progress=False, stages="search")
    assert idx.manifest["pending"] == ["graph", "summary"]
    (old / "manifest.json").write_text(json.dumps(m))  # the sibling's LLM stages are now built
    done = finish_index(idx, settings, stub_backends, progress=False, only=["graph"])  # the stub has no LLM
    assert done.manifest["pending"] == ["summary"] and done.manifest["reused_pending"] == {"graph": old.name}
    assert (done.path / "graph.json").read_bytes() == (old / "graph.json").read_bytes()
    assert done.manifest["counts"]["entities"] == m["counts"]["entities"]
    done = finish_index(done, settings, stub_backends, progress=False)
    assert done.manifest["pending"] == [] and set(done.manifest["reused_pending"]) == {"graph", "summary"}


def test_find_sibling_prefers_the_sibling_holding_the_wanted_stage(sign_index, stub_backends, root):
    """Two siblings give as many stages, one the summary, the other the graph: the caller's wanted stage decides."""
    old = copy_index(sign_index, root)
    settings = S(root).model_copy(update={"graph_llm": True, "summary_llm": True})
    _as_built_with_llm_stages(old, stub_backends.llm_id(settings))
    sha = old.name.split("-")[0]
    m = json.loads((old / "manifest.json").read_text())
    for name, pending in (("aaaaaaaaaaaa", ["graph"]), ("bbbbbbbbbbbb", ["summary"])):
        sib = root / f"{sha}-{name}"
        shutil.copytree(old, sib)
        (sib / "manifest.json").write_text(json.dumps({**m, "key": sib.name, "pending": pending}))
    shutil.rmtree(old)
    fields, components = m["settings"], m["components"]
    gives_summary, gives_graph = root / f"{sha}-aaaaaaaaaaaa", root / f"{sha}-bbbbbbbbbbbb"
    assert find_sibling(root, f"{sha}-new", fields, components)[0] == gives_summary  # a tie: the first
    assert find_sibling(root, f"{sha}-new", fields, components, ["graph"]) == (
        gives_graph, ["transcript", "captions", "embeddings", "graph"])
    assert find_sibling(root, f"{sha}-new", fields, components, ["summary"])[0] == gives_summary
