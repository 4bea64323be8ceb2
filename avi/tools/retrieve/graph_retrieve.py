"""``graph_retrieve`` (AVI §3.2.3, §3.3.1, §6.2): entity lookup in the entity graph, k-hop traversal and
importance-ranked (entity, relation, entity, time) triples; relations and shortest paths between two named
entities; the video's subject registry (global ids) offered with every answer."""

from __future__ import annotations

from typing import Annotated

import networkx as nx
import numpy as np
from pydantic import Field

from avi.index.graph import importance, node_text
from avi.index.graph.registry import registry_lines
from avi.tools.base import Observation, Query, ToolContext, tool
from avi.tools.retrieve.common import (
    SEED_MARGIN,
    cached_vectors,
    entity_min_cosine,
    fit_lines,
    max_chars,
    pending_stage,
    query_vector,
    shorten,
    spans_text,
    with_stage_note,
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
        parts.append(f"members: {shorten(', '.join(names), 160)}")
    attrs = [str(a) for a in d.get("attributes") or []]
    if attrs:
        parts.append("attributes: " + shorten(", ".join(attrs), 140))
    if d.get("max_count"):
        parts.append(f"up to {d['max_count']} at once")
    if d.get("spans"):
        parts.append("seen " + spans_text(d["spans"]))
    acts = d.get("actions") or []
    if acts:
        parts.append("actions: " + "; ".join(f"{a['action']} {fmt_range(a['start_s'], a['end_s'])}"
                                             for a in acts[:3]) + (f" +{len(acts) - 3} more" if len(acts) > 3 else ""))
    if member_of.get(n):
        parts.append("in " + ", ".join(str(g.nodes[s].get("name", s)) for s in member_of[n]))
    return "- " + "; ".join(parts)


@tool("retrieve")
def graph_retrieve(ctx: ToolContext, query: Query, target: str = "", hops: Annotated[int, Field(ge=1, le=2)] = 1,
                   top_k: Annotated[int, Field(ge=1, le=30)] = 10) -> Observation:
    """Look up people, objects or on-screen text in the entity graph, or how two of them are related; with times.

    AVI §3.3.1 ``graph_retrieve`` over the entity graph of §3.2.3/§6.2
    (:mod:`avi.index.graph`). The query is embedded and compared (cosine) with
    every entity's :func:`~avi.index.graph.node_text` (subjects, on-screen
    texts, super-nodes). The best match and the entities within
    :data:`SEED_MARGIN` of it (at most 3, each >= :func:`entity_min_cosine`, the embedder's) are
    the seeds; a super-node seed expands to its members. From the seeds the
    graph is walked ``hops`` steps along entity relations (``co_occurs``,
    ``interacts``; not scene ``contains`` or super-node ``groups``). Every entity
    reached gets the importance ``w = 0.4*freq + 0.3*centrality + 0.3*query_rel``
    (AVI eq. 11-13, :func:`~avi.index.graph.importance`, query_rel computed now),
    and every relation among them the score ``w(a) + w(b)``.

    Subjects are keyed by the video's subject registry (global ids ``S1``, ``S2``, ...;
    :func:`avi.index.graph.registry.key_by_registry`): a subject seen in several clips
    under different per-clip descriptions is one entity, matched by its registry name,
    any of its per-clip names (``aliases``) or its id. Every observation ends with a
    short list of the registry's subjects (:func:`~avi.index.graph.registry.registry_lines`).

    Relation query (``target`` given; AVI §3.3.1 and Fig. 10: "relationships or paths
    between two entities"): ``query`` and ``target`` are each matched to their best
    entity (not a super-node) as above; the answer is the direct relations between the
    two (``co_occurs``, ``interacts`` with its descriptions) or else the shortest paths
    between them (:func:`networkx.all_shortest_paths`, at most :data:`MAX_PATHS`, each at
    most :data:`MAX_PATH_HOPS` hops) over the temporal edges (entity relations, each with
    the time spans in which it holds), every hop shown with its relation and time spans.
    No path within reach is said so, with the times the two are each seen.

    Args:
        query: the entity to look up (a name, description, subject id such as S3, or on-screen text), or a
            question about it.
        target: a second entity; when given, returns how query and target are related (direct relations, or the
            shortest paths between them with the times of each step). Empty for a lookup of query alone.
        hops: how many relation steps to walk from the matched entities (1 or 2).
        top_k: how many entities and how many relations to return.

    Returns:
        Observation with the matched entities, the top_k entities by importance
        (kind, attributes, appearance spans, actions) and the top_k relations
        ``(entity, relation, entity, [t_start, t_end])``; ``data`` holds
        ``matches``, ``entities``, ``triples`` (with all spans) and ``llm_graph``;
        evidence is the time spans of the matched entities and returned relations.
        When nothing matches (best cosine < :data:`ENTITY_MIN_COSINE`) an error
        observation lists the nearest known entities. With ``target``: the relation
        answer, ``data`` holding ``source``, ``target`` (the matched entities),
        ``direct`` (relations between the two) and ``paths`` (``[{nodes, names, hops:
        [{source, relation, target, descriptions, spans}]}]``); evidence is the spans of
        the relations on the way. ``data["registry"]`` lists ``{id, name}`` per subject.

    Raises:
        ValueError: empty query, or a graph without entities.
    """
    query = query.strip()
    if not query:
        raise ValueError("query is empty; name the person, object or text to look up")
    stage = pending_stage(ctx, "graph")  # an index whose graph is pending: built now, on first use (issue 38)
    if stage is not None and not stage.built:
        return with_stage_note(Observation(f"graph_retrieve: {stage.note}. Use clip_retrieve or global_explore "
                                           f"instead.", {"query": query}, error=True), stage)
    try:
        obs = _lookup(ctx, query, target, hops, top_k)
    except ValueError as exc:
        if stage is None:
            raise
        raise ValueError(f"{exc} (note: {stage.note})") from None  # the built-now note stays in the trace
    return with_stage_note(obs, stage)


def _lookup(ctx: ToolContext, query: str, target: str, hops: int, top_k: int) -> Observation:
    """:func:`graph_retrieve` on an index whose entity graph is built."""
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
    registry = _registry(ctx)
    q = query_vector(ctx, query)
    sims = _entity_sims(ctx, g, ents, vecs, q, query)
    target = target.strip()
    if target:
        return _relation(ctx, g, ents, vecs, query, sims, target, registry, llm_graph, no_llm)
    order = np.argsort(-sims, kind="stable")
    best = float(sims[order[0]])
    sim_of = {ents[i]: float(sims[i]) for i in range(len(ents))}
    if best < entity_min_cosine(ctx):
        return _unknown(g, ents, sims, query, registry, llm_graph, no_llm, entity_min_cosine(ctx))
    seeds = [ents[i] for i in order[:3] if sims[i] >= max(entity_min_cosine(ctx), best - SEED_MARGIN)]
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
    head = (f'graph_retrieve "{shorten(query, 80)}": matched {seed_txt}; {len(dist)} entities within {hops} '
            f"hop{'s' if hops > 1 else ''}, ranked by importance w (frequency, centrality, query relevance):")
    ent_lines = [_entity_line(g, n, w[n], sim_of[n], member_of) for n in ranked]
    rel_lines = ["Relations (most important first):"] if triples else ["No relations to other entities within reach."]
    for t in triples:
        rel = t["relation"] + (f": {shorten('; '.join(t['descriptions']), 100)}" if t["descriptions"] else "")
        arrow = f"-[{rel}]-" if t["relation"] == "co_occurs" else f"-[{rel}]->"
        rel_lines.append(f"({t['source_name']}) {arrow} ({t['target_name']}) at {spans_text(t['spans'])}")
    tail = ([f"Note: {no_llm}."] if not llm_graph else []) + _registry_tail(registry)
    # entities get at most 55% of the room, so the relations are never all cut off
    room = max_chars(ctx) - len(head) - sum(len(t) + 1 for t in tail) - 2
    ent_block = fit_lines(ent_lines, int(room * 0.55))
    text = "\n".join([head, ent_block, fit_lines(rel_lines, room - len(ent_block) - 1)] + tail)
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
        "triples": triples, "registry": _registry_data(registry)}, evidence=evidence)


MAX_PATHS = 3
"""graph_retrieve relation query: most shortest paths shown between the two entities."""

MAX_PATH_HOPS = 4
"""graph_retrieve relation query: longest path (in relations) looked for between the two entities."""

REGISTRY_LINES = 8
"""graph_retrieve: most registry subjects listed at the end of an observation (most clips first)."""


def _registry(ctx: ToolContext) -> list[dict]:
    return list(getattr(ctx.index, "subjects", None) or [])


def _registry_tail(registry: list[dict]) -> list[str]:
    if not registry:
        return []
    return ["Subjects of this video (registry id, name; one id per subject across all clips): "
            + "; ".join(registry_lines(registry, REGISTRY_LINES))]


def _registry_data(registry: list[dict]) -> list[dict]:
    return [{"id": s.get("id"), "name": s.get("name")} for s in registry]


def _entity_sims(ctx: ToolContext, g: nx.DiGraph, ents: list[str], vecs: np.ndarray, q: np.ndarray,
                 query: str) -> np.ndarray:
    """Query-to-entity cosine per entity: the best of its node text and its per-clip names (``aliases``);
    1.0 for the subject whose registry id is the query itself (``S3``)."""
    sims = vecs @ q
    alias_rows = [(i, str(a)) for i, n in enumerate(ents) for a in g.nodes[n].get("aliases") or []]
    if alias_rows:
        texts = [t for _, t in alias_rows]
        avecs = cached_vectors(ctx.index, ctx.backends.embedder, "graph-aliases", texts)
        for (i, _), s in zip(alias_rows, avecs @ q):
            sims[i] = max(sims[i], float(s))
    want = query.strip().upper()
    for i, n in enumerate(ents):
        if g.nodes[n].get("registry") and str(g.nodes[n].get("subject_id", "")).upper() == want:
            sims[i] = 1.0
    return sims


def _unknown(g: nx.DiGraph, ents: list[str], sims: np.ndarray, query: str, registry: list[dict], llm_graph: bool,
             no_llm: str, min_cos: float) -> Observation:
    order = np.argsort(-sims, kind="stable")
    best = float(sims[order[0]])
    near = [ents[i] for i in order[:5]]
    sim_of = {ents[i]: float(sims[i]) for i in order[:5]}
    listing = ", ".join(f'"{g.nodes[n].get("name", n)}" ({sim_of[n]:.2f})' for n in near)
    text = (f'graph_retrieve: no entity in the graph matches "{shorten(query, 80)}" (best similarity {best:.2f} '
            f"< {min_cos}). Nearest known entities: {listing}. Query one of these names, or use "
            "clip_retrieve for things that are not entities.")
    if not llm_graph:
        text += f"\nNote: {no_llm}."
    text = "\n".join([text] + _registry_tail(registry))
    return Observation(text, {"query": query, "unknown": True, "best_similarity": round(best, 4),
                              "nearest": [{"node": n, "name": g.nodes[n].get("name", n),
                                           "similarity": round(sim_of[n], 4)} for n in near],
                              "llm_graph": llm_graph, "registry": _registry_data(registry)}, error=True)


def _edge_info(g: nx.DiGraph, a: str, b: str) -> dict:
    """The relation between ``a`` and ``b`` (either direction; ``interacts`` preferred) with merged spans."""
    best = None
    for x, y in ((a, b), (b, a)):
        if g.has_edge(x, y) and g.edges[x, y].get("relation") not in _SKIP_RELATIONS:
            d = g.edges[x, y]
            if best is None or (d.get("relation") == "interacts" and best["relation"] != "interacts"):
                best = {"source": x, "relation": d.get("relation", "related"), "target": y,
                        "descriptions": list(d.get("descriptions") or []),
                        "spans": merge_spans([list(map(float, sp)) for sp in d.get("spans") or []])}
    return best or {"source": a, "relation": "related", "target": b, "descriptions": [], "spans": []}


def _relation(ctx: ToolContext, g: nx.DiGraph, ents: list[str], vecs: np.ndarray, query: str, sims: np.ndarray,
              target: str, registry: list[dict], llm_graph: bool, no_llm: str) -> Observation:
    """Relation query between ``query`` and ``target`` (see :func:`graph_retrieve`)."""
    plain = [i for i, n in enumerate(ents) if g.nodes[n].get("kind") != "super"]
    if not plain:
        raise ValueError("the entity graph of this video has only groups, no single entities to relate")
    q2 = query_vector(ctx, target)
    sims2 = _entity_sims(ctx, g, ents, vecs, q2, target)
    ends = []
    for text, sv in ((query, sims), (target, sims2)):
        i = max(plain, key=lambda k: (sv[k], -k))
        if sv[i] < entity_min_cosine(ctx):
            return _unknown(g, ents, sv, text, registry, llm_graph, no_llm, entity_min_cosine(ctx))
        ends.append((ents[i], float(sv[i])))
    (a, sa), (b, sb) = ends
    name = {n: str(g.nodes[n].get("name", n)) for n in g}
    head = (f'graph_retrieve relation "{shorten(query, 60)}" - "{shorten(target, 60)}": matched "{name[a]}" '
            f'({sa:.2f}) and "{name[b]}" ({sb:.2f}).')
    data = {"query": query, "target": target, "llm_graph": llm_graph, "registry": _registry_data(registry),
            "source": {"node": a, "name": name[a], "similarity": round(sa, 4)},
            "target_entity": {"node": b, "name": name[b], "similarity": round(sb, 4)}, "direct": [], "paths": []}
    if a == b:
        text = "\n".join([head, f'Both name the same entity "{name[a]}", seen {spans_text(g.nodes[a].get("spans") or [])}.'
                          " Name two different entities."] + _registry_tail(registry))
        return Observation(text, data, error=True)
    walk = nx.Graph()
    walk.add_nodes_from(ents[i] for i in plain)
    walk.add_edges_from((x, y) for x, y, d in g.edges(data=True)
                        if d.get("relation") not in _SKIP_RELATIONS and x in walk and y in walk and x != y)
    paths: list[list[str]] = []
    try:
        for p in nx.all_shortest_paths(walk, a, b):
            if len(p) - 1 > MAX_PATH_HOPS:
                break
            paths.append(p)
            if len(paths) >= MAX_PATHS:
                break
    except nx.NetworkXNoPath:
        paths = []
    lines = [head]
    evidence: list[list[float]] = []

    def hop_line(h: dict) -> str:
        rel = h["relation"] + (f": {shorten('; '.join(h['descriptions']), 100)}" if h["descriptions"] else "")
        arrow = f"-[{rel}]-" if h["relation"] == "co_occurs" else f"-[{rel}]->"
        when = spans_text(h["spans"]) if h["spans"] else "(no times)"
        return f"({name[h['source']]}) {arrow} ({name[h['target']]}) at {when}"

    if paths and len(paths[0]) == 2:
        direct = []
        for x, y in ((a, b), (b, a)):  # both directions: interacts may run either way; co_occurs is stored twice
            d = g.edges[x, y] if g.has_edge(x, y) else None
            if d is None or d.get("relation") in _SKIP_RELATIONS:
                continue
            if d.get("relation") == "co_occurs" and any(h["relation"] == "co_occurs" for h in direct):
                continue
            direct.append({"source": x, "relation": d.get("relation", "related"), "target": y,
                           "descriptions": list(d.get("descriptions") or []),
                           "spans": merge_spans([list(map(float, sp)) for sp in d.get("spans") or []])})
        # a co-occurrence over the same times as an interaction says nothing more
        said = [h["spans"] for h in direct if h["relation"] != "co_occurs"]
        direct = [h for h in direct if h["relation"] != "co_occurs" or h["spans"] not in said]
        data["direct"] = direct
        lines.append("Directly related:")
        lines += ["- " + hop_line(h) for h in direct]
        evidence += [sp for h in direct for sp in h["spans"]]
    elif paths:
        lines.append(f"Not directly related; {len(paths)} shortest path{'s' if len(paths) > 1 else ''} of "
                     f"{len(paths[0]) - 1} relations (each step with the times it holds):")
        for k, p in enumerate(paths, 1):
            hops_ = [_edge_info(g, x, y) for x, y in zip(p, p[1:])]
            data["paths"].append({"nodes": p, "names": [name[n] for n in p], "hops": hops_})
            lines.append(f"{k}. " + " ; ".join(hop_line(h) for h in hops_))
            evidence += [sp for h in hops_ for sp in h["spans"]]
    else:
        lines.append(f"No path of at most {MAX_PATH_HOPS} relations links them in the graph. "
                     f'"{name[a]}" is seen {spans_text(g.nodes[a].get("spans") or []) or "at unknown times"}; '
                     f'"{name[b]}" {spans_text(g.nodes[b].get("spans") or []) or "at unknown times"}.')
    tail = ([f"Note: {no_llm}."] if not llm_graph else []) + _registry_tail(registry)
    return Observation(fit_lines(lines, max_chars(ctx), tail), data, evidence=merge_spans(evidence))
