"""``graph_retrieve`` (AVI §3.2.3, §6.2): entity lookup in the entity graph, k-hop traversal and
importance-ranked (entity, relation, entity, time) triples."""

from __future__ import annotations

from typing import Annotated

import networkx as nx
import numpy as np
from pydantic import Field

from avi.index.graph import importance, node_text
from avi.tools.base import Observation, Query, ToolContext, tool
from avi.tools.retrieve.common import (
    ENTITY_MIN_COSINE,
    SEED_MARGIN,
    _fit,
    _max_chars,
    _query_vec,
    _short,
    _spans_text,
    cached_vectors,
)
from avi.video.spans import merge_spans
from avi.video.timecode import fmt_range

_ENTITY_KINDS = ("subject", "text", "super")
_SKIP_RELATIONS = ("groups", "contains")  # super -> member, scene -> entity: not entity relations


def _llm_extracted(g: nx.DiGraph) -> bool:
    return bool((g.graph.get("extraction") or {}).get("llm")) or any(
        "llm" in str(d.get("source", "")) for _, d in g.nodes(data=True))


def _entity_line(g: nx.DiGraph, n: str, w: float, sim: float, member_of: dict[str, list[str]]) -> str:
    d = g.nodes[n]
    kind = {"super": "group", "text": "on-screen text"}.get(d.get("kind"), d.get("kind"))
    parts = [f"{d.get('name', n)} ({kind}, w {w:.2f}, match {sim:.2f})"]
    if d.get("kind") == "super":
        names = [str(g.nodes[m].get("name", m)) for m in d.get("members") or [] if m in g]
        parts.append(f"members: {_short(', '.join(names), 160)}")
    attrs = [str(a) for a in d.get("attributes") or []]
    if attrs:
        parts.append("attributes: " + _short(", ".join(attrs), 140))
    if d.get("max_count"):
        parts.append(f"up to {d['max_count']} at once")
    if d.get("spans"):
        parts.append("seen " + _spans_text(d["spans"]))
    acts = d.get("actions") or []
    if acts:
        parts.append("actions: " + "; ".join(f"{a['action']} {fmt_range(a['start_s'], a['end_s'])}"
                                             for a in acts[:3]) + (f" +{len(acts) - 3} more" if len(acts) > 3 else ""))
    if member_of.get(n):
        parts.append("in " + ", ".join(str(g.nodes[s].get("name", s)) for s in member_of[n]))
    return "- " + "; ".join(parts)


@tool("retrieve")
def graph_retrieve(ctx: ToolContext, query: Query, hops: Annotated[int, Field(ge=1, le=2)] = 1,
                   top_k: Annotated[int, Field(ge=1, le=30)] = 10) -> Observation:
    """Look up people, objects or on-screen text in the entity graph; returns their facts and relations with times.

    AVI §3.3.1 ``graph_retrieve`` over the entity graph of §3.2.3/§6.2
    (:mod:`avi.index.graph`). The query is embedded and compared (cosine) with
    every entity's :func:`~avi.index.graph.node_text` (subjects, on-screen
    texts, super-nodes). The best match and the entities within
    :data:`SEED_MARGIN` of it (at most 3, each >= :data:`ENTITY_MIN_COSINE`) are
    the seeds; a super-node seed expands to its members. From the seeds the
    graph is walked ``hops`` steps along entity relations (``co_occurs``,
    ``interacts``; not scene ``contains`` or super-node ``groups``). Every entity
    reached gets the importance ``w = 0.4*freq + 0.3*centrality + 0.3*query_rel``
    (AVI eq. 11-13, :func:`~avi.index.graph.importance`, query_rel computed now),
    and every relation among them the score ``w(a) + w(b)``.

    Args:
        query: the entity to look up (a name, description or on-screen text), or a question about it.
        hops: how many relation steps to walk from the matched entities (1 or 2).
        top_k: how many entities and how many relations to return.

    Returns:
        Observation with the matched entities, the top_k entities by importance
        (kind, attributes, appearance spans, actions) and the top_k relations
        ``(entity, relation, entity, [t_start, t_end])``; ``data`` holds
        ``matches``, ``entities``, ``triples`` (with all spans) and ``llm_graph``;
        evidence is the time spans of the matched entities and returned relations.
        When nothing matches (best cosine < :data:`ENTITY_MIN_COSINE`) an error
        observation lists the nearest known entities.

    Raises:
        ValueError: empty query, or a graph without entities.
    """
    query = query.strip()
    if not query:
        raise ValueError("query is empty; name the person, object or text to look up")
    g: nx.DiGraph = ctx.index.graph
    llm_graph = _llm_extracted(g)
    ents = sorted(n for n, d in g.nodes(data=True) if d.get("kind") in _ENTITY_KINDS)
    no_llm = ("this index's entity graph was built without LLM extraction (graph_llm off), so it holds only "
              "on-screen texts and detected subject types (person, face, object classes), linked when seen together; "
              "for people, actions and interactions use clip_retrieve or frame_analysis")
    if not ents:
        raise ValueError("the entity graph of this video has no entities" + (
            "" if llm_graph else f" ({no_llm})") + "; use clip_retrieve or global_explore instead")
    vecs = cached_vectors(ctx.index, ctx.backends.embedder, "graph",
                          [f"{n}\x1e{node_text(g, n)}" for n in ents],
                          compute=lambda: ctx.backends.embedder.embed([node_text(g, n) for n in ents]))
    q = _query_vec(ctx, query)
    sims = vecs @ q
    order = np.argsort(-sims, kind="stable")
    best = float(sims[order[0]])
    sim_of = {ents[i]: float(sims[i]) for i in range(len(ents))}
    if best < ENTITY_MIN_COSINE:
        near = [ents[i] for i in order[:5]]
        listing = ", ".join(f'"{g.nodes[n].get("name", n)}" ({sim_of[n]:.2f})' for n in near)
        text = (f'graph_retrieve: no entity in the graph matches "{_short(query, 80)}" (best similarity {best:.2f} '
                f"< {ENTITY_MIN_COSINE}). Nearest known entities: {listing}. Query one of these names, or use "
                "clip_retrieve for things that are not entities.")
        if not llm_graph:
            text += f"\nNote: {no_llm}."
        return Observation(text, {"query": query, "unknown": True, "best_similarity": round(best, 4),
                                  "nearest": [{"node": n, "name": g.nodes[n].get("name", n),
                                               "similarity": round(sim_of[n], 4)} for n in near],
                                  "llm_graph": llm_graph}, error=True)
    seeds = [ents[i] for i in order[:3] if sims[i] >= max(ENTITY_MIN_COSINE, best - SEED_MARGIN)]
    start: list[str] = []
    for n in seeds:
        if g.nodes[n].get("kind") == "super":
            start += [m for m in g.nodes[n].get("members") or [] if m in g]
        else:
            start.append(n)
    walk = nx.Graph()
    walk.add_nodes_from(n for n in ents if g.nodes[n].get("kind") != "super")
    walk.add_edges_from((a, b) for a, b, d in g.edges(data=True)
                        if d.get("relation") not in _SKIP_RELATIONS and a in walk and b in walk)
    dist: dict[str, int] = {}
    for n in dict.fromkeys(start):
        for m, k in nx.single_source_shortest_path_length(walk, n, cutoff=hops).items():
            dist[m] = min(dist.get(m, k), k)
    for n in seeds:
        dist.setdefault(n, 0)  # super-node seeds are reported too
    row = {n: i for i, n in enumerate(ents)}
    w = importance(g, q, {n: vecs[row[n]] for n in dist})
    triples, seen = [], set()
    for a, b, d in g.edges(data=True):
        rel = d.get("relation", "related")
        if rel in _SKIP_RELATIONS or a not in dist or b not in dist or a == b:
            continue
        key = (frozenset((a, b)), rel) if rel == "co_occurs" else (a, b, rel)
        if key in seen:
            continue
        seen.add(key)
        spans = merge_spans([list(map(float, sp)) for sp in d.get("spans") or []])
        triples.append({"source": a, "source_name": g.nodes[a].get("name", a), "relation": rel, "target": b,
                        "target_name": g.nodes[b].get("name", b), "descriptions": list(d.get("descriptions") or []),
                        "spans": spans, "t": [spans[0][0], spans[-1][1]] if spans else None,
                        "score": round(w[a] + w[b], 4)})
    triples.sort(key=lambda t: (-t["score"], t["t"][0] if t["t"] else 0.0, t["source"], t["target"]))
    triples = triples[:top_k]
    member_of: dict[str, list[str]] = {}
    for n, d in g.nodes(data=True):
        if d.get("kind") == "super":
            for m in d.get("members") or []:
                member_of.setdefault(m, []).append(n)
    ranked = sorted(dist, key=lambda n: (-w[n], n))[:top_k]
    seed_txt = ", ".join(f'"{g.nodes[n].get("name", n)}" ({sim_of[n]:.2f})' for n in seeds)
    head = (f'graph_retrieve "{_short(query, 80)}": matched {seed_txt}; {len(dist)} entities within {hops} '
            f"hop{'s' if hops > 1 else ''}, ranked by importance w (frequency, centrality, query relevance):")
    ent_lines = [_entity_line(g, n, w[n], sim_of[n], member_of) for n in ranked]
    rel_lines = ["Relations (most important first):"] if triples else ["No relations to other entities within reach."]
    for t in triples:
        rel = t["relation"] + (f": {_short('; '.join(t['descriptions']), 100)}" if t["descriptions"] else "")
        arrow = f"-[{rel}]-" if t["relation"] == "co_occurs" else f"-[{rel}]->"
        rel_lines.append(f"({t['source_name']}) {arrow} ({t['target_name']}) at {_spans_text(t['spans'])}")
    tail = [f"Note: {no_llm}."] if not llm_graph else []
    # entities get at most 55% of the room, so the relations are never all cut off
    room = _max_chars(ctx) - len(head) - sum(len(t) + 1 for t in tail) - 2
    ent_block = _fit(ent_lines, int(room * 0.55))
    text = "\n".join([head, ent_block, _fit(rel_lines, room - len(ent_block) - 1)] + tail)
    evidence = merge_spans([list(map(float, sp)) for n in seeds for sp in g.nodes[n].get("spans") or []]
                           + [sp for t in triples for sp in t["spans"]])
    return Observation(text, {
        "query": query, "hops": hops, "llm_graph": llm_graph,
        "matches": [{"node": n, "name": g.nodes[n].get("name", n), "similarity": round(sim_of[n], 4)} for n in seeds],
        "entities": [{"node": n, "name": g.nodes[n].get("name", n), "kind": g.nodes[n].get("kind"),
                      "hop": dist[n], "importance": round(w[n], 4), "similarity": round(sim_of[n], 4),
                      "attributes": list(g.nodes[n].get("attributes") or []),
                      "spans": g.nodes[n].get("spans") or [], "actions": g.nodes[n].get("actions") or []}
                     for n in ranked],
        "triples": triples}, evidence=evidence)
