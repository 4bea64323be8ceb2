"""The structured layer of the entity graph: scenes, subject-registry entries and on-screen texts from
the fields every captioner writes (no LLM)."""

from __future__ import annotations

from itertools import combinations
from typing import TYPE_CHECKING

import networkx as nx

from avi.backends.captioner import normalise_text
from avi.backends.types import Caption
from avi.video.spans import merge_spans

if TYPE_CHECKING:
    pass


def _add_presence(g: nx.DiGraph, node: str, kind: str, name: str, cap: Caption, **attrs) -> None:
    if node not in g:
        g.add_node(node, kind=kind, name=name, spans=[], clips=[], **attrs)
    data = g.nodes[node]
    data["spans"].append([cap.start_s, cap.end_s])
    data["clips"].append(cap.clip_index)
    for k, v in attrs.items():
        if k == "max_count":
            data[k] = max(data.get(k, 0), v)
        else:
            data.setdefault(k, v)


def _add_edge(g: nx.DiGraph, a: str, b: str, relation: str, cap: Caption) -> None:
    if not g.has_edge(a, b):
        g.add_edge(a, b, relation=relation, spans=[])
    g.edges[a, b]["spans"].append([cap.start_s, cap.end_s])


def structured_graph(captions: list[Caption]) -> nx.DiGraph:
    g = nx.DiGraph()
    scene = 0
    scene_node = None
    for cap in captions:
        cuts = cap.data.get("shot_changes_s", [])
        if scene_node is None or cuts:
            scene += 1 if scene_node is not None else 0
            scene_node = f"scene:{scene}"
        _add_presence(g, scene_node, "scene", f"scene {scene}", cap)
        present: list[str] = []
        for key, subj in (cap.data.get("subject_registry") or {}).items():
            name = str(subj.get("name") or key)
            node = f"subject:{normalise_text(name)}"
            attrs = {"first_seen": subj.get("first_seen", cap.start_s), "source": "captions"}
            if "max_count" in subj:
                attrs["max_count"] = subj["max_count"]
            _add_presence(g, node, "subject", name, cap, **attrs)
            present.append(node)
        for item in cap.data.get("ocr") or []:
            key = normalise_text(item["text"])
            if not key:
                continue
            node = f"text:{key}"
            _add_presence(g, node, "text", item["text"], cap, first_seen=item.get("t_s", cap.start_s),
                          source="captions")
            present.append(node)
        for node in present:
            _add_edge(g, scene_node, node, "contains", cap)
        for a, b in combinations(sorted(set(present)), 2):
            _add_edge(g, a, b, "co_occurs", cap)
            _add_edge(g, b, a, "co_occurs", cap)
    for _, data in g.nodes(data=True):
        data["spans"] = merge_spans(data["spans"])
        data["clips"] = sorted(set(data["clips"]))
    for _, _, data in g.edges(data=True):
        data["spans"] = merge_spans(data["spans"])
    return g
