"""The entity graph's LLM extraction, super-nodes and importance (avi/index/graph/; AVI §3.2.3, §6.2).

The LLM is replaced by :class:`ScriptedGraphLLM` and the embedder by
:class:`KeywordTestEmbedder` (both test doubles with answers fixed here), so
every expected node, edge, span and score is known by hand. One slow test runs
the real 1.5B orchestrator on a few hand-written captions.
"""

from __future__ import annotations

import copy
import json
import math
import time
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from avi.backends.llm import ChatResult, ContextOverflowError
from avi.backends.types import Caption
from avi.index.graph import (
    add_super_nodes,
    build_entity_graph,
    caption_lines,
    choose_k,
    chunk_captions,
    entity_affinity,
    extraction_schema,
    importance,
    load_graph,
    node_text,
    parse_extraction,
    save_graph,
    update_scores,
)
from avi.prompts import PromptLibrary

REPO = Path(__file__).resolve().parent.parent
PROMPTS = PromptLibrary(REPO / "prompts")


class ScriptedGraphLLM:
    """Test double standing in for avi.backends.llm.ChatClient in graph extraction.

    ``chat`` has the real client's signature and returns the scripted replies in
    order: a ``dict`` is sent as its JSON, a ``str`` as is, an exception instance
    is raised. Every call's messages (deep-copied), ``json_schema``, temperature
    and seed are recorded in ``calls``.
    """

    def __init__(self, replies):
        self.replies = list(replies)
        self.calls: list[dict] = []
        self.model = "scripted-graph"

    def chat(self, messages, tools=None, *, max_tokens, temperature, seed, stop=None, require_tool=None,
             json_schema=None):
        self.calls.append({"messages": copy.deepcopy(messages), "json_schema": json_schema,
                           "temperature": temperature, "seed": seed, "max_tokens": max_tokens})
        if not self.replies:
            raise AssertionError(f"ScriptedGraphLLM: script exhausted at call {len(self.calls)}")
        r = self.replies.pop(0)
        if isinstance(r, BaseException):
            raise r
        content = json.dumps(r) if isinstance(r, dict) else r
        return ChatResult(content=content, finish_reason="stop", prompt_tokens=200, completion_tokens=50,
                          seconds=0.01)


class KeywordTestEmbedder:
    """Test double for the Embedder protocol: each text's vector is fixed by the first keyword it contains.

    Args:
        table: keyword -> vector (any length, normalised here); a text with no
            keyword gets the last basis vector, orthogonal to the others if the
            table leaves it unused.
    """

    name = "keyword-test"

    def __init__(self, table: dict[str, list[float]]):
        self.table = {k: np.asarray(v, dtype=np.float32) / np.linalg.norm(v) for k, v in table.items()}
        self.dim = len(next(iter(self.table.values())))
        self.seen: list[str] = []

    def embed(self, texts):
        self.seen.extend(texts)
        out = []
        for t in texts:
            v = next((v for k, v in self.table.items() if k in t.lower()), None)
            if v is None:
                v = np.zeros(self.dim, dtype=np.float32)
                v[-1] = 1.0
            out.append(v)
        return np.stack(out) if out else np.zeros((0, self.dim), dtype=np.float32)


def _cap(i: int, text: str, dur: float = 5.0, **data) -> Caption:
    return Caption(i, dur * i, dur * (i + 1), text, "test", data)


# Four 5 s clips; with chunk_chars fitting two lines, chunk 1 is 0-10 s and chunk 2 is 10-20 s.
TEXTS = [
    "Subject_100, a tall man in a red shirt, walks into a library.",
    "A woman in a blue coat sits down; Subject_100 hands her a book.",
    "Subject_100 puts on glasses and leaves.",
    "The woman in the blue coat waves goodbye and keeps reading.",
]

CHUNK1 = {
    "subjects": [
        {"subject_id": "Subject_100", "subject_name": "man in red shirt", "appearance_timeline": [[0, 10]],
         "attributes": ["red shirt", "tall"],
         "actions_events": [{"action": "walks into library", "timestamp": ["0:01", "4.5s"]}]},
        {"subject_id": None, "subject_name": "Woman in blue coat", "appearance_timeline": [[5, 10]],
         "attributes": ["blue coat"], "actions_events": [{"action": "sits down", "timestamp": [6, 8]}]},
    ],
    "interactions": [{"subjects_involved": ["Subject_100", "woman in blue coat"],
                      "interaction_description": "hands her a book", "timestamp": [7, 9]}],
}
CHUNK2 = {
    "subjects": [
        {"subject_id": "Subject_100", "subject_name": "man", "appearance_timeline": [[10, 15]],
         "attributes": ["Red shirt", "glasses"], "actions_events": [{"action": "leaves", "timestamp": [13, 15]}]},
        {"subject_id": None, "subject_name": "woman in blue coat", "appearance_timeline": [[10, 20]],
         "attributes": ["blue coat", "reading"], "actions_events": [{"action": "reads", "timestamp": [15, 20]}]},
    ],
    "interactions": [{"subjects_involved": ["woman in blue coat", "Subject_100", "Subject_999"],
                      "interaction_description": "waves goodbye", "timestamp": [14, 15]}],
}


@pytest.fixture
def captions():
    return [_cap(i, t) for i, t in enumerate(TEXTS)]


def _two_line_chunks(captions) -> int:
    lines = caption_lines(captions)
    return max(len(lines[0]) + 1 + len(lines[1]), len(lines[2]) + 1 + len(lines[3]))


def _build(captions, replies, **kw):
    llm = ScriptedGraphLLM(replies)
    if "chunk_chars" not in kw:
        kw["chunk_chars"] = _two_line_chunks(captions)
    g = build_entity_graph(captions, llm=llm, prompts=PROMPTS, **kw)
    return g, llm


# ----------------------------------------------------------------- chunking and the request


def test_caption_lines_format(captions):
    assert caption_lines(captions)[0] == "[0.0s–5.0s] " + TEXTS[0]
    assert caption_lines([_cap(0, "two\nlines  here")]) == ["[0.0s–5.0s] two lines here"]


def test_chunking_by_chars_counts_calls(captions):
    lines = caption_lines(captions)
    n = len(lines[0]) + 1 + len(lines[1])
    assert [len(c) for c in chunk_captions(captions, n)] == [2, 2]
    assert [len(c) for c in chunk_captions(captions, n - 1)][0] == 1
    assert [len(c) for c in chunk_captions(captions, 100_000)] == [4]
    one = chunk_captions([_cap(0, "x" * 50)], 20)
    assert len(one) == 1 and len(one[0][0][1]) == 20 and one[0][0][1].endswith("…")
    with pytest.raises(ValueError):
        chunk_captions(captions, 0)
    empty = {"subjects": [], "interactions": []}
    for chars, calls in ((100_000, 1), (_two_line_chunks(captions), 2), (max(map(len, lines)), 4)):
        g, llm = _build(captions, [empty] * calls, chunk_chars=chars)
        assert len(llm.calls) == calls and g.graph["extraction"]["chunks"] == calls
        for call in llm.calls:
            user = call["messages"][-1]["content"]
            assert len("\n".join(x for x in user.splitlines() if x.startswith("["))) <= chars


def test_request_shape(captions):
    g, llm = _build(captions, [CHUNK1, CHUNK2])
    first, second = llm.calls
    assert first["temperature"] == 0.0 and first["seed"] == 0 and first["max_tokens"] == 1536
    assert first["json_schema"] == extraction_schema()
    assert first["messages"][0] == {"role": "system", "content": PROMPTS.render("graph_extract")}
    user1 = first["messages"][1]["content"]
    assert "Captions from 0 to 10 seconds:" in user1 and "[0.0s–5.0s] " + TEXTS[0] in user1
    assert "Known subjects" not in user1 and TEXTS[2] not in user1
    user2 = second["messages"][1]["content"]
    assert "Captions from 10 to 20 seconds:" in user2 and TEXTS[0] not in user2
    assert "subject_id: Subject_100; subject_name: man in red shirt" in user2
    assert "subject_id: null; subject_name: Woman in blue coat" in user2
    ext = g.graph["extraction"]
    assert ext["llm"] == "scripted-graph" and ext["chunks"] == 2 and ext["calls"] == 2
    assert ext["prompt_tokens"] == 400 and ext["completion_tokens"] == 100 and ext["failed_chunks"] == []


def test_schema_is_strict_and_self_contained():
    schema = extraction_schema()
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text and '"title"' not in text
    assert schema["required"] == ["subjects", "interactions"] and schema["additionalProperties"] is False
    subj = schema["properties"]["subjects"]["items"]
    assert subj["required"] == ["subject_id", "subject_name", "appearance_timeline", "attributes", "actions_events"]
    iv = subj["properties"]["appearance_timeline"]["items"]
    assert iv["minItems"] == iv["maxItems"] == 2 and iv["items"]["type"] == "number"


# ----------------------------------------------------------------- merging across chunks


def test_subjects_merged_by_id_and_name(captions):
    g, _ = _build(captions, [CHUNK1, CHUNK2])
    subjects = {n for n, k in g.nodes(data="kind") if k == "subject"}
    assert subjects == {"subject:subject_100", "subject:woman in blue coat"}
    man = g.nodes["subject:subject_100"]
    assert man["name"] == "man in red shirt" and man["subject_id"] == "Subject_100" and man["source"] == "llm"
    assert man["attributes"] == ["red shirt", "tall", "glasses"]  # "Red shirt" is a duplicate
    assert man["spans"] == [[0.0, 15.0]] and man["clips"] == [0, 1, 2]
    assert man["actions"] == [{"action": "walks into library", "start_s": 1.0, "end_s": 4.5},
                              {"action": "leaves", "start_s": 13.0, "end_s": 15.0}]
    woman = g.nodes["subject:woman in blue coat"]
    assert woman["name"] == "Woman in blue coat" and woman["subject_id"] is None
    assert woman["spans"] == [[5.0, 20.0]] and woman["clips"] == [1, 2, 3]
    assert [a["action"] for a in woman["actions"]] == ["sits down", "reads"]
    assert woman["attributes"] == ["blue coat", "reading"]


def test_interaction_edges_direction_and_times(captions):
    g, _ = _build(captions, [CHUNK1, CHUNK2])
    inter = {(a, b): d for a, b, d in g.edges(data=True) if d["relation"] == "interacts"}
    assert set(inter) == {("subject:subject_100", "subject:woman in blue coat"),
                          ("subject:woman in blue coat", "subject:subject_100")}
    give = inter["subject:subject_100", "subject:woman in blue coat"]
    assert give["spans"] == [[7.0, 9.0]] and give["descriptions"] == ["hands her a book"]
    wave = inter["subject:woman in blue coat", "subject:subject_100"]
    assert wave["spans"] == [[14.0, 15.0]] and wave["descriptions"] == ["waves goodbye"]
    assert g.graph["extraction"]["dropped_references"] == 1  # Subject_999
    # LLM subjects are contained in the scene they appear in
    assert g.edges["scene:0", "subject:subject_100"] == {"relation": "contains", "spans": [[0.0, 15.0]]}


def test_invented_id_does_not_merge(captions):
    """An id the captions never wrote is not an identity: two chunks' "Person_1" stay two people."""
    r1 = {"subjects": [{"subject_id": "Person_1", "subject_name": "man in red shirt", "appearance_timeline": [[0, 5]],
                        "attributes": [], "actions_events": []}], "interactions": []}
    r2 = {"subjects": [{"subject_id": "Person_1", "subject_name": "woman in blue coat",
                        "appearance_timeline": [[10, 15]], "attributes": [], "actions_events": []}],
          "interactions": []}
    g, _ = _build(captions, [r1, r2])
    assert g.nodes["subject:man in red shirt"]["subject_id"] is None
    assert g.nodes["subject:woman in blue coat"]["spans"] == [[10.0, 15.0]]
    assert g.graph["extraction"]["ungrounded_ids"] == 2


def test_different_ids_same_name_stay_apart():
    caps = [_cap(0, "Subject_1, a man, waves."), _cap(1, "Subject_2, a man, sits.")]
    r = [{"subjects": [{"subject_id": f"Subject_{i + 1}", "subject_name": "man",
                        "appearance_timeline": [[5 * i, 5 * i + 5]], "attributes": [], "actions_events": []}],
          "interactions": []} for i in range(2)]
    g, _ = _build(caps, r, chunk_chars=len(caption_lines(caps)[0]))
    assert {n for n, k in g.nodes(data="kind") if k == "subject"} == {"subject:subject_1", "subject:subject_2"}


def test_merge_by_embedding(captions):
    emb = KeywordTestEmbedder({"red shirt": [1, 0, 0], "blue coat": [0, 1, 0]})
    r2 = copy.deepcopy(CHUNK2)
    r2["subjects"][0].update(subject_id=None, subject_name="guy in red shirt", attributes=["red shirt"])
    r2["interactions"] = []
    g, _ = _build(captions, [CHUNK1, r2], embedder=emb)
    assert {n for n, k in g.nodes(data="kind") if k == "subject"} == {"subject:subject_100",
                                                                     "subject:woman in blue coat"}
    assert g.nodes["subject:subject_100"]["spans"] == [[0.0, 15.0]]
    # without an embedder the differently named man is a new node
    g2, _ = _build(captions, [CHUNK1, copy.deepcopy(r2)])
    assert "subject:guy in red shirt" in g2


def test_llm_subjects_join_structured_graph():
    caps = [_cap(0, "Subject_100 stands under an EXIT sign.", subject_registry={"person": {"name": "person"}},
                 ocr=[{"text": "EXIT", "t_s": 1.0}])]
    r = {"subjects": [{"subject_id": "Subject_100", "subject_name": "man", "appearance_timeline": [[0, 5]],
                       "attributes": [], "actions_events": []},
                      {"subject_id": None, "subject_name": "Person", "appearance_timeline": [[1, 2]],
                       "attributes": ["hat"], "actions_events": []}], "interactions": []}
    g, _ = _build(caps, [r], chunk_chars=1000)
    assert g.nodes["subject:subject_100"]["source"] == "llm"
    person = g.nodes["subject:person"]  # same name as the registry entry: one node
    assert person["source"] == "captions+llm" and person["attributes"] == ["hat"] and person["spans"] == [[0.0, 5.0]]
    assert g.has_edge("subject:person", "text:exit")


# ----------------------------------------------------------------- validation and repair


def test_parse_extraction_accepts_time_strings_and_clamps():
    ext, err = parse_extraction("```json\n" + json.dumps(CHUNK1) + "\n```", 0.0, 9.5)
    assert err is None
    assert ext.subjects[0].actions_events[0].timestamp == [1.0, 4.5]
    assert ext.subjects[0].appearance_timeline == [[0.0, 9.5]]  # 10 is within the tolerance: clamped


@pytest.mark.parametrize("reply, fragment", [
    ("{not json", "not valid JSON"),
    ('{"subjects": [{"subject_name": "x", "appearance_timeline": [[1]]}]}', "subjects[0].appearance_timeline[0]"),
    ('{"subjects": [{"subject_name": "x", "appearance_timeline": [["soon", 2]]}]}', "not a time"),
    ('{"interactions": [{"subjects_involved": [], "timestamp": [8, 3]}]}', "start 8 is after end 3"),
    ('{"interactions": [{"subjects_involved": [], "timestamp": [30, 40]}]}', "outside the captions' time range"),
])
def test_parse_extraction_errors(reply, fragment):
    ext, err = parse_extraction(reply, 0.0, 10.0)
    assert ext is None and fragment in err


def test_repair_after_malformed_reply(captions):
    g, llm = _build(captions, ["Sure! Here it is: {\"subjects\": [", CHUNK1, CHUNK2])
    assert len(llm.calls) == 3
    repair = llm.calls[1]["messages"]
    assert repair[:2] == llm.calls[0]["messages"]
    assert repair[2] == {"role": "assistant", "content": "Sure! Here it is: {\"subjects\": ["}
    assert repair[3]["role"] == "user" and "not valid JSON" in repair[3]["content"]
    assert "between 0 and 10" in repair[3]["content"]
    ext = g.graph["extraction"]
    assert ext["failed_chunks"] == [] and ext["repairs"] == 1 and ext["calls"] == 3
    assert g.nodes["subject:subject_100"]["spans"] == [[0.0, 15.0]]


def test_two_malformed_replies_fail_the_chunk(captions):
    bad_times = copy.deepcopy(CHUNK1)
    bad_times["interactions"][0]["timestamp"] = [70, 90]
    g, llm = _build(captions, ["[]", bad_times, CHUNK2])
    assert len(llm.calls) == 3
    failed = g.graph["extraction"]["failed_chunks"]
    assert len(failed) == 1 and failed[0]["chunk"] == 0 and (failed[0]["start_s"], failed[0]["end_s"]) == (0.0, 10.0)
    assert "outside the captions' time range" in failed[0]["error"]
    # the graph is built from the other chunk only: nothing guessed for 0-10 s
    man = g.nodes["subject:subject_100"]
    assert man["spans"] == [[10.0, 15.0]] and man["name"] == "man"
    assert g.nodes["subject:woman in blue coat"]["spans"] == [[10.0, 20.0]]
    assert {n for n, k in g.nodes(data="kind") if k == "scene"} == {"scene:0"}


def test_context_overflow_fails_only_that_chunk(captions):
    g, llm = _build(captions, [ContextOverflowError("too long"), CHUNK2])
    assert len(llm.calls) == 2
    assert g.graph["extraction"]["failed_chunks"][0]["error"] == "too long"
    assert "subject:subject_100" in g


def test_progress_and_no_llm(captions):
    seen = []
    _build(captions, [CHUNK1, CHUNK2], progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 2), (2, 2)]
    g = build_entity_graph(captions)
    assert g.graph["n_clips"] == 4
    assert g.graph["extraction"] == {"llm": None, "chunks": 0, "failed_chunks": [], "seconds": 0.0,
                                     "dropped_references": 0}


# ----------------------------------------------------------------- super-nodes

# Three groups of entities: A (5 subjects in a kitchen), B (4 on-screen texts in a garden), C (2 in a car).
# Within a group the embeddings are close and the nodes linked; across groups both are apart.
GROUPS = {"A": ("kitchen", 5), "B": ("garden", 4), "C": ("car", 2)}


def _clustered_graph() -> tuple[nx.DiGraph, KeywordTestEmbedder]:
    g = nx.DiGraph()
    table = {}
    for gi, (group, (word, n)) in enumerate(GROUPS.items()):
        kind = "text" if group == "B" else "subject"
        for j in range(n):
            name = f"{word} {group}{j}"
            vec = [0.0] * 16
            vec[gi] = 1.0
            vec[3 + gi * 5 + j] = 0.3  # a little individual direction
            table[name.lower()] = vec
            attrs = [word, "indoor"] + ([f"extra{j}"] if j else [])
            g.add_node(f"{kind}:{name}", kind=kind, name=name, attributes=attrs,
                       spans=[[10.0 * gi + j, 10.0 * gi + j + 2]], clips=[gi])
        members = [n for n in g if word in n]  # the scene hub puts every pair within 2 hops
        for a, b in zip(members, members[1:]):
            g.add_edge(a, b, relation="co_occurs", spans=[])
        hub = f"scene:{gi}"
        g.add_node(hub, kind="scene", name=f"scene {gi}", spans=[[10.0 * gi, 10.0 * gi + 9]], clips=[gi])
        for m in members:
            g.add_edge(hub, m, relation="contains", spans=[])
    g.graph["n_clips"] = 3
    return g, KeywordTestEmbedder(table)


def test_entity_affinity_two_hop_rule():
    g = nx.DiGraph()
    for n in "abcd":
        g.add_node(n, kind="subject", name=n)
    g.add_edges_from([("a", "b"), ("c", "b"), ("c", "d")])  # a - b - c - d, direction ignored
    vecs = np.array([[1.0, 0], [1, 0], [0.6, -0.8], [-1, 0]])
    s = entity_affinity(g, list("abcd"), vecs)
    assert s[0, 1] == pytest.approx(1.0) and s[0, 2] == pytest.approx(0.6)  # 1 and 2 hops
    assert s[0, 3] == 0.0  # 3 hops (and negative cosine)
    assert s[1, 3] == 0.0  # 2 hops but negative cosine: clipped
    assert np.allclose(s, s.T) and np.allclose(np.diag(s), 1.0)


def test_choose_k_eigengap():
    block = lambda n: np.full((n, n), 0.9) + 0.1 * np.eye(n)  # noqa: E731
    s = np.zeros((11, 11))
    s[:5, :5], s[5:9, 5:9], s[9:, 9:] = block(5), block(4), block(2)
    assert choose_k(s, (2, 8)) == 3
    assert choose_k(s, (4, 8)) in range(4, 9)
    assert choose_k(np.eye(3), (3, 8)) is None  # k must be < n


def test_super_nodes_membership_attributes_spans():
    g, emb = _clustered_graph()
    made = add_super_nodes(g, emb)
    assert made == ["super:0", "super:1"]  # group C has only 2 entities
    assert g.graph["super_nodes"] == {"k": 3, "entities": 11, "clustered": 11, "nodes": made}
    a, b = g.nodes["super:0"], g.nodes["super:1"]
    assert a["kind"] == "super" and a["members"] == [f"subject:kitchen A{j}" for j in range(5)]
    assert b["members"] == [f"text:garden B{j}" for j in range(4)]
    assert a["attributes"] == ["kitchen", "indoor"] and b["attributes"] == ["garden", "indoor"]
    assert a["spans"] == [[0.0, 6.0]] and b["spans"] == [[10.0, 15.0]]
    assert a["name"].endswith(" group") and a["name"].startswith("kitchen A")
    groups = {(u, v) for u, v, r in g.edges(data="relation") if r == "groups"}
    assert groups == {("super:0", m) for m in a["members"]} | {("super:1", m) for m in b["members"]}
    assert g.edges["super:1", "text:garden B0"]["spans"] == [[10.0, 12.0]]
    assert "freq" in a and "centrality" in a
    # calling again replaces the super-nodes instead of stacking them
    assert add_super_nodes(g, emb) == made and sum(k == "super" for _, k in g.nodes(data="kind")) == 2


def test_super_nodes_skipped_when_few_entities():
    g = nx.DiGraph()
    for n in "abc":
        g.add_node(n, kind="subject", name=n, spans=[], clips=[])
    g.add_node("s", kind="scene", name="s", spans=[], clips=[])
    emb = KeywordTestEmbedder({"a": [1, 0]})
    assert add_super_nodes(g, emb) == [] and emb.seen == []


# ----------------------------------------------------------------- importance


def test_freq_centrality_and_importance_order():
    """Star a - b, a - c over 4 clips; numbers worked out by hand (AVI eq. 11-13)."""
    g = nx.DiGraph()
    g.add_node("a", kind="subject", name="a", spans=[[0.0, 20.0]], clips=[0, 1, 2, 3])
    g.add_node("b", kind="subject", name="b", spans=[[0.0, 5.0]], clips=[0])
    g.add_node("c", kind="text", name="c", spans=[[5.0, 10.0]], clips=[1])
    g.add_edge("a", "b")
    g.add_edge("c", "a")
    g.graph["n_clips"] = 4
    update_scores(g)
    assert g.nodes["a"]["freq"] == pytest.approx(math.log(21))
    assert g.nodes["b"]["freq"] == pytest.approx(0.25 * math.log(6))
    assert g.nodes["a"]["centrality"] == pytest.approx(1.0)  # max degree, on every b-c path
    assert g.nodes["b"]["centrality"] == pytest.approx(0.25)
    vecs = {"a": np.array([1.0, 0.0]), "b": np.array([0.0, 2.0]), "c": np.array([0.6, 0.8])}
    w = importance(g, np.array([0.0, 1.0]), vecs)
    assert w["a"] == pytest.approx(0.4 * math.log(21) + 0.3 * 1.0)
    assert w["b"] == pytest.approx(0.4 * 0.25 * math.log(6) + 0.3 * 0.25 + 0.3 * 1.0)
    assert w["c"] == pytest.approx(0.4 * 0.25 * math.log(6) + 0.3 * 0.25 + 0.3 * 0.8)
    assert sorted(w, key=w.get, reverse=True) == ["a", "b", "c"]
    # relevance alone reorders b and c; an unknown node is an error
    w2 = importance(g, np.array([1.0, 0.0]), {k: v for k, v in vecs.items() if k != "a"})
    assert set(w2) == {"b", "c"} and w2["c"] > w2["b"]
    with pytest.raises(KeyError):
        importance(g, np.array([1.0, 0.0]), {"zz": np.array([1.0, 0.0])})


def test_node_text():
    g = nx.DiGraph()
    g.add_node("subject:x", name="man in red shirt", attributes=["tall", "glasses"])
    g.add_node("text:exit", name="EXIT")
    assert node_text(g, "subject:x") == "man in red shirt: tall, glasses"
    assert node_text(g, "text:exit") == "EXIT"


# ----------------------------------------------------------------- persistence


def test_save_load_round_trip_full(captions, tmp_path):
    caps = [_cap(i, t, subject_registry={"person": {"name": "person"}}, ocr=[{"text": f"sign {i}", "t_s": 5.0 * i}])
            for i, t in enumerate(TEXTS)]
    g, _ = _build(caps, ["oops", CHUNK1, CHUNK2])
    emb = KeywordTestEmbedder({"red": [1, 0, 0], "blue": [0.9, 0.1, 0], "sign": [0, 1, 0]})
    add_super_nodes(g, emb, k_range=(2, 4))
    path = tmp_path / "graph.json"
    save_graph(g, path)
    h = load_graph(path)
    assert h.is_directed() and h.graph == g.graph
    assert dict(h.nodes(data=True)) == dict(g.nodes(data=True))
    assert {(a, b): d for a, b, d in h.edges(data=True)} == {(a, b): d for a, b, d in g.edges(data=True)}
    assert h.graph["extraction"]["repairs"] == 1
    assert h.nodes["subject:subject_100"]["actions"][0] == {"action": "walks into library", "start_s": 1.0,
                                                          "end_s": 4.5}


# ----------------------------------------------------------------- the real model


STORY = [
    "A man in a red shirt walks into a small library and looks along the shelves.",
    "A woman in a blue coat sits at a wooden table, reading a newspaper.",
    "The man in the red shirt takes a thick book from a shelf.",
    "The man in the red shirt hands the book to the woman in the blue coat.",
    "The woman in the blue coat opens the book and smiles at the man.",
    "The man in the red shirt waves and walks out of the library.",
]


@pytest.mark.slow
def test_real_model_extraction():
    """The 1.5B orchestrator extracts a schema-valid graph from six captions (names are not asserted)."""
    from avi.backends.llm import ChatClient
    from avi.backends.llm_server import LlamaCppServer
    from avi.config import Settings
    from avi.weights import resolve

    s = Settings()
    server = LlamaCppServer(resolve("qwen2.5-coder-1.5b-instruct", s.models_dir, s.weights_lock), n_ctx=8192)
    server.start()
    try:
        client = ChatClient.connect(server.base_url, constrain="json_schema")
        caps = [_cap(i, t) for i, t in enumerate(STORY)]
        t0 = time.perf_counter()
        g = build_entity_graph(caps, llm=client, prompts=PROMPTS)
        wall = time.perf_counter() - t0
    finally:
        server.stop()
    ext = g.graph["extraction"]
    print(f"\ngraph extraction: {json.dumps(ext)}\nwall {wall:.1f} s")
    for n, d in g.nodes(data=True):
        if d.get("source") == "llm":
            print(n, {k: d[k] for k in ("name", "subject_id", "spans", "attributes", "actions")})
    for a, b, d in g.edges(data=True):
        if d["relation"] == "interacts":
            print(a, "->", b, d)
    assert ext["chunks"] == 1 and ext["failed_chunks"] == []
    llm_subjects = [d for _, d in g.nodes(data=True) if d.get("source") == "llm"]
    assert llm_subjects
    for d in llm_subjects:
        assert all(0.0 <= s_ <= e <= 30.0 for s_, e in d["spans"])
        assert all(0.0 <= a["start_s"] <= a["end_s"] <= 30.0 for a in d["actions"])


# ----------------------------------------------------------------- subjects the captions do not support


def test_name_grounded_needs_every_descriptive_word():
    from avi.index.graph.merge import name_grounded

    perception = "People: up to 2 people visible (0–2 per frame). Dominant colours: black 74%, orange 21%."
    assert name_grounded("person", perception) and name_grounded("man", perception)  # any person noun
    assert not name_grounded("woman in blue coat", perception)  # no coat, no blue in these captions
    assert not name_grounded("man in black shirt", perception)  # black is there, a shirt is not
    assert name_grounded("the other woman in red shirts", "A woman in a red shirt sits.")
    assert not name_grounded("man", "A red car passes. No on-screen text read.")  # no person at all


def test_subjects_the_captions_do_not_mention_are_left_out():
    """The 1.5B model copied the people of the prompt into graphs of videos without them (vtest, Megamind)."""
    caps = [_cap(0, "People: up to 2 people visible (0–2 per frame). Dominant colours: black 74%.")]
    r = {"subjects": [{"subject_id": None, "subject_name": "woman in blue coat", "appearance_timeline": [[0, 5]],
                       "attributes": ["blue coat"], "actions_events": []},
                      {"subject_id": None, "subject_name": "person", "appearance_timeline": [[0, 5]],
                       "attributes": [], "actions_events": []}],
         "interactions": [{"subjects_involved": ["person", "woman in blue coat"],
                           "interaction_description": "hands over a book", "timestamp": [0, 5]}]}
    g, _ = _build(caps, [r], chunk_chars=1000)
    assert "subject:woman in blue coat" not in g and "subject:person" in g
    assert g.graph["extraction"]["ungrounded_subjects"] == ["woman in blue coat"]
    assert not any(d.get("relation") == "interacts" for _, _, d in g.edges(data=True))


def test_repeated_captions_are_sent_once_and_clips_without_people_not_at_all():
    """lecture.mp4: a slide held for a minute is twelve identical captions, and no clip shows a person; the graph
    stage sent all of them to the LLM (12,273 prompt tokens, 257 s) and got empty lists back."""
    from avi.index.caption_runs import merge_repeats, no_person_seen

    nobody = {"people_per_frame": [[0.0, 0], [0.5, 0]], "faces_per_frame": [[0.0, 0], [0.5, 0]]}
    someone = {"people_per_frame": [[0.0, 0], [0.5, 1]], "faces_per_frame": [[0.0, 0], [0.5, 0]]}
    slide = 'People: no people detected. On-screen text: "KEEPERS".'
    caps = [_cap(0, slide, **nobody), _cap(1, slide + "  ", **nobody), _cap(2, slide, **nobody),
            _cap(3, "A man in a red shirt walks in.", **someone), _cap(4, slide, **nobody)]
    runs = merge_repeats(caps)
    assert [(c.start_s, c.end_s) for c in runs] == [(0.0, 15.0), (15.0, 20.0), (20.0, 25.0)]
    assert runs[0].clip_index == 0 and runs[0].text == slide
    assert merge_repeats([_cap(0, slide), _cap(2, slide)])[1].start_s == 10.0  # not back to back: kept apart
    assert no_person_seen(caps[:3]) and not no_person_seen(caps[2:4])
    assert not no_person_seen([_cap(0, "A quiet street.")])  # prose with no counts: the LLM decides
    assert not no_person_seen([_cap(0, slide, people_per_frame=[[0.0, 0]], faces_per_frame=[[0.0, 1]])])

    llm = ScriptedGraphLLM([{"subjects": [], "interactions": []}])
    line = len(caption_lines([caps[3]])[0])
    g = build_entity_graph(caps, llm=llm, prompts=PROMPTS, chunk_chars=line + 2)
    ext = g.graph["extraction"]
    assert len(llm.calls) == 1 and ext["chunks"] == 3  # only the clip with a person was sent
    assert "[15.0s–20.0s] A man in a red shirt walks in." in llm.calls[0]["messages"][1]["content"]
    assert [(s["start_s"], s["end_s"]) for s in ext["skipped_chunks"]] == [(0.0, 15.0), (20.0, 25.0)]
