"""The subject registry in use (issue 19, items 1 and 2; AVI §3.2.1 Fig. 7, §3.3.1 graph_retrieve).

One man appears in three clips under three per-clip descriptions ("man in a red jacket", "man wearing a
red jacket", "red-jacketed man"), a woman in three clips under two. The index is real (captions, Chroma
by the builder's stage, the registry merged by :func:`merge_subjects` with the real MiniLM embedder, the
structured graph by :func:`build_entity_graph`, plus one LLM-layer subject that refers to the man by his
clip-local id); it is opened with the real :class:`VideoIndex`, whose graph is keyed by the registry.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from avi.backends.types import Caption
from avi.config import Settings
from avi.index.graph import build_entity_graph, save_graph, update_scores
from avi.index.graph.registry import key_by_registry, registry_lines
from avi.index.stages import stage_embeddings
from avi.index.store import SCHEMA_VERSION, VideoIndex
from avi.index.subjects import merge_subjects
from avi.tools.base import ToolContext
from avi.tools.retrieve import graph_retrieve

MAN = ["man in a red jacket", "man wearing a red jacket", "red-jacketed man"]


def _entry(name: str, appearance: list[str]) -> dict:
    return {"name": name, "appearance": appearance, "identity": [], "first_seen": None}


def _captions() -> list[Caption]:
    man = [_entry(MAN[0], ["red jacket", "blue jeans", "short black hair"]),
           _entry(MAN[1], ["short black hair", "red jacket", "jeans"]),
           _entry(MAN[2], ["red jacket", "blue jeans", "black hair"])]
    woman = [_entry("woman with a blue umbrella", ["blue umbrella", "white coat"]),
             _entry("woman holding an umbrella", ["white coat", "blue umbrella"])]
    dog = _entry("brown dog", ["brown fur", "red collar"])
    regs = [{"subject_1": man[0]},
            {"subject_1": man[1], "subject_2": dog},
            {"subject_1": woman[0]},
            {"subject_1": woman[1], "subject_2": man[2]},
            {"subject_1": dict(dog)},
            {"subject_1": dict(woman[0])},
            {}]
    texts = ["A man in a red jacket walks into a station hall.", "The man buys a coffee; a brown dog sniffs his shoes.",
             "A woman with a blue umbrella waits on the platform.", "The red-jacketed man hands the woman a ticket.",
             "The brown dog lies under a bench.", "The woman boards the train.", "A sign reads CLOSED."]
    caps = [Caption(i, i * 5.0, (i + 1) * 5.0, t, "test", {"subject_registry": r}) for i, (t, r) in
            enumerate(zip(texts, regs))]
    caps[6].data["ocr"] = [{"text": "CLOSED", "t_s": 31.0}]
    return caps


@pytest.fixture(scope="module")
def embedder(session_backends):
    return session_backends.embedder


@pytest.fixture()
def ctx(tmp_path, embedder):
    caps = _captions()
    subjects = merge_subjects(caps, embedder)
    g = build_entity_graph(caps)
    # an LLM-layer subject that names the man by his clip-local id in clip 3 ("subject_2" there), and an
    # interaction from him to the woman: both must land on the registry's subjects
    g.add_node("subject:jacket guy", kind="subject", name="jacket guy", subject_id="subject_2", attributes=["red"],
               spans=[[15.0, 20.0]], clips=[3], actions=[{"action": "hands over a ticket", "start_s": 16.0,
                                                          "end_s": 18.0}], source="llm")
    g.add_edge("subject:jacket guy", "subject:woman holding an umbrella", relation="interacts", spans=[[16.0, 18.0]],
               descriptions=["hands her a ticket"])
    g.graph["extraction"] = {"llm": "test-llm", "chunks": 1, "failed_chunks": []}
    update_scores(g)
    work = tmp_path / "idx"
    work.mkdir()
    (work / "captions.jsonl").write_text("".join(json.dumps(c.to_dict()) + "\n" for c in caps))
    (work / "subjects.json").write_text(json.dumps(subjects))
    stage_embeddings(work, caps, [], SimpleNamespace(embedder=embedder))
    save_graph(g, work / "graph.json")
    (work / "manifest.json").write_text(json.dumps({
        "schema": SCHEMA_VERSION, "complete": True, "captioner": "test", "video": {"duration_s": 35.0},
        "embedder": {"name": embedder.name, "dim": embedder.dim}}))
    return ToolContext(settings=Settings(), index=VideoIndex(work),
                       video=SimpleNamespace(info=SimpleNamespace(duration_s=35.0)),
                       backends=SimpleNamespace(embedder=embedder))


def test_registry_merges_the_per_clip_descriptions(ctx):
    subjects = ctx.index.subjects
    by_name = {s["name"]: s for s in subjects}
    assert set(by_name) == {MAN[0], "brown dog", "woman with a blue umbrella"}, subjects
    assert by_name[MAN[0]]["clips"] == [0, 1, 3] and by_name["woman with a blue umbrella"]["clips"] == [2, 3, 5]
    # the graph as built keys the man by his three per-clip names: three nodes
    raw = json.loads((ctx.index.path / "graph.json").read_text())
    assert sum(n["id"] in {f"subject:{m}" for m in MAN} for n in raw["nodes"]) == 3


def test_graph_is_keyed_by_global_ids_with_mentions_linked(ctx):
    g = ctx.index.graph
    man = {s["name"]: s["id"] for s in ctx.index.subjects}[MAN[0]]
    woman = {s["name"]: s["id"] for s in ctx.index.subjects}["woman with a blue umbrella"]
    subjects = sorted(n for n, d in g.nodes(data=True) if d.get("kind") == "subject")
    assert subjects == sorted(f"subject:{s['id']}" for s in ctx.index.subjects)
    d = g.nodes[f"subject:{man}"]
    assert d["name"] == MAN[0] and d["subject_id"] == man and d["registry"]
    assert set(d["aliases"]) == {MAN[1], MAN[2], "jacket guy"}
    assert [(m["clip"], m["local_id"], m["name"]) for m in d["mentions"]] == [
        (0, "subject_1", MAN[0]), (1, "subject_1", MAN[1]), (3, "subject_2", MAN[2])]
    assert d["spans"] == [[0.0, 10.0], [15.0, 20.0]] and d["clips"] == [0, 1, 3]
    assert d["actions"] == [{"action": "hands over a ticket", "start_s": 16.0, "end_s": 18.0}]
    # the LLM interaction and the co-occurrence of clip 3 are one edge; the interaction wins
    e = g.edges[f"subject:{man}", f"subject:{woman}"]
    assert e["relation"] == "interacts" and e["descriptions"] == ["hands her a ticket"]
    assert e["spans"] == [[15.0, 20.0]]
    assert g.graph["registry"] == {"subjects": 3, "keyed_nodes": 3, "merged_nodes": 4}
    assert not any(a == b for a, b in g.edges)


def test_graph_retrieve_finds_the_subject_by_any_description_and_lists_the_registry(ctx):
    man = {s["name"]: s["id"] for s in ctx.index.subjects}[MAN[0]]
    obs = graph_retrieve.run(ctx, {"query": "red-jacketed man"})
    assert not obs.error, obs.text
    print(obs.text)
    assert obs.data["matches"][0]["node"] == f"subject:{man}"
    assert f"{man} {MAN[0]}: seen [0.0s–10.0s], [15.0s–20.0s], 3 clips" in obs.text
    assert {r["id"] for r in obs.data["registry"]} == {s["id"] for s in ctx.index.subjects}
    by_id = graph_retrieve.run(ctx, {"query": man})
    assert by_id.data["matches"][0]["node"] == f"subject:{man}" and by_id.data["matches"][0]["similarity"] == 1.0


def test_graph_retrieve_relation_direct_path_and_none(ctx):
    ids = {s["name"]: s["id"] for s in ctx.index.subjects}
    direct = graph_retrieve.run(ctx, {"query": "man wearing a red jacket", "target": "woman holding an umbrella"})
    assert not direct.error, direct.text
    print(direct.text)
    (rel,) = direct.data["direct"]
    assert (rel["source"], rel["relation"], rel["target"]) == (
        f"subject:{ids[MAN[0]]}", "interacts", f"subject:{ids['woman with a blue umbrella']}")
    assert f"({MAN[0]}) -[interacts: hands her a ticket]-> (woman with a blue umbrella) at [15.0s–20.0s]" in direct.text
    assert direct.evidence == [[15.0, 20.0]]
    # woman and dog never share a clip: the shortest path runs through the man, with each step's times
    path = graph_retrieve.run(ctx, {"query": "woman with a blue umbrella", "target": "brown dog"})
    assert not path.error and not path.data["direct"], path.text
    print(path.text)
    (p,) = path.data["paths"]
    assert p["names"] == ["woman with a blue umbrella", MAN[0], "brown dog"]
    assert [h["spans"] for h in p["hops"]] == [[[15.0, 20.0]], [[5.0, 10.0]]]
    assert "shortest path of 2 relations" in path.text and "[5.0s–10.0s]" in path.text
    assert path.evidence == [[5.0, 10.0], [15.0, 20.0]]
    none = graph_retrieve.run(ctx, {"query": "CLOSED", "target": "brown dog"})
    assert not none.error and not none.data["paths"] and "No path of at most" in none.text


def test_key_by_registry_without_registry_is_the_graph_itself(ctx):
    g = build_entity_graph(_captions())
    assert key_by_registry(g, [], _captions()) is g
    lines = registry_lines(ctx.index.subjects, limit=1)
    assert len(lines) == 2 and lines[1] == "(+2 more subjects)"


def test_graph_retrieve_is_offered_on_a_registry_keyed_graph(ctx):
    """Issue 37: the keying joins a node's sources ("captions+llm"), so the agent's gate must look for "llm" among
    them; an exact "llm" match hid graph_retrieve on gpu indexes."""
    from avi.agent.gates import entity_graph_in

    sources = {d.get("source") for _, d in ctx.index.graph.nodes(data=True)}
    assert "captions+llm" in sources and "llm" not in sources  # the keyed graph has no node from the LLM alone
    assert entity_graph_in(ctx.index) is True
    structured = build_entity_graph(_captions())  # the captions' layer only: nothing for graph_retrieve to add
    assert entity_graph_in(SimpleNamespace(graph=structured)) is False
