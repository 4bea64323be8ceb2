"""Merging validated LLM extractions into the graph: subjects matched by name (embeddings) and id,
appearance times checked against the chunk, interactions as edges."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import networkx as nx
import numpy as np

from avi.backends.captioner import normalise_text
from avi.backends.types import Caption
from avi.index.graph.constants import MAX_KNOWN_SUBJECTS, NAME_MERGE_COSINE
from avi.index.graph.importance import node_text, unit_rows
from avi.index.graph.schema import ExtractedInteraction, ExtractedSubject, GraphExtraction
from avi.video.spans import merge_spans

if TYPE_CHECKING:
    from avi.backends.embedder import Embedder


def name_key(text: str) -> str:
    return normalise_text(text)


def _spans_clips(spans: list[list[float]], bounds: list[tuple[int, float, float]]) -> set[int]:
    out = set()
    for s, e in spans:
        for idx, cs, ce in bounds:
            if (s < ce and e > cs) or (s == e and cs <= s <= ce):
                out.add(idx)
    return out


def _intersect(a: list[list[float]], b: list[list[float]]) -> list[list[float]]:
    out = []
    for s1, e1 in a:
        for s2, e2 in b:
            lo, hi = max(s1, s2), min(e1, e2)
            if lo < hi or (lo == hi and (s1 == e1 or s2 == e2)):
                out.append([lo, hi])
    return merge_spans(out)


def dedupe(items: list[str]) -> list[str]:
    seen, out = set(), []
    for it in items:
        k = name_key(it)
        if k and k not in seen:
            seen.add(k)
            out.append(it)
    return out



PERSON_WORDS = frozenset(
    "man men woman women person persons people boy boys girl girls child children kid kids guy guys lady ladies "
    "adult adults player players figure figures individual individuals someone face faces subject subjects".split())
"""Words that name a person without describing them: grounded by any of them in the captions."""

NAME_FILLER = frozenset(
    "a an the in on at of with and or to from by wearing dressed who is near next other another first second third "
    "same unknown unidentified main".split())
"""Words of a subject name that need no support in the captions."""


def _words(text: str) -> set[str]:
    return {w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
            for w in re.findall(r"[a-z0-9_]+", text.lower())}


def name_grounded(name: str, chunk_text: str) -> bool:
    """Whether every descriptive word of a subject name occurs in the captions it was extracted from.

    A small extraction LLM copies the people of its prompt's wording or invents clothing the captions never
    mention; such a subject is not a person of this video. Person nouns ("man", "woman", "person") are grounded
    by any person noun in the captions (perception captions say "people"), filler words need no support, and
    plural and singular forms match.

    Args:
        name: the extracted ``subject_name``; chunk_text: the caption lines it was extracted from.
    """
    text = _words(chunk_text)
    person = {w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in PERSON_WORDS}
    for word in _words(name) - NAME_FILLER:
        if word in person:
            if not text & person:
                return False
        elif word not in text:
            return False
    return True


def _subject_text(subj: ExtractedSubject) -> str:
    return f"{subj.subject_name}: {', '.join(subj.attributes)}" if subj.attributes else subj.subject_name


class Merger:
    """Folds the validated replies of successive chunks into the graph."""

    def __init__(self, g: nx.DiGraph, captions: list[Caption], embedder: Embedder | None):
        self.g = g
        self.bounds = [(c.clip_index, c.start_s, c.end_s) for c in captions]
        self.embedder = embedder
        self.by_id: dict[str, str] = {}
        self.by_name: dict[str, str] = {}
        for n, d in g.nodes(data=True):
            if d.get("kind") == "subject":
                self.by_name.setdefault(name_key(str(d.get("name", ""))), n)
        self.vecs: dict[str, np.ndarray] = {}
        self.touched: list[str] = []
        self.dropped_references = 0
        self.unpaired_interactions = 0
        self.ungrounded_ids = 0
        self.ungrounded_subjects: list[str] = []

    # -------------------------------------------------------- known subjects for the prompt

    def known_subjects(self) -> list[tuple[str | None, str]]:
        """(subject_id, name) of the LLM subjects so far, most recently seen first."""
        nodes = sorted(self.touched, key=lambda n: -max((e for _, e in self.g.nodes[n]["spans"]), default=-1.0))
        return [(self.g.nodes[n].get("subject_id"), self.g.nodes[n]["name"]) for n in nodes[:MAX_KNOWN_SUBJECTS]]

    # -------------------------------------------------------- matching

    def _node_vecs(self, nodes: list[str]) -> None:
        missing = [n for n in nodes if n not in self.vecs]
        if missing and self.embedder is not None:
            for n, v in zip(missing, self.embedder.embed([node_text(self.g, n) for n in missing])):
                self.vecs[n] = unit_rows(np.asarray(v, dtype=np.float64))

    def _conflict(self, node: str, nid: str | None) -> bool:
        """Whether ``node`` already has a subject id other than ``nid`` (two ids: two people)."""
        sid = self.g.nodes[node].get("subject_id")
        return bool(nid) and sid is not None and name_key(sid) != nid

    def _match(self, subjects: list[ExtractedSubject], chunk_text: str) -> list[tuple[str | None, str | None]]:
        """For each subject: (grounded normalised id or None, existing node or None)."""
        lowered = chunk_text.lower()
        out: list[tuple[str | None, str | None]] = []
        claimed: set[str] = set()
        for subj in subjects:
            nid = name_key(subj.subject_id) if subj.subject_id else None
            grounded = bool(nid) and (subj.subject_id.lower() in lowered or nid in self.by_id)
            if subj.subject_id and not grounded:
                self.ungrounded_ids += 1
            nid = nid if grounded else None
            node = self.by_id.get(nid) if nid else None
            if node is None:
                named = self.by_name.get(name_key(subj.subject_name))
                node = named if named is not None and not self._conflict(named, nid) else None
            if node is not None:
                claimed.add(node)
            out.append((nid, node))
        if self.embedder is None:
            return out
        todo = [i for i, (_, node) in enumerate(out) if node is None]
        candidates = [n for n, d in self.g.nodes(data=True) if d.get("kind") == "subject" and n not in claimed]
        if not todo or not candidates:
            return out
        self._node_vecs(candidates)
        texts = [_subject_text(subjects[i]) for i in todo]
        qv = np.asarray(self.embedder.embed(texts), dtype=np.float64)
        cand = np.stack([self.vecs[n] for n in candidates])
        for i, v in zip(todo, qv):
            sims = cand @ unit_rows(v)
            for j in np.argsort(-sims, kind="stable"):
                if sims[j] < NAME_MERGE_COSINE:
                    break
                if candidates[j] not in claimed and not self._conflict(candidates[j], out[i][0]):
                    claimed.add(candidates[j])
                    out[i] = (out[i][0], candidates[j])
                    break
        return out

    # -------------------------------------------------------- folding

    def add_chunk(self, ext: GraphExtraction, chunk_text: str) -> None:
        """Fold one chunk's validated extraction into the graph; subjects whose names the chunk's captions do
        nor the subjects already known support (:func:`name_grounded`) are left out and listed in ``ungrounded_subjects``."""
        g = self.g
        local: dict[str, str] = {}
        known = " ".join(f"{d.get('name', '')} {' '.join(d.get('attributes') or [])}"
                         for _, d in g.nodes(data=True) if d.get("kind") == "subject")  # listed in the prompt
        kept = [s for s in ext.subjects if s.subject_id and s.subject_id.lower() in chunk_text.lower()
                or name_grounded(s.subject_name, f"{chunk_text}\n{known}")]
        self.ungrounded_subjects += [s.subject_name for s in ext.subjects if s not in kept]
        ext = ext.model_copy(update={"subjects": kept})
        for subj, (nid, node) in zip(ext.subjects, self._match(ext.subjects, chunk_text)):
            if node is None:
                node = f"subject:{nid or name_key(subj.subject_name)}"
            if node not in g:
                g.add_node(node, kind="subject", name=subj.subject_name, subject_id=None, attributes=[],
                           spans=[], actions=[], clips=[], source="llm")
            data = g.nodes[node]
            if data.get("source") == "captions":
                data["source"] = "captions+llm"
            data.setdefault("subject_id", None)
            if nid and data["subject_id"] is None:
                data["subject_id"] = subj.subject_id
            data["attributes"] = dedupe(list(data.get("attributes") or []) + list(subj.attributes))
            data["spans"] = merge_spans(list(data["spans"]) + [list(iv) for iv in subj.appearance_timeline]
                                        + [list(a.timestamp) for a in subj.actions_events])
            data.setdefault("actions", [])
            for a in subj.actions_events:
                act = {"action": a.action, "start_s": a.timestamp[0], "end_s": a.timestamp[1]}
                if act not in data["actions"]:
                    data["actions"].append(act)
            data["actions"].sort(key=lambda x: (x["start_s"], x["end_s"], x["action"]))
            data["clips"] = sorted(set(data["clips"]) | _spans_clips(data["spans"], self.bounds))
            if node not in self.touched:
                self.touched.append(node)
            if nid:
                self.by_id.setdefault(nid, node)
                local[nid] = node
            if subj.subject_id:
                local.setdefault(name_key(subj.subject_id), node)
            self.by_name.setdefault(name_key(subj.subject_name), node)
            local[name_key(subj.subject_name)] = node
        for inter in ext.interactions:
            involved: list[str] = []
            for ref in inter.subjects_involved:
                k = name_key(str(ref))
                node = local.get(k) or self.by_id.get(k) or self.by_name.get(k)
                if node is None:
                    self.dropped_references += 1
                elif node not in involved:
                    involved.append(node)
            if len(involved) < 2:
                self.unpaired_interactions += 1
                continue
            for other in involved[1:]:
                self._interaction_edge(involved[0], other, inter)

    def _interaction_edge(self, a: str, b: str, inter: ExtractedInteraction) -> None:
        g = self.g
        if g.has_edge(a, b) and g.edges[a, b].get("relation") != "interacts":
            old = g.edges[a, b]
            # one edge per ordered pair: the interaction wins, what it replaces is kept aside
            old[f"{old['relation']}_spans"] = old.get("spans", [])
            old.update(relation="interacts", spans=[], descriptions=[])
        if not g.has_edge(a, b):
            g.add_edge(a, b, relation="interacts", spans=[], descriptions=[])
        d = g.edges[a, b]
        d["spans"] = merge_spans(list(d["spans"]) + [list(inter.timestamp)])
        if inter.interaction_description and inter.interaction_description not in d["descriptions"]:
            d["descriptions"].append(inter.interaction_description)

    def finish(self) -> None:
        """Scene -> subject ``contains`` edges for the LLM subjects."""
        g = self.g
        scenes = [n for n, d in g.nodes(data=True) if d.get("kind") == "scene"]
        for node in self.touched:
            for sc in scenes:
                inter = _intersect(g.nodes[sc]["spans"], g.nodes[node]["spans"])
                if not inter:
                    continue
                if not g.has_edge(sc, node):
                    g.add_edge(sc, node, relation="contains", spans=[])
                g.edges[sc, node]["spans"] = merge_spans(list(g.edges[sc, node]["spans"]) + inter)
