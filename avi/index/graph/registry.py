"""The entity graph keyed by the video's subject registry (AVI §3.2.1 Fig. 7; DVD §3 subject registry).

The index builder merges the clips' own subject registries into one registry
(:func:`avi.index.subjects.merge_subjects`, ``subjects.json``) and writes the
``global_id`` each clip entry got into ``captions.jsonl``. The structured
layer of the graph, however, keys subjects by their per-clip *name*, so "man in a
red jacket" in one clip and "man wearing a red jacket" in the next are two
nodes although the registry says they are one subject. :func:`key_by_registry`
rewrites an already built graph in memory so that every subject the registry
knows is one node ``subject:<global id>``: the registry's name, the per-clip
mentions linked to it, their edges merged. It runs when an index's graph is
loaded (:attr:`avi.index.store.VideoIndex.graph`), so indexes built before it
are used as they are: nothing on disk changes and no index is rebuilt.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import networkx as nx

from avi.backends.captioner import normalise_text
from avi.backends.types import Caption
from avi.index.graph.importance import update_scores
from avi.index.graph.merge import dedupe
from avi.video.spans import merge_spans

_RELATION_RANK = {"interacts": 2, "co_occurs": 1}  # when two merged edges differ, the more specific wins


def registry_node(global_id: str) -> str:
    """Node id of a registry subject in the keyed graph: ``"subject:<global id>"`` (e.g. ``"subject:S3"``)."""
    return f"subject:{global_id}"


def _mentions(captions: Sequence[Caption]) -> dict[str, list[dict]]:
    """global id -> per-clip mentions ``{clip, start_s, end_s, local_id, name, appearance}`` in time order."""
    out: dict[str, list[dict]] = {}
    for cap in sorted(captions, key=lambda c: (c.start_s, c.clip_index)):
        for key, subj in (cap.data.get("subject_registry") or {}).items():
            if not isinstance(subj, dict) or not subj.get("global_id"):
                continue
            app = subj.get("appearance")
            out.setdefault(str(subj["global_id"]), []).append({
                "clip": cap.clip_index, "start_s": cap.start_s, "end_s": cap.end_s, "local_id": str(key),
                "name": str(subj.get("name") or key),
                "appearance": [app] if isinstance(app, str) else [str(a) for a in app or []]})
    return out


def _target_of(g: nx.DiGraph, mentions: dict[str, list[dict]], subjects: dict[str, dict],
               captions: Sequence[Caption]) -> dict[str, str]:
    """Old subject node -> global id, for the nodes the registry accounts for.

    A structured node (``subject:<normalised per-clip name>``) goes to the global id its
    clip entries were merged into (the most frequent one if they differ). An LLM-extracted
    node goes to a global id when its name equals a per-clip name or a registry name, or
    when its ``subject_id`` is the clip-local key of a registry entry in a clip it
    appears in (the captioner's ``subject_1`` of that clip).
    """
    votes: dict[str, Counter] = {}
    by_name: dict[str, Counter] = {}
    for gid, ms in mentions.items():
        for m in ms:
            node = f"subject:{normalise_text(m['name'])}"
            votes.setdefault(node, Counter())[gid] += 1
            by_name.setdefault(normalise_text(m["name"]), Counter())[gid] += 1
    for gid, s in subjects.items():
        by_name.setdefault(normalise_text(str(s.get("name") or gid)), Counter())[gid] += 1
    local: dict[tuple[int, str], str] = {}
    for cap in captions:
        for key, subj in (cap.data.get("subject_registry") or {}).items():
            if isinstance(subj, dict) and subj.get("global_id"):
                local[(cap.clip_index, normalise_text(str(key)))] = str(subj["global_id"])
    out: dict[str, str] = {}
    for n, d in g.nodes(data=True):
        if d.get("kind") != "subject":
            continue
        if n in votes and str(d.get("source", "captions")).startswith("captions"):
            out[n] = votes[n].most_common(1)[0][0]
            continue
        named = by_name.get(normalise_text(str(d.get("name") or "")))
        if named:
            out[n] = named.most_common(1)[0][0]
            continue
        sid = d.get("subject_id")
        if sid:
            hits = Counter(local[(c, normalise_text(str(sid)))] for c in d.get("clips") or []
                           if (c, normalise_text(str(sid))) in local)
            if hits:
                out[n] = hits.most_common(1)[0][0]
    return {n: gid for n, gid in out.items() if gid in subjects}


def key_by_registry(g: nx.DiGraph, subjects: list[dict], captions: Sequence[Caption]) -> nx.DiGraph:
    """A copy of ``g`` whose subjects are keyed by the registry's global subject ids.

    Every subject node the registry accounts for (see :func:`_target_of`) is folded into
    one node :func:`registry_node` per global id, with:

    * ``name``: the registry's name; ``subject_id``: the global id; ``registry``: True;
    * ``aliases``: the other names it went by (per-clip names, LLM-extracted names);
    * ``appearance``, ``identity``: the registry's lists; ``first_seen``: the registry's (s);
    * ``mentions``: the per-clip registry entries linked to it, ``[{clip, start_s, end_s,
      local_id, name, appearance}]`` in time order (seconds);
    * ``spans``, ``clips``: the union of the folded nodes' and the registry's (merged, sorted);
    * ``attributes``, ``actions``, ``max_count``, ``source``: combined from the folded nodes.

    Edges of folded nodes are moved to the new node; two edges that land on the same pair
    are merged (spans and descriptions joined; ``interacts`` wins over ``co_occurs``);
    edges that would become self-loops are dropped. Super-node ``members`` are remapped.
    When any node was keyed, ``freq`` and ``centrality`` are computed again
    (:func:`~avi.index.graph.update_scores`). Subject nodes the registry does not account
    for and all other nodes stay as they are. ``g.graph["registry"]`` records
    ``{"subjects", "keyed_nodes", "merged_nodes"}``.

    Args:
        g: the entity graph as built (:func:`~avi.index.graph.build_entity_graph`); not modified.
        subjects: the registry, ``subjects.json`` (``[{id, name, appearance, identity, first_seen,
            spans, clips}]``, see :func:`avi.index.subjects.merge_subjects`).
        captions: the index's captions, whose registry entries carry ``global_id``.

    Returns:
        the keyed graph (``g`` itself, unchanged, when ``subjects`` is empty).
    """
    if not subjects:
        return g
    reg = {str(s["id"]): s for s in subjects if isinstance(s, dict) and s.get("id")}
    mentions = _mentions(captions)
    target = _target_of(g, mentions, reg, captions)
    out = g.copy()
    folded: dict[str, list[str]] = {}
    for n, gid in target.items():
        folded.setdefault(gid, []).append(n)
    mapping: dict[str, str] = {}
    for gid, nodes in folded.items():
        new = registry_node(gid)
        if new in out and new not in nodes:  # an unrelated node already has this id: leave that subject alone
            continue
        s = reg[gid]
        datas = [dict(out.nodes[n]) for n in nodes]
        names = dedupe([str(d.get("name") or "") for d in datas] + [m["name"] for m in mentions.get(gid, [])])
        name = str(s.get("name") or gid)
        spans = [list(sp) for d in datas for sp in d.get("spans") or []] + [list(sp) for sp in s.get("spans") or []]
        clips = sorted({int(c) for d in datas for c in d.get("clips") or []} | {int(c) for c in s.get("clips") or []})
        actions = sorted({(a["action"], a["start_s"], a["end_s"]) for d in datas for a in d.get("actions") or []},
                         key=lambda a: (a[1], a[2], a[0]))
        sources = sorted({str(d.get("source", "captions")) for d in datas})
        attrs = {"kind": "subject", "name": name, "subject_id": gid, "registry": True,
                 "aliases": [a for a in names if normalise_text(a) != normalise_text(name)],
                 "appearance": list(s.get("appearance") or []), "identity": list(s.get("identity") or []),
                 "first_seen": s.get("first_seen"), "mentions": mentions.get(gid, []),
                 "spans": merge_spans(spans), "clips": clips,
                 "attributes": dedupe([str(a) for d in datas for a in d.get("attributes") or []]),
                 "actions": [{"action": a, "start_s": st, "end_s": en} for a, st, en in actions],
                 "source": "+".join(dict.fromkeys(p for src in sources for p in src.split("+"))),
                 "folded": sorted(nodes)}
        counts = [d["max_count"] for d in datas if d.get("max_count")]
        if counts:
            attrs["max_count"] = max(counts)
        for n in nodes:
            mapping[n] = new
        edges = [(mapping.get(a, a), mapping.get(b, b), dict(d)) for a, b, d in out.edges(data=True)
                 if a in nodes or b in nodes]
        out.remove_nodes_from(nodes)
        out.add_node(new, **attrs)
        for a, b, d in edges:
            if a == b:
                continue
            if not out.has_edge(a, b):
                out.add_edge(a, b, **d)
                continue
            e = out.edges[a, b]
            e["spans"] = merge_spans([list(sp) for sp in e.get("spans") or []] + [list(sp) for sp in d.get("spans") or []])
            if d.get("descriptions"):
                e["descriptions"] = list(dict.fromkeys(list(e.get("descriptions") or []) + list(d["descriptions"])))
            if _RELATION_RANK.get(d.get("relation"), 0) > _RELATION_RANK.get(e.get("relation"), 0):
                e["relation"] = d["relation"]
    for _, d in out.nodes(data=True):
        if d.get("kind") == "super" and d.get("members"):
            d["members"] = sorted(dict.fromkeys(mapping.get(m, m) for m in d["members"]))
    merged = len(mapping) - len(set(mapping.values()))
    if mapping:
        update_scores(out)  # spans, clips and edges changed
    out.graph["registry"] = {"subjects": len(reg), "keyed_nodes": len(set(mapping.values())), "merged_nodes": merged}
    return out


def registry_lines(subjects: list[dict], limit: int = 12) -> list[str]:
    """Short lines for the agent: ``"S3 man in a red jacket: seen [12.0s–40.0s] (+2 more), 6 clips"``.

    Args:
        subjects: the registry (``subjects.json``), in order of first appearance.
        limit: most subjects listed, those seen in the most clips first; the rest are counted.

    Returns:
        one line per listed subject, plus ``"(+N more subjects)"`` when some were left out.
    """
    from avi.video.timecode import fmt_range

    ranked = sorted(subjects, key=lambda s: (-len(s.get("clips") or []), float(s.get("first_seen") or 0.0)))
    lines = []
    for s in ranked[:limit]:
        spans = s.get("spans") or []
        seen = ", ".join(fmt_range(a, b) for a, b in spans[:2]) + (f" (+{len(spans) - 2} more)" if len(spans) > 2 else "")
        n = len(s.get("clips") or [])
        lines.append(f"{s.get('id')} {s.get('name')}: seen {seen or 'at unknown times'}, {n} clip{'s' if n != 1 else ''}")
    if len(subjects) > limit:
        lines.append(f"(+{len(subjects) - limit} more subjects)")
    return lines
