"""Retrieve tools (avi/tools/retrieve/; AVI §3.3.1): clip_merge, global_explore, graph_retrieve, and
the recall of clip_retrieve.

Indexes are hand-made: captions, graph and summary written here with known answers, the Chroma
collection built by the index builder's own embedding stage, opened with the real VideoIndex, and
embedded with the real MiniLM embedder of the session backends.
"""

from __future__ import annotations

import json
import random
import time
from types import SimpleNamespace

import networkx as nx
import numpy as np
import pytest

from avi.backends.types import Caption
from avi.config import Settings
from avi.index.graph import build_entity_graph, importance, node_text, save_graph, update_scores
from avi.index.stages import stage_embeddings
from avi.index.store import SCHEMA_VERSION, VideoIndex
from avi.tools.base import ToolContext
from avi.tools.retrieve import (
    FALLBACK_SEGMENT_S,
    MERGE_MIN_COSINE,
    clip_merge,
    clip_retrieve,
    global_explore,
    graph_retrieve,
)


class CountingEmbedder:
    """Wraps a real embedder (same name and dim) and counts the texts it embeds."""

    def __init__(self, inner):
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.texts = 0

    def embed(self, texts):
        self.texts += len(texts)
        return self.inner.embed(texts)


def caps_from(texts: list[str], clip_s: float = 5.0, data: list[dict] | None = None) -> list[Caption]:
    return [Caption(i, i * clip_s, (i + 1) * clip_s, t, "test", (data[i] if data else {})) for i, t in enumerate(texts)]


def make_ctx(tmp_path, captions: list[Caption], embedder, *, graph: nx.DiGraph | None = None,
             summary: dict | None = None, name: str = "idx", captioner: str = "test") -> ToolContext:
    """A real index directory (manifest, captions, Chroma built by the builder's stage, graph, summary)."""
    work = tmp_path / name
    work.mkdir()
    (work / "captions.jsonl").write_text("".join(json.dumps(c.to_dict()) + "\n" for c in captions))
    stage_embeddings(work, captions, [], SimpleNamespace(embedder=embedder))
    (work / "embeddings.done").unlink()
    save_graph(graph if graph is not None else build_entity_graph(captions), work / "graph.json")
    if summary is not None:
        (work / "summary.json").write_text(json.dumps(summary))
    duration = captions[-1].end_s
    (work / "manifest.json").write_text(json.dumps({
        "schema": SCHEMA_VERSION, "complete": True, "captioner": captioner, "video": {"duration_s": duration},
        "embedder": {"name": embedder.name, "dim": embedder.dim}}))
    return ToolContext(settings=Settings(), index=VideoIndex(work),
                       video=SimpleNamespace(info=SimpleNamespace(duration_s=duration)),
                       backends=SimpleNamespace(embedder=embedder))


@pytest.fixture(scope="module")
def embedder(session_backends):
    return session_backends.embedder


# ===================================================================== clip_merge

MERGE_CAPTIONS = [
    "A man in a white apron cooks pasta on the stove in a kitchen.",        # 0   0-5
    "The man in the apron stirs the pasta pot on the kitchen stove.",       # 1   5-10
    "In the kitchen the cook drains the pasta into a colander.",            # 2  10-15
    "An empty hallway with a grey door.",                                   # 3  15-20
    "A black car drives down a snowy highway at night.",                    # 4  20-25
    "A woman reads a book on a sofa.",                                      # 5  25-30
    "Fireworks explode over a river.",                                      # 6  30-35
    "A brown dog runs across the grass in a park.",                         # 7  35-40
    "A man repairs a bicycle tyre.",                                        # 8  40-45
    "The brown dog chases a ball over the park lawn.",                      # 9  45-50
    "A red kite flies above a beach.",                                      # 10 50-55
    "Snow falls on a quiet village square.",                                # 11 55-60
]


def test_clip_merge_merges_agreeing_neighbours_and_keeps_others_apart(tmp_path, embedder):
    ctx = make_ctx(tmp_path, caps_from(MERGE_CAPTIONS), embedder)
    obs = clip_merge.run(ctx, {"clips": [[45, 50], [0, 5], [5, 10], [10, 15], [20, 25], [35, 40], [56, 70]]})
    assert not obs.error, obs.text
    print(obs.text)
    merged = obs.data["merged"]
    assert [(m["start_s"], m["end_s"]) for m in merged] == [(0, 15), (20, 25), (35, 50), (56, 60)]
    # inputs are numbered as given (1-based); the kitchen clips 2, 3, 4 become one range
    assert merged[0]["inputs"] == [2, 3, 4] and merged[0]["clip_indices"] == [0, 1, 2]
    assert merged[0]["similarity"] >= MERGE_MIN_COSINE and "pasta" in merged[0]["gist"]
    # 5 s after the kitchen, but a car on a highway: kept apart, and the text says why
    assert merged[1]["inputs"] == [5] and "captions differ" in obs.text
    # the dog clips 35-40 and 45-50 are 5 s apart (one clip length) and agree: merged across the gap
    assert merged[2]["inputs"] == [6, 1] and "dog" in merged[2]["gist"]
    # a range past the end is clipped and the repair is reported
    assert merged[3]["inputs"] == [7] and any("clipped" in n for n in obs.notes) and "Note:" in obs.text
    assert obs.evidence == [[0, 15], [20, 25], [35, 50], [56, 60]]
    lines = obs.text.splitlines()
    assert lines[1].startswith("[0.0s–15.0s] merged #2,#3,#4")


def test_clip_merge_far_apart_overlap_and_outside(tmp_path, embedder):
    ctx = make_ctx(tmp_path, caps_from(MERGE_CAPTIONS), embedder)
    # same topic but 20 s apart: not merged; overlapping ranges always merge; a range outside is skipped
    obs = clip_merge.run(ctx, {"clips": [[0, 5], [25, 30], [27, 33], [200, 210]]})
    assert not obs.error
    assert [(m["start_s"], m["end_s"], m["inputs"]) for m in obs.data["merged"]] == [
        (0, 5, [1]), (25, 33, [2, 3])]
    assert "overlapping" in obs.text and any("#4" in n and "outside" in n for n in obs.notes)
    bad = clip_merge.run(ctx, {"clips": [[100, 120]]})
    assert bad.error and "no time range overlaps the video" in bad.text


def test_clip_merge_splits_perception_captions_at_shot_changes(tmp_path, embedder):
    text = "People: no people detected. {} Dominant colours: {} 100%. Motion: static."
    data = [{"ocr": [], "shot_changes_s": []}, {"ocr": [{"text": "EXIT 42", "t_s": 6.0}], "shot_changes_s": []},
            {"ocr": [], "shot_changes_s": [10.0]}, {"ocr": [], "shot_changes_s": []}]
    caps = caps_from([text.format("No on-screen text read.", "blue"),
                      text.format('On-screen text: "EXIT 42".', "blue"),
                      text.format("No on-screen text read.", "green") + " Shot change at 10.0s.",
                      text.format("No on-screen text read.", "green")], data=data)
    ctx = make_ctx(tmp_path, caps, embedder, captioner="perception-v1")
    obs = clip_merge.run(ctx, {"clips": [[0, 5], [5, 10], [10, 15], [15, 20]]})
    print(obs.text)
    assert [(m["start_s"], m["end_s"]) for m in obs.data["merged"]] == [(0, 10), (10, 20)]
    assert "shot change" not in obs.text  # both groups merged; the cut only separates them
    assert 'EXIT 42' in obs.data["merged"][0]["gist"]  # on-screen text of the range is kept in the gist
    apart = clip_merge.run(ctx, {"clips": [[5, 10], [10, 15]]})
    assert len(apart.data["merged"]) == 2 and "shot change at 10.0s" in apart.text
    # the same captions from another captioner merge across the cut (judged by the captions alone)
    other = make_ctx(tmp_path, caps, embedder, name="vlm")
    assert len(clip_merge.run(other, {"clips": [[5, 10], [10, 15]]}).data["merged"]) == 1


# ===================================================================== global_explore

TOPICS = [  # (summary of the segment, captions of its 12 clips)
    ("A chef prepares dinner in a restaurant kitchen: chopping vegetables, frying onions and plating food.",
     ["The chef chops carrots on a wooden board.", "Onions sizzle in a frying pan.", "A cook stirs a sauce.",
      "The chef tastes the soup with a spoon.", "Vegetables are washed in the sink.", "A pot boils on the stove.",
      "The chef slices bread.", "Steam rises from a pan.", "A cook seasons the meat with salt.",
      "Plates are stacked on the counter.", "The chef arranges food on a plate.", "A waiter picks up the dishes."]),
    ("Busy city traffic at an intersection: cars, buses and pedestrians crossing at the lights.",
     ["Cars wait at a red traffic light.", "A bus turns the corner.", "Pedestrians cross the street.",
      "A taxi honks its horn.", "A cyclist rides through the intersection.", "The traffic light turns green.",
      "A truck passes by.", "People wait at the crosswalk.", "Cars drive down the avenue.",
      "A police car drives past.", "A motorbike weaves through traffic.", "The street is crowded with cars."]),
    ("A dog plays in a sunny park: it fetches a ball thrown by its owner and runs on the grass.",
     ["A dog sits on the grass.", "The owner throws a red ball.", "The dog chases the ball across the lawn.",
      "The dog brings the ball back.", "Children play near the trees.", "The dog drinks from a bowl.",
      "A man walks along the park path.", "The dog jumps to catch a frisbee.", "Ducks swim in the pond.",
      "The owner pets the dog.", "The dog rolls in the grass.", "A family has a picnic."]),
    ("An office meeting: colleagues discuss charts on a projector screen around a conference table.",
     ["People sit around a conference table.", "A woman points at a chart on the screen.",
      "A man takes notes on a laptop.", "Colleagues discuss the quarterly results.", "Coffee cups on the table.",
      "The presenter changes the slide.", "A bar chart is projected on the wall.", "Two people shake hands.",
      "Someone asks a question.", "The manager summarises the plan.", "Papers are handed out.",
      "The meeting ends and people leave the room."]),
]


def _topic_index(tmp_path, embedder, with_summary: bool, name: str = "idx"):
    texts = [c for _, caps in TOPICS for c in caps]
    summary = {"segments": [{"start_s": 60.0 * k, "end_s": 60.0 * (k + 1), "summary": s}
                            for k, (s, _) in enumerate(TOPICS)],
               "video": "A day in the city: cooking, traffic, a dog in the park and an office meeting.",
               "failed": [], "llm": "test"} if with_summary else {"segments": [], "video": None, "failed": [],
                                                                  "llm": None}
    return make_ctx(tmp_path, caps_from(texts), embedder, summary=summary, name=name)


@pytest.fixture(scope="module")
def topic_ctx(tmp_path_factory, embedder):
    return _topic_index(tmp_path_factory.mktemp("topics"), embedder, with_summary=True)


@pytest.mark.parametrize("query, segment", [
    ("when does the dog fetch the ball?", 2),
    ("what was on the chart in the meeting?", 3),
    ("what vegetables did the chef cut?", 0),
    ("how many buses passed the traffic light?", 1),
])
def test_global_explore_ranks_the_right_segment_first(topic_ctx, query, segment):
    ctx = topic_ctx
    obs = global_explore.run(ctx, {"query": query})
    assert not obs.error, obs.text
    segs = obs.data["segments"]
    assert obs.data["has_summary"] and len(segs) == 4
    assert (segs[0]["start_s"], segs[0]["end_s"]) == (60.0 * segment, 60.0 * (segment + 1))
    assert segs[0]["summary_sim"] is not None and segs[0]["caption_score"] is not None
    assert segs[0]["best_clip"][0] >= 60.0 * segment and segs[0]["best_clip"][1] <= 60.0 * (segment + 1)
    assert obs.evidence[0] == [60.0 * segment, 60.0 * (segment + 1)] and len(obs.evidence) == 3
    assert [s["score"] for s in segs] == sorted((s["score"] for s in segs), reverse=True)
    assert obs.text.splitlines()[1].startswith("Video: A day in the city")
    assert obs.text.splitlines()[2].startswith(f"1. [{60.0 * segment:.1f}s–{60.0 * (segment + 1):.1f}s]")
    assert TOPICS[segment][0][:40] in obs.text and "Candidate segments" in obs.text
    assert len(obs.text) <= ctx.settings.observation_max_chars


def test_global_explore_keeps_segments_whose_summary_failed(tmp_path, embedder):
    texts = [c for _, caps in TOPICS for c in caps]
    summary = {"segments": [{"start_s": 60.0 * k, "end_s": 60.0 * (k + 1), "summary": s}
                            for k, (s, _) in enumerate(TOPICS) if k != 2],
               "video": None, "failed": [{"start_s": 120.0, "end_s": 180.0, "reason": "empty summary"}]}
    ctx = make_ctx(tmp_path, caps_from(texts), embedder, summary=summary)
    obs = global_explore.run(ctx, {"query": "the dog catches a frisbee"})
    top = obs.data["segments"][0]
    assert (top["start_s"], top["end_s"]) == (120.0, 180.0) and top["summary_sim"] is None
    assert top["text"].startswith("(no summary) ") and "frisbee" in top["text"]
    assert len(obs.data["segments"]) == 4 and "Video:" not in obs.text


def test_global_explore_without_summary_falls_back_to_caption_windows(tmp_path, embedder):
    ctx = _topic_index(tmp_path, embedder, with_summary=False)
    obs = global_explore.run(ctx, {"query": "the dog catches a frisbee"})
    assert not obs.error
    print(obs.text)
    assert not obs.data["has_summary"] and "no LLM summary" in obs.text and "summary_llm off" in obs.text
    segs = obs.data["segments"]
    assert len(segs) == 4 and all(s["end_s"] - s["start_s"] == FALLBACK_SEGMENT_S for s in segs)
    assert (segs[0]["start_s"], segs[0]["end_s"]) == (120.0, 180.0)
    assert "frisbee" in segs[0]["text"] and segs[0]["summary_sim"] is None
    assert global_explore.run(ctx, {"query": "  "}).error


# ===================================================================== graph_retrieve


def _people_graph() -> nx.DiGraph:
    """Hand-made LLM-layer graph over 20 clips of 5 s (100 s).

    Bob is on screen most of the time (high freq) and is the hub; Alice interacts with Bob;
    Bob argues with Carol; Carol and Dave form the "kitchen staff group" super-node;
    EXIT 42 is seen with Bob; a brown dog is alone (no relation).
    """
    g = nx.DiGraph(n_clips=20, extraction={"llm": "test-llm", "chunks": 1, "failed_chunks": []})

    def subj(key, name, attrs, spans, actions=()):
        clips = sorted({i for s, e in spans for i in range(int(s // 5), int(np.ceil(e / 5)))})
        g.add_node(key, kind="subject", name=name, subject_id=None, attributes=list(attrs), spans=spans,
                   clips=clips, actions=[{"action": a, "start_s": s, "end_s": e} for a, s, e in actions],
                   source="llm")

    g.add_node("scene:0", kind="scene", name="scene 0", spans=[[0.0, 100.0]], clips=list(range(20)))
    subj("subject:alice", "Alice", ["red dress", "long black hair"], [[0.0, 10.0], [30.0, 40.0]],
         [("waves at the camera", 2.0, 4.0), ("hands a cup to Bob", 6.0, 9.0)])
    subj("subject:bob", "Bob", ["blue jacket"], [[0.0, 80.0]])
    subj("subject:carol", "Carol", ["green apron", "chef"], [[50.0, 60.0]])
    subj("subject:dave", "Dave", ["green apron", "waiter"], [[55.0, 65.0]])
    subj("subject:dog", "brown dog", [], [[90.0, 95.0]])
    g.add_node("text:exit 42", kind="text", name="EXIT 42", spans=[[20.0, 25.0]], clips=[4], source="captions")
    g.add_edge("subject:alice", "subject:bob", relation="interacts", spans=[[6.0, 9.0]],
               descriptions=["hands a cup to"])
    g.add_edge("subject:bob", "subject:carol", relation="interacts", spans=[[52.0, 54.0]],
               descriptions=["argues with"])
    g.add_edge("subject:carol", "subject:dave", relation="interacts", spans=[[56.0, 58.0]],
               descriptions=["gives a tray to"])
    for a, b in (("subject:bob", "text:exit 42"), ("text:exit 42", "subject:bob")):
        g.add_edge(a, b, relation="co_occurs", spans=[[20.0, 25.0]])
    for n in list(g.nodes):
        if n != "scene:0":
            g.add_edge("scene:0", n, relation="contains", spans=g.nodes[n]["spans"])
    g.add_node("super:0", kind="super", name="kitchen staff group", members=["subject:carol", "subject:dave"],
               attributes=["green apron"], spans=[[50.0, 65.0]], clips=list(range(10, 13)))
    for m in ("subject:carol", "subject:dave"):
        g.add_edge("super:0", m, relation="groups", spans=g.nodes[m]["spans"])
    update_scores(g)
    return g


def test_graph_retrieve_finds_the_entity_its_neighbours_and_times(tmp_path, embedder):
    ctx = make_ctx(tmp_path, caps_from(["x"] * 20), embedder, graph=_people_graph())
    obs = graph_retrieve.run(ctx, {"query": "the woman in the red dress"})
    assert not obs.error, obs.text
    print(obs.text)
    assert obs.data["matches"][0]["node"] == "subject:alice" and obs.data["llm_graph"]
    hops = {e["node"]: e["hop"] for e in obs.data["entities"]}
    assert hops == {"subject:alice": 0, "subject:bob": 1}  # Carol is two hops away; scenes are not walked
    (t,) = obs.data["triples"]
    assert (t["source_name"], t["relation"], t["target_name"], t["t"]) == ("Alice", "interacts", "Bob", [6.0, 9.0])
    assert "(Alice) -[interacts: hands a cup to]-> (Bob) at [6.0s–9.0s]" in obs.text
    assert "red dress" in obs.text and "waves at the camera [2.0s–4.0s]" in obs.text
    assert [6.0, 9.0] in obs.evidence or [0.0, 10.0] in obs.evidence
    assert [30.0, 40.0] in obs.evidence  # Alice's appearances


def test_graph_retrieve_two_hops_and_importance_order(tmp_path, embedder):
    g = _people_graph()
    ctx = make_ctx(tmp_path, caps_from(["x"] * 20), embedder, graph=g)
    obs = graph_retrieve.run(ctx, {"query": "Alice", "hops": 2})
    assert not obs.error, obs.text
    hops = {e["node"]: e["hop"] for e in obs.data["entities"]}
    assert hops == {"subject:alice": 0, "subject:bob": 1, "subject:carol": 2, "text:exit 42": 2}
    # importance is graph.importance with the query embedded now (AVI eq. 11-13)
    q = embedder.embed(["Alice"])[0]
    want = importance(g, q, {n: embedder.embed([node_text(g, n)])[0] for n in hops})
    got = {e["node"]: e["importance"] for e in obs.data["entities"]}
    assert got == pytest.approx({n: round(v, 4) for n, v in want.items()}, abs=2e-4)
    # Bob (on screen 80 of 100 s, the hub) outranks Alice, who matched the query
    order = [e["node"] for e in obs.data["entities"]]
    assert order[:2] == ["subject:bob", "subject:alice"] and order == sorted(order, key=lambda n: -want[n])
    pairs = [(t["source_name"], t["target_name"]) for t in obs.data["triples"]]
    assert pairs[0] == ("Alice", "Bob") and set(pairs) == {("Alice", "Bob"), ("Bob", "Carol"), ("Bob", "EXIT 42")}
    assert [t["score"] for t in obs.data["triples"]] == sorted((t["score"] for t in obs.data["triples"]),
                                                               reverse=True)
    assert [52.0, 54.0] in obs.evidence and [20.0, 25.0] in obs.evidence
    # top_k bounds both lists
    small = graph_retrieve.run(ctx, {"query": "Alice", "hops": 2, "top_k": 1})
    assert len(small.data["entities"]) == 1 and len(small.data["triples"]) == 1
    assert graph_retrieve.run(ctx, {"query": "Alice", "hops": 3}).error


def test_graph_retrieve_super_node_expands_to_members(tmp_path, embedder):
    ctx = make_ctx(tmp_path, caps_from(["x"] * 20), embedder, graph=_people_graph())
    obs = graph_retrieve.run(ctx, {"query": "kitchen staff group"})
    assert not obs.error, obs.text
    assert obs.data["matches"][0]["node"] == "super:0"
    hops = {e["node"]: e["hop"] for e in obs.data["entities"]}
    assert hops["subject:carol"] == 0 and hops["subject:dave"] == 0 and hops["subject:bob"] == 1
    assert "members: Carol, Dave" in obs.text and "in kitchen staff group" in obs.text
    assert ("Carol", "interacts", "Dave") in {(t["source_name"], t["relation"], t["target_name"])
                                              for t in obs.data["triples"]}


def test_graph_retrieve_text_stays_compact_on_a_big_graph(tmp_path, embedder):
    g = nx.DiGraph(n_clips=100, extraction={"llm": "test-llm"})
    attrs = ["wears a long dark woollen coat with brass buttons", "carries a leather briefcase", "has grey hair"]
    g.add_node("subject:hub", kind="subject", name="the station master", attributes=attrs,
               spans=[[0.0, 500.0]], clips=list(range(100)), source="llm")
    for i in range(40):
        n = f"subject:p{i}"
        g.add_node(n, kind="subject", name=f"passenger number {i}", attributes=attrs,
                   spans=[[5.0 * i + k * 50, 5.0 * i + k * 50 + 2] for k in range(6)], clips=[i], source="llm",
                   actions=[{"action": f"boards train {k}", "start_s": 5.0 * i, "end_s": 5.0 * i + 1}
                            for k in range(5)])
        g.add_edge("subject:hub", n, relation="interacts", spans=[[5.0 * i, 5.0 * i + 2], [300.0, 301.0]],
                   descriptions=["checks the ticket of and then talks at length about the delayed train with"])
    update_scores(g)
    ctx = make_ctx(tmp_path, caps_from(["x"] * 100), embedder, graph=g)
    obs = graph_retrieve.run(ctx, {"query": "station master", "top_k": 30})
    assert not obs.error
    limit = ctx.settings.observation_max_chars
    assert len(obs.text) <= limit and "more lines left out" in obs.text
    assert "Relations (most important first):" in obs.text and "-[interacts: checks the ticket" in obs.text
    assert len(obs.data["triples"]) == 30 and len(obs.data["entities"]) == 30  # the trace keeps everything


def test_graph_retrieve_unknown_entity_lists_the_nearest(tmp_path, embedder):
    ctx = make_ctx(tmp_path, caps_from(["x"] * 20), embedder, graph=_people_graph())
    obs = graph_retrieve.run(ctx, {"query": "a giraffe"})
    print(obs.text)
    assert obs.error and obs.data["unknown"]
    assert 'no entity in the graph matches "a giraffe"' in obs.text and "Nearest known entities:" in obs.text
    assert len(obs.data["nearest"]) == 5 and obs.data["nearest"][0]["name"] in obs.text


def test_graph_retrieve_caches_node_embeddings(tmp_path, embedder):
    counting = CountingEmbedder(embedder)
    ctx = make_ctx(tmp_path, caps_from(["x"] * 20), counting, graph=_people_graph())
    counting.texts = 0
    graph_retrieve.run(ctx, {"query": "Bob"})
    first = counting.texts
    assert first == 7 + 1  # 7 entities (6 + one super-node) and the query
    graph_retrieve.run(ctx, {"query": "Carol", "hops": 2})
    assert counting.texts == first + 1  # only the query
    # caption vectors come from the Chroma collection the build wrote: only queries are embedded
    for tool, args in ((clip_merge, {"clips": [[0, 5], [5, 10]]}), (global_explore, {"query": "x"})):
        before = counting.texts
        assert not tool.run(ctx, args).error
        assert counting.texts - before == (tool is global_explore)


def test_graph_retrieve_on_a_graph_without_llm_extraction(tmp_path, embedder):
    reg = {"person": {"name": "person", "appearance": [], "first_seen": 0.5, "max_count": 2}}
    data = [{"subject_registry": reg, "ocr": []}, {"subject_registry": reg, "ocr": [{"text": "EXIT 42", "t_s": 6.0}]},
            {"subject_registry": {}, "ocr": [{"text": "ROOM 7B", "t_s": 12.0}]}]
    caps = caps_from(["People: 2 people.", 'People: 2 people. On-screen text: "EXIT 42".',
                      'No people. On-screen text: "ROOM 7B".'], data=data)
    ctx = make_ctx(tmp_path, caps, embedder)  # graph built as with graph_llm off
    obs = graph_retrieve.run(ctx, {"query": "the EXIT 42 sign"})
    assert not obs.error, obs.text
    print(obs.text)
    assert obs.data["matches"][0]["name"] == "EXIT 42" and not obs.data["llm_graph"]
    assert "without LLM extraction (graph_llm off)" in obs.text
    assert ("EXIT 42", "co_occurs", "person") in {(t["source_name"], t["relation"], t["target_name"])
                                                  for t in obs.data["triples"]} | {
        (t["target_name"], t["relation"], t["source_name"]) for t in obs.data["triples"]}
    assert [5.0, 10.0] in obs.evidence
    empty = make_ctx(tmp_path, caps_from(["a quiet room", "a quiet room"]), embedder, name="empty")
    obs = graph_retrieve.run(empty, {"query": "person"})
    assert obs.error and "has no entities" in obs.text and "graph_llm off" in obs.text


# ===================================================================== clip_retrieve recall@16

SUBJECTS = ["a man in a blue jacket", "a woman in a red coat", "a child with a yellow backpack",
            "an old man with a cane", "a girl in a green dress", "a tall man in a grey suit"]
ACTIONS = ["walks slowly through", "stands still in", "looks around", "sits on a bench in", "talks on a phone in",
           "waits quietly in"]
PLACES = ["a busy street", "a kitchen", "a park", "an office", "a train station", "a shopping mall"]
TARGETS = [  # (caption, query)
    ("In a kitchen, a woman in a red coat pours coffee into a white mug.", "when is coffee poured into a mug?"),
    ("In a park, a brown dog jumps over a wooden fence.", "dog jumping over a fence"),
    ("On a busy street, a red car stops at a traffic light.", "car waiting at the red light"),
    ("In a park, an old man with a cane reads a newspaper on a bench.", "someone reading the newspaper"),
    ("Fireworks explode over the river at night while a crowd watches.", "fireworks in the night sky"),
    ("In a kitchen, a chef slices tomatoes on a cutting board.", "who is cutting tomatoes?"),
    ("On a busy street, a cyclist falls off a bicycle.", "a bike rider crashes"),
    ('In a train station, a sign reads "PLATFORM 9".', "which platform number is shown on the sign?"),
    ("In an office, two people shake hands at the door.", "handshake at the entrance"),
    ("In a kitchen, a cat sleeps on the windowsill.", "a cat napping by the window"),
]


HARD_NEGATIVES = [  # share objects or places with the targets, but not the asked-for event
    "In a kitchen, a woman in a red coat washes a white mug in the sink.",
    "In a park, a brown dog sleeps next to a wooden fence.",
    "On a busy street, a red car is parked next to a shop.",
    "In a park, an old man with a cane feeds pigeons near a bench.",
    "A crowd walks along the river in the evening.",
    "In a kitchen, a chef washes tomatoes in a bowl.",
    "On a busy street, a cyclist rides past a bus.",
    "In a train station, a man in a grey suit checks the departure board.",
    "In an office, two people sit at a desk and talk.",
    "In a kitchen, a cat eats from a bowl on the floor.",
]


def test_clip_retrieve_recall_at_16(tmp_path, embedder):
    rng = random.Random(0)
    fillers = [f"{s.capitalize()} {a} {p}." for s in SUBJECTS for a in ACTIONS for p in PLACES]
    fillers = rng.sample(fillers, 80) + HARD_NEGATIVES
    rng.shuffle(fillers)
    slots = sorted(rng.sample(range(100), len(TARGETS)))
    texts, truth, it = [], {}, iter(fillers)
    for i in range(100):
        if i in slots:
            k = slots.index(i)
            texts.append(TARGETS[k][0])
            truth[TARGETS[k][1]] = i
        else:
            texts.append(next(it))
    ctx = make_ctx(tmp_path, caps_from(texts), embedder)
    t0 = time.perf_counter()
    ranks = []
    for query, clip in truth.items():
        obs = clip_retrieve.run(ctx, {"query": query, "top_k": 16})
        assert not obs.error, obs.text
        by_sim = [c["clip_index"] for c in sorted(obs.data["clips"], key=lambda c: -c["similarity"])]
        ranks.append(by_sim.index(clip) + 1 if clip in by_sim else None)
    recall = {k: sum(r is not None and r <= k for r in ranks) / len(ranks) for k in (1, 5, 16)}
    print(f"clip_retrieve on 100 captions, {len(ranks)} queries: recall@1 {recall[1]:.2f}, "
          f"recall@5 {recall[5]:.2f}, recall@16 {recall[16]:.2f}; ranks {ranks}; "
          f"{(time.perf_counter() - t0) / len(ranks) * 1000:.0f} ms/query")
    assert recall[16] >= 0.9


def test_clip_retrieve_shows_a_repeated_caption_once_with_all_its_ranges(tmp_path, embedder):
    """A slide held for half a minute has the same caption in every clip: the model reads it once, with the
    ranges it covers (adjacent clips merged), and the budget the copies would have used shows other clips."""
    slide = 'On-screen text: "THE FRESNEL LENS"; "Invented in 1822 by Augustin Fresnel". Motion: static.'
    texts = [slide] * 6 + ["A woman reads a book on a sofa.", "Fireworks explode over a river.",
                           "A man repairs a bicycle tyre.", "Snow falls on a quiet village square.", slide]
    ctx = make_ctx(tmp_path, caps_from(texts), embedder)
    obs = clip_retrieve.run(ctx, {"query": "Fresnel lens invented", "top_k": 11})
    assert not obs.error, obs.text
    assert obs.text.count("THE FRESNEL LENS") == 1
    assert "[0.0s–30.0s], [50.0s–55.0s] sim" in obs.text and "(7 clips, same caption)" in obs.text
    assert len(obs.data["clips"]) == 11  # every hit reaches the model and the trace
    assert "A woman reads a book on a sofa." in obs.text
