"""Super-nodes (AVI §6.2.1): spectral clusters of entities that are similar and at most two hops apart."""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

import networkx as nx
import numpy as np

from avi.index.graph.constants import ENTITY_KINDS
from avi.index.graph.importance import node_text, unit_rows, update_scores
from avi.index.graph.merge import dedupe, name_key
from avi.video.spans import merge_spans

if TYPE_CHECKING:
    from avi.backends.embedder import Embedder


def entity_affinity(g: nx.DiGraph, nodes: list[str], vecs: np.ndarray) -> np.ndarray:
    """``S_ij = max(0, cos(v_i, v_j)) * 1[undirected path between i and j of at most 2 hops]`` (AVI eq. 10).

    Paths run through any node but super-nodes; ``S_ii = 1``.

    Args:
        nodes: the entities, in the order of ``vecs``' rows.
        vecs: shape (len(nodes), dim).

    Returns:
        symmetric float64 array of shape (len(nodes), len(nodes)).
    """
    from scipy import sparse

    base = g.subgraph([n for n, d in g.nodes(data=True) if d.get("kind") != "super"]).to_undirected(as_view=True)
    order = list(base.nodes)
    pos = {n: i for i, n in enumerate(order)}
    a = sparse.csr_matrix(nx.to_scipy_sparse_array(base, nodelist=order, weight=None, format="csr"))
    a.data[:] = 1.0
    rows = a[[pos[n] for n in nodes], :]
    reach = (rows @ rows.T + rows[:, [pos[n] for n in nodes]]).toarray() > 0
    v = np.stack([unit_rows(np.asarray(x, dtype=np.float64)) for x in vecs]) if len(nodes) else np.zeros((0, 1))
    s = np.clip(v @ v.T, 0.0, None) * reach
    np.fill_diagonal(s, 1.0)
    return s


def choose_k(s: np.ndarray, k_range: tuple[int, int]) -> int | None:
    """Number of clusters by the largest eigengap of the normalised Laplacian of ``s``.

    ``k`` maximises ``lambda_{k+1} - lambda_k`` (eigenvalues ascending) over
    ``k_range`` (inclusive) restricted to ``k < n``; ties go to the smaller ``k``.

    Returns:
        ``k``, or None when no ``k`` is allowed.
    """
    n = s.shape[0]
    ks = [k for k in range(max(1, k_range[0]), min(k_range[1], n - 1) + 1)]
    if not ks:
        return None
    deg = s.sum(axis=1)
    inv = np.where(deg > 0, 1.0 / np.sqrt(np.where(deg > 0, deg, 1.0)), 0.0)
    lap = np.eye(n) - inv[:, None] * s * inv[None, :]
    lam = np.sort(np.linalg.eigvalsh((lap + lap.T) / 2))
    gaps = [lam[k] - lam[k - 1] for k in ks]
    return ks[int(np.argmax(gaps))]


MAX_CLUSTERED = 1000
"""Most entities clustered into super-nodes: the affinity matrix is dense (n x n) and its eigenvalues cost
O(n^3), so a day of a fixed camera with a clock overlay (one text entity per clip, 17,280) would take hours and
gigabytes; beyond this many, the entities seen in the most clips are clustered (about 10 s on 2 cores)."""


def add_super_nodes(g: nx.DiGraph, embedder: Embedder, k_range: tuple[int, int] = (3, 8),
                    min_members: int = 4, max_entities: int = MAX_CLUSTERED) -> list[str]:
    """Group entities into super-nodes by spectral clustering (AVI §3.2.3 eq. 3, §6.2.1 eq. 10).

    Over the entity nodes (kinds ``subject`` and ``text``) with
    :func:`entity_affinity` ``S`` of the embeddings of :func:`node_text`, ``k`` is
    chosen by :func:`choose_k` and scikit-learn's ``SpectralClustering``
    (``affinity="precomputed"``, ``random_state=0``) labels the entities. Each
    cluster of at least ``min_members`` entities whose members are connected
    through ``S > 0`` becomes node ``super:<i>`` (numbered by first appearance)
    with ``kind="super"``, ``members`` (sorted), ``name`` (``"<most central
    member's name> group"``, most central = largest summed ``S`` to the other
    members), ``spans`` (union of the members'), ``clips`` (union),
    ``attributes`` (those every member has, compared normalised) and a
    ``groups`` edge to each member (spans = the member's). Earlier super-nodes
    are removed first, so calling it again replaces them; scores are then
    updated (:func:`update_scores`). ``g.graph["super_nodes"]`` records ``k``,
    the number of entities and the super-node ids.

    Args:
        g: the graph, edited in place.
        embedder: text embedder (``embed(texts) -> (n, dim)``).
        k_range: smallest and largest number of clusters tried.
        min_members: smallest cluster that becomes a super-node (AVI: more than 3).
        max_entities: at most this many entities are clustered, those in the most clips (ties: by node id);
            ``g.graph["super_nodes"]["clustered"]`` says how many were.

    Returns:
        the new super-node ids; [] when there are fewer than ``min_members``
        entities or no allowed ``k``.
    """
    g.remove_nodes_from([n for n, d in list(g.nodes(data=True)) if d.get("kind") == "super"])
    ents = sorted(n for n, d in g.nodes(data=True) if d.get("kind") in ENTITY_KINDS)
    n_all = len(ents)
    if len(ents) > max_entities:
        ents = sorted(sorted(ents, key=lambda n: -len(g.nodes[n].get("clips") or []))[:max_entities])
    g.graph["super_nodes"] = {"k": None, "entities": n_all, "clustered": len(ents), "nodes": []}
    if len(ents) < min_members:
        update_scores(g)
        return []
    vecs = np.asarray(embedder.embed([node_text(g, n) for n in ents]), dtype=np.float64)
    s = entity_affinity(g, ents, vecs)
    k = choose_k(s, k_range)
    if k is None:
        update_scores(g)
        return []
    if k == 1:
        labels = np.zeros(len(ents), dtype=int)
    else:
        from sklearn.cluster import SpectralClustering

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "graph is not fully connected" is expected here
            labels = SpectralClustering(n_clusters=k, affinity="precomputed", random_state=0).fit_predict(s)
    clusters = []
    for lab in sorted(set(labels.tolist())):
        idx = [i for i in range(len(ents)) if labels[i] == lab]
        if len(idx) < min_members:
            continue
        sub = s[np.ix_(idx, idx)]
        if nx.number_connected_components(nx.from_numpy_array((sub > 0).astype(int))) != 1:
            continue
        clusters.append(idx)
    made = []

    def first_seen(idx: list[int]) -> tuple:
        starts = [sp[0] for i in idx for sp in g.nodes[ents[i]].get("spans") or []]
        return (min(starts) if starts else math.inf, ents[idx[0]])

    for num, idx in enumerate(sorted(clusters, key=first_seen)):
        members = [ents[i] for i in idx]
        sub = s[np.ix_(idx, idx)]
        central = members[int(np.argmax(sub.sum(axis=1) - 1.0))]
        shared = [a for a in g.nodes[central].get("attributes") or []
                  if all(name_key(a) in {name_key(b) for b in g.nodes[m].get("attributes") or []} for m in members)]
        node = f"super:{num}"
        g.add_node(node, kind="super", name=f"{g.nodes[central]['name']} group", members=sorted(members),
                   attributes=dedupe(shared),
                   spans=merge_spans([list(sp) for m in members for sp in g.nodes[m].get("spans") or []]),
                   clips=sorted({c for m in members for c in g.nodes[m].get("clips") or []}))
        for m in members:
            g.add_edge(node, m, relation="groups", spans=[list(sp) for sp in g.nodes[m].get("spans") or []])
        made.append(node)
    g.graph["super_nodes"] = {"k": int(k), "entities": n_all, "clustered": len(ents), "nodes": made}
    update_scores(g)
    return made
