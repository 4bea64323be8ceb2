"""Entity graph over the clip captions (networkx ``DiGraph``), after AVI §3.2.3.

This builds the graph from the *structured* fields of the captions (the subject
registry and the on-screen text of each clip), which every captioner writes;
the LLM extraction of subjects, actions and interactions from caption prose
(AVI Fig. 8), super-nodes by spectral clustering and importance weights
(AVI §6.2) come with the database issue and extend this graph.

Nodes (``kind`` attribute):
    * ``subject``: an entry of a clip's subject registry, keyed by name;
    * ``text``: a distinct on-screen string (normalised);
    * ``scene``: a run of clips between shot changes.
Every node has ``name``, ``spans`` ([[start_s, end_s], ...], merged) and ``clips``.

Edges (``relation`` attribute, each with merged ``spans``):
    * scene -> entity ``contains``;
    * entity -> entity ``co_occurs`` (both in the same clip; stored in both
      directions, since the graph is directed).
"""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

import networkx as nx
from networkx.readwrite import json_graph

from avi.backends.captioner import normalise_text
from avi.backends.types import Caption


def merge_spans(spans: list[list[float]], gap_s: float = 1e-3) -> list[list[float]]:
    """Union of time intervals: overlapping or touching spans (within ``gap_s``) merged."""
    out: list[list[float]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1] + gap_s:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


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


def build_entity_graph(captions: list[Caption]) -> nx.DiGraph:
    """Build the entity graph from captions in time order.

    Args:
        captions: one per clip, with ``data["subject_registry"]`` and
            ``data["ocr"]`` as written by the captioners (either may be absent).

    Returns:
        the graph; node and edge spans are merged into disjoint intervals.
    """
    g = nx.DiGraph()
    scene = 0
    scene_node = None
    for cap in sorted(captions, key=lambda c: c.start_s):
        cuts = cap.data.get("shot_changes_s", [])
        if scene_node is None or cuts:
            scene += 1 if scene_node is not None else 0
            scene_node = f"scene:{scene}"
        _add_presence(g, scene_node, "scene", f"scene {scene}", cap)
        present: list[str] = []
        for key, subj in (cap.data.get("subject_registry") or {}).items():
            name = str(subj.get("name") or key)
            node = f"subject:{normalise_text(name)}"
            attrs = {"first_seen": subj.get("first_seen", cap.start_s)}
            if "max_count" in subj:
                attrs["max_count"] = subj["max_count"]
            _add_presence(g, node, "subject", name, cap, **attrs)
            present.append(node)
        for item in cap.data.get("ocr") or []:
            key = normalise_text(item["text"])
            if not key:
                continue
            node = f"text:{key}"
            _add_presence(g, node, "text", item["text"], cap, first_seen=item.get("t_s", cap.start_s))
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


def save_graph(g: nx.DiGraph, path: Path) -> None:
    """Write the graph as node-link JSON."""
    Path(path).write_text(json.dumps(json_graph.node_link_data(g, edges="edges"), indent=1))


def load_graph(path: Path) -> nx.DiGraph:
    """Read a graph written by :func:`save_graph`."""
    return json_graph.node_link_graph(json.loads(Path(path).read_text()), directed=True, edges="edges")
