"""Node importance (AVI §6.2.2, eq. 11-13): frequency and centrality stored on the nodes, query relevance
at question time."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import networkx as nx
import numpy as np

from avi.index.graph.constants import EXACT_BETWEENNESS_MAX_NODES

if TYPE_CHECKING:
    pass


def unit_rows(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def node_text(g: nx.DiGraph, node: str) -> str:
    """The text embedded for a node: ``"name"`` or ``"name: attr1, attr2"``.

    Raises:
        KeyError: ``node`` is not in the graph.
    """
    d = g.nodes[node]
    name = str(d.get("name") or node)
    attrs = [str(a) for a in d.get("attributes") or []]
    return f"{name}: {', '.join(attrs)}" if attrs else name


def update_scores(g: nx.DiGraph) -> None:
    """Store ``freq`` and ``centrality`` on every node (AVI §6.2.2, eq. 11 and 12).

    ``freq = |clips of the node| / g.graph["n_clips"] * ln(1 + total seconds of its spans)``
    (0 when ``n_clips`` is 0 or missing). ``centrality = 0.5 * degree / max degree
    + 0.5 * betweenness`` on the undirected view of the whole graph, betweenness
    normalised by networkx (estimated from 500 sources, seed 0, above
    :data:`EXACT_BETWEENNESS_MAX_NODES` nodes). Called by :func:`build_entity_graph`
    and :func:`add_super_nodes`; call it again after editing the graph.
    """
    n_clips = g.graph.get("n_clips") or 0
    for _, d in g.nodes(data=True):
        dur = sum(max(0.0, e - s) for s, e in d.get("spans") or [])
        frac = len(d.get("clips") or []) / n_clips if n_clips else 0.0
        d["freq"] = float(frac * math.log1p(dur))
    if g.number_of_nodes() == 0:
        return
    u = nx.Graph()  # a plain copy without attributes: much faster to traverse than an undirected view
    u.add_nodes_from(g)
    u.add_edges_from(g.edges())
    deg = dict(u.degree())
    top = max(deg.values())
    k = None if u.number_of_nodes() <= EXACT_BETWEENNESS_MAX_NODES else 500
    btw = nx.betweenness_centrality(u, k=k, normalized=True, seed=0)
    for n, d in g.nodes(data=True):
        d["centrality"] = float(0.5 * (deg[n] / top if top else 0.0) + 0.5 * btw[n])


def importance(g: nx.DiGraph, query_vec: np.ndarray, node_vecs: Mapping[str, np.ndarray],
               weights: tuple[float, float, float] = (0.4, 0.3, 0.3)) -> dict[str, float]:
    """Query-dependent importance of nodes (AVI §3.2.3 eq. 4, §6.2.2 eq. 11-13).

    ``w = 0.4 * freq + 0.3 * centrality + 0.3 * cos(node_vec, query_vec)`` with
    ``freq`` and ``centrality`` as stored by :func:`update_scores` (0 if absent).

    Args:
        g: the graph.
        query_vec: embedding of the question, shape (dim,).
        node_vecs: embedding of :func:`node_text` per node to score, each shape (dim,);
            only these nodes are scored. Vectors need not be normalised.
        weights: (lambda_1, lambda_2, lambda_3).

    Returns:
        node -> w.

    Raises:
        KeyError: a node of ``node_vecs`` is not in the graph.
    """
    q = unit_rows(np.asarray(query_vec, dtype=np.float64).ravel())
    l1, l2, l3 = weights
    out = {}
    for n, v in node_vecs.items():
        if n not in g:
            raise KeyError(f"node {n!r} is not in the graph")
        d = g.nodes[n]
        rel = float(unit_rows(np.asarray(v, dtype=np.float64).ravel()) @ q)
        out[n] = l1 * float(d.get("freq", 0.0)) + l2 * float(d.get("centrality", 0.0)) + l3 * rel
    return out
