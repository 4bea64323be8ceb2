"""Entity graph over the clip captions (networkx ``DiGraph``), after AVI §3.2.3 and §6.2.

The graph is built in up to four layers:

1. *Structured* (always): from the fields every captioner writes, the subject
   registry and the on-screen text of each clip, plus scenes cut at shot changes.
2. *LLM extraction* (when an LLM is given, AVI §3.2.3 and Fig. 8): people, their
   attributes, actions and appearance times, and their interactions, read from
   the chronological caption text by the orchestrator LLM in chunks, with
   structured (JSON schema) output that is validated here too.
3. *Super-nodes* (:func:`add_super_nodes`, AVI §6.2.1): spectral clusters of
   entities that are similar and at most two hops apart.
4. *Importance* (AVI §6.2.2): ``freq`` and ``centrality`` stored on every node;
   :func:`importance` adds the query relevance at question time.

All times are seconds from the start of the video.

Nodes (``kind`` attribute); every node has ``name``, ``spans`` ([[start_s, end_s], ...],
merged, sorted), ``clips`` (sorted clip indices), ``freq`` and ``centrality``:
    * ``scene``: a run of clips between shot changes (``scene:<i>``, from 0);
    * ``subject``: a subject-registry entry or an LLM-extracted person
      (``subject:<normalised name or id>``); LLM subjects also carry
      ``subject_id`` (str or None), ``attributes`` (list of str) and
      ``actions`` ([{"action", "start_s", "end_s"}], sorted by time);
      ``source`` is ``"captions"``, ``"llm"`` or ``"captions+llm"``;
    * ``text``: a distinct on-screen string (normalised);
    * ``super``: a cluster of entities (``super:<i>``) with ``members`` and
      ``attributes`` (those all members share).

Edges (``relation`` attribute, each with merged ``spans``):
    * scene -> entity ``contains``;
    * entity -> entity ``co_occurs`` (both in the same clip; stored in both
      directions, since the graph is directed);
    * subject -> subject ``interacts`` (from the first subject the LLM lists to each
      other one), with ``descriptions`` (list of str);
    * super -> member ``groups``.

Graph attributes: ``n_clips``; ``extraction`` (see :func:`build_entity_graph`);
``super_nodes`` (see :func:`add_super_nodes`).
"""

from __future__ import annotations

import json
import math
import re
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import networkx as nx
import numpy as np
from networkx.readwrite import json_graph
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from avi.backends.captioner import normalise_text
from avi.backends.llm import ContextOverflowError
from avi.backends.types import Caption
from avi.video.spans import merge_spans
from avi.video.timecode import fmt_range, parse_time

if TYPE_CHECKING:
    from avi.agent.prompts import PromptLibrary
    from avi.backends.embedder import Embedder
    from avi.backends.llm import ChatClient

ENTITY_KINDS = ("subject", "text")
"""Node kinds that are entities (clustered into super-nodes); scenes and super-nodes are not."""

NAME_MERGE_COSINE = 0.85
"""Cosine of name+attribute embeddings above which two LLM subjects are one person."""

TIME_TOLERANCE_S = 1.0
"""How far outside its captions' time range an extracted time may fall (it is then clamped)."""

MAX_KNOWN_SUBJECTS = 30
"""Subjects from earlier chunks listed to the LLM so that it reuses their ids and names."""

EXACT_BETWEENNESS_MAX_NODES = 1000
"""Above this many nodes betweenness is estimated from 500 sampled sources (seed 0)."""


# ============================================================ structured layer


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


def _structured_graph(captions: list[Caption]) -> nx.DiGraph:
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


# ============================================================ LLM extraction: reply schema


def _seconds(value: object) -> float:
    try:
        return parse_time(value)
    except ValueError:
        raise ValueError(f"not a time in seconds: {value!r}") from None


Seconds = Annotated[float, BeforeValidator(_seconds)]
"""A time in seconds; ``12``, ``12.5``, ``"12.5s"`` and ``"0:12"`` are accepted when validating."""

Interval = Annotated[list[Seconds], Field(min_length=2, max_length=2)]
"""``[start_s, end_s]``."""


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)


class ExtractedAction(_Lenient):
    """One action of one subject (AVI Fig. 8 ``actions_events``)."""

    action: str = Field(min_length=1)
    timestamp: Interval


class ExtractedSubject(_Lenient):
    """One person as the LLM reports it for one chunk of captions (AVI Fig. 8)."""

    subject_id: str | None = None
    subject_name: str = Field(min_length=1)
    appearance_timeline: list[Interval] = []
    attributes: list[str] = []
    actions_events: list[ExtractedAction] = []

    @field_validator("subject_id", mode="before")
    @classmethod
    def _id_as_text(cls, v: object) -> object:
        if isinstance(v, str):
            return v.strip() or None
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return str(v)
        return v


class ExtractedInteraction(_Lenient):
    """One interaction between subjects (AVI Fig. 8 ``interactions``)."""

    subjects_involved: list[str]
    interaction_description: str = ""
    timestamp: Interval


class GraphExtraction(_Lenient):
    """The JSON object the LLM replies with for one chunk of captions."""

    subjects: list[ExtractedSubject] = []
    interactions: list[ExtractedInteraction] = []


def _strict(schema: Any, defs: dict) -> Any:
    """Inline ``$ref``s, drop titles and defaults, require every property, forbid extra ones."""
    if isinstance(schema, list):
        return [_strict(s, defs) for s in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        return _strict(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    out = {}
    for k, v in schema.items():
        if k in ("title", "default", "$defs"):
            continue
        if k == "properties":
            out[k] = {name: _strict(p, defs) for name, p in v.items()}
        else:
            out[k] = _strict(v, defs)
    if out.get("type") == "object" and "properties" in out:
        out["required"] = list(out["properties"])
        out["additionalProperties"] = False
    return out


def extraction_schema() -> dict:
    """JSON schema of the extraction reply, self-contained (no ``$ref``) and strict.

    Every property is required and no other is allowed, which both llama.cpp
    grammars and OpenAI-style ``strict`` structured output accept. Times are
    numbers of seconds.
    """
    raw = GraphExtraction.model_json_schema()
    return _strict(raw, raw.get("$defs", {}))


# ============================================================ LLM extraction: chunks and replies


def caption_lines(captions: Sequence[Caption]) -> list[str]:
    """One line per caption, ``"[12.0s–17.0s] caption text"`` (whitespace collapsed)."""
    return [f"{fmt_range(c.start_s, c.end_s)} {' '.join(c.text.split())}" for c in captions]


def chunk_captions(captions: Sequence[Caption], chunk_chars: int) -> list[list[tuple[Caption, str]]]:
    """Consecutive captions grouped so that each group's lines, joined by newlines, fit ``chunk_chars``.

    A single line longer than ``chunk_chars`` is cut to ``chunk_chars`` characters
    (ending in ``…``) and forms its own chunk.

    Returns:
        chunks of ``(caption, line)`` pairs, in the order given.

    Raises:
        ValueError: ``chunk_chars`` < 2.
    """
    if chunk_chars < 2:
        raise ValueError(f"chunk_chars must be at least 2, got {chunk_chars}")
    chunks: list[list[tuple[Caption, str]]] = []
    size = 0
    for cap, line in zip(captions, caption_lines(captions)):
        if len(line) > chunk_chars:
            line = line[:chunk_chars - 1] + "…"
        if chunks and size + 1 + len(line) <= chunk_chars:
            chunks[-1].append((cap, line))
            size += 1 + len(line)
        else:
            chunks.append([(cap, line)])
            size = len(line)
    return chunks


def _json_text(content: str) -> str:
    text = (content or "").strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    if fenced:
        text = fenced.group(1).strip()
    if not text.startswith("{") and "{" in text:
        text = text[text.index("{"):]
    if not text.endswith("}") and "}" in text:
        text = text[:text.rindex("}") + 1]
    return text


def _loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "reply"


def _check_times(ext: GraphExtraction, t0: float, t1: float) -> list[str]:
    """Errors for reversed intervals or times outside [t0, t1] (beyond the tolerance); clamps the rest."""
    errors: list[str] = []

    def check(iv: list[float], where: str) -> None:
        s, e = iv
        if e < s:
            errors.append(f"{where}: start {s:g} is after end {e:g}")
        elif s < t0 - TIME_TOLERANCE_S or e > t1 + TIME_TOLERANCE_S:
            errors.append(f"{where}: [{s:g}, {e:g}] is outside the captions' time range {t0:g} to {t1:g} seconds")
        else:
            iv[0], iv[1] = min(max(s, t0), t1), min(max(e, t0), t1)

    for i, subj in enumerate(ext.subjects):
        for j, iv in enumerate(subj.appearance_timeline):
            check(iv, f"subjects[{i}].appearance_timeline[{j}]")
        for j, act in enumerate(subj.actions_events):
            check(act.timestamp, f"subjects[{i}].actions_events[{j}].timestamp")
    for i, inter in enumerate(ext.interactions):
        check(inter.timestamp, f"interactions[{i}].timestamp")
    return errors


def parse_extraction(content: str, t0: float, t1: float) -> tuple[GraphExtraction | None, str | None]:
    """Validate one extraction reply for captions spanning ``[t0, t1]`` seconds.

    The reply must be a JSON object (a code fence or text around it is tolerated)
    matching :class:`GraphExtraction`, with every interval ``[start, end]`` in
    order and inside ``[t0, t1]`` give or take :data:`TIME_TOLERANCE_S` (within
    the tolerance, times are clamped to the range).

    Returns:
        ``(extraction, None)`` when valid, else ``(None, error message)``.
    """
    text = _json_text(content)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"the reply is not valid JSON ({exc.msg} at character {exc.pos})"
    try:
        ext = GraphExtraction.model_validate(obj)
    except ValidationError as exc:
        errs = exc.errors()
        parts = [f"{_loc(e['loc'])}: {e['msg']}" for e in errs[:5]]
        more = f" (and {len(errs) - 5} more)" if len(errs) > 5 else ""
        return None, "the JSON does not match the schema: " + "; ".join(parts) + more
    errors = _check_times(ext, t0, t1)
    if errors:
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        return None, "wrong times: " + "; ".join(errors[:5]) + more
    return ext, None


# ============================================================ LLM extraction: merging into the graph


def _key(text: str) -> str:
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


def _dedupe(items: list[str]) -> list[str]:
    seen, out = set(), []
    for it in items:
        k = _key(it)
        if k and k not in seen:
            seen.add(k)
            out.append(it)
    return out


class _Merger:
    """Folds the validated replies of successive chunks into the graph."""

    def __init__(self, g: nx.DiGraph, captions: list[Caption], embedder: Embedder | None):
        self.g = g
        self.bounds = [(c.clip_index, c.start_s, c.end_s) for c in captions]
        self.embedder = embedder
        self.by_id: dict[str, str] = {}
        self.by_name: dict[str, str] = {}
        for n, d in g.nodes(data=True):
            if d.get("kind") == "subject":
                self.by_name.setdefault(_key(str(d.get("name", ""))), n)
        self.vecs: dict[str, np.ndarray] = {}
        self.touched: list[str] = []
        self.dropped_references = 0
        self.unpaired_interactions = 0
        self.ungrounded_ids = 0

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
                self.vecs[n] = _unit(np.asarray(v, dtype=np.float64))

    def _conflict(self, node: str, nid: str | None) -> bool:
        """Whether ``node`` already has a subject id other than ``nid`` (two ids: two people)."""
        sid = self.g.nodes[node].get("subject_id")
        return bool(nid) and sid is not None and _key(sid) != nid

    def _match(self, subjects: list[ExtractedSubject], chunk_text: str) -> list[tuple[str | None, str | None]]:
        """For each subject: (grounded normalised id or None, existing node or None)."""
        lowered = chunk_text.lower()
        out: list[tuple[str | None, str | None]] = []
        claimed: set[str] = set()
        for subj in subjects:
            nid = _key(subj.subject_id) if subj.subject_id else None
            grounded = bool(nid) and (subj.subject_id.lower() in lowered or nid in self.by_id)
            if subj.subject_id and not grounded:
                self.ungrounded_ids += 1
            nid = nid if grounded else None
            node = self.by_id.get(nid) if nid else None
            if node is None:
                named = self.by_name.get(_key(subj.subject_name))
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
            sims = cand @ _unit(v)
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
        g = self.g
        local: dict[str, str] = {}
        for subj, (nid, node) in zip(ext.subjects, self._match(ext.subjects, chunk_text)):
            if node is None:
                node = f"subject:{nid or _key(subj.subject_name)}"
            if node not in g:
                g.add_node(node, kind="subject", name=subj.subject_name, subject_id=None, attributes=[],
                           spans=[], actions=[], clips=[], source="llm")
            data = g.nodes[node]
            if data.get("source") == "captions":
                data["source"] = "captions+llm"
            data.setdefault("subject_id", None)
            if nid and data["subject_id"] is None:
                data["subject_id"] = subj.subject_id
            data["attributes"] = _dedupe(list(data.get("attributes") or []) + list(subj.attributes))
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
                local.setdefault(_key(subj.subject_id), node)
            self.by_name.setdefault(_key(subj.subject_name), node)
            local[_key(subj.subject_name)] = node
        for inter in ext.interactions:
            involved: list[str] = []
            for ref in inter.subjects_involved:
                k = _key(str(ref))
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


def _subject_text(subj: ExtractedSubject) -> str:
    return f"{subj.subject_name}: {', '.join(subj.attributes)}" if subj.attributes else subj.subject_name


def _user_message(lines: list[str], t0: float, t1: float, known: list[tuple[str | None, str]]) -> str:
    parts = []
    if known:
        parts.append("Known subjects:\n" + "\n".join(
            f"- subject_id: {sid if sid is not None else 'null'}; subject_name: {name}" for sid, name in known))
    parts.append(f"Captions from {t0:g} to {t1:g} seconds:\n" + "\n".join(lines))
    return "\n\n".join(parts)


def _extract(g: nx.DiGraph, captions: list[Caption], llm: ChatClient, prompts: PromptLibrary,
             embedder: Embedder | None, chunk_chars: int, max_tokens: int,
             progress: Callable[[int, int], None] | None) -> dict:
    t_start = time.perf_counter()
    chunks = chunk_captions(captions, chunk_chars)
    system = prompts.render("graph_extract")
    schema = extraction_schema()
    merger = _Merger(g, captions, embedder)
    stats = {"llm": getattr(llm, "model", None), "chunks": len(chunks), "failed_chunks": [],
             "seconds": 0.0, "calls": 0, "repairs": 0, "prompt_tokens": 0, "completion_tokens": 0,
             "chunk_seconds": [], "truncated_lines": sum(line.endswith("…") and len(line) == chunk_chars
                                                         for ch in chunks for _, line in ch)}
    for i, chunk in enumerate(chunks):
        t_chunk = time.perf_counter()
        lines = [line for _, line in chunk]
        t0, t1 = min(c.start_s for c, _ in chunk), max(c.end_s for c, _ in chunk)
        messages = [{"role": "system", "content": system},
                    {"role": "user", "content": _user_message(lines, t0, t1, merger.known_subjects())}]
        ext, error = None, None
        for attempt in range(2):
            try:
                res = llm.chat(messages, max_tokens=max_tokens, temperature=0.0, seed=0, json_schema=schema)
            except ContextOverflowError as exc:
                error = str(exc)
                break
            stats["calls"] += 1
            stats["prompt_tokens"] += res.prompt_tokens
            stats["completion_tokens"] += res.completion_tokens
            ext, error = parse_extraction(res.content, t0, t1)
            if ext is not None:
                break
            if res.finish_reason == "length":
                error += f" (the reply was cut off at the limit of {max_tokens} tokens)"
            if attempt == 0:
                stats["repairs"] += 1
                messages = messages + [
                    {"role": "assistant", "content": res.content},
                    {"role": "user", "content": prompts.render("graph_repair", error=error, start=f"{t0:g}",
                                                               end=f"{t1:g}")}]
        if ext is None:
            stats["failed_chunks"].append({"chunk": i, "start_s": t0, "end_s": t1, "error": error})
        else:
            merger.add_chunk(ext, "\n".join(lines))
        stats["chunk_seconds"].append(round(time.perf_counter() - t_chunk, 3))
        if progress is not None:
            progress(i + 1, len(chunks))
    merger.finish()
    stats.update(dropped_references=merger.dropped_references, unpaired_interactions=merger.unpaired_interactions,
                 ungrounded_ids=merger.ungrounded_ids, seconds=round(time.perf_counter() - t_start, 3))
    return stats


# ============================================================ build


def build_entity_graph(captions: list[Caption], *, llm: ChatClient | None = None, prompts: PromptLibrary | None = None,
                       embedder: Embedder | None = None, chunk_chars: int = 6000, max_tokens: int = 1536,
                       progress: Callable[[int, int], None] | None = None) -> nx.DiGraph:
    """Build the entity graph of one video from its clip captions (AVI §3.2.3, Fig. 8, §6.2.2).

    Always: the structured layer (subject registry, on-screen text, scenes; see the
    module docstring). With ``llm``: the captions' lines ``"[12.0s–17.0s] text"``
    are sent in chronological chunks of at most ``chunk_chars`` characters with
    the ``graph_extract`` prompt and the JSON schema of :class:`GraphExtraction`
    as structured output (temperature 0, seed 0). Each reply is validated
    (:func:`parse_extraction`); an invalid one is shown to the model with the
    error (``graph_repair`` prompt) once, and if the second reply is invalid too
    the chunk is recorded in ``g.graph["extraction"]["failed_chunks"]`` and
    contributes nothing. Subjects are merged across chunks by ``subject_id``
    (only ids written in the captions, or known from an earlier chunk, count;
    invented ones do not), then by normalised name, then (with ``embedder``) by a
    cosine >= :data:`NAME_MERGE_COSINE` between "name: attributes" embeddings.
    Interactions become ``interacts`` edges from the first listed subject to
    each other one; references to unknown subjects are dropped and counted.
    Finally ``freq`` and ``centrality`` are stored on every node (:func:`update_scores`).

    Args:
        captions: one per clip, any order; ``data["subject_registry"]``,
            ``data["ocr"]`` and ``data["shot_changes_s"]`` are used when present.
        llm: a :class:`~avi.backends.llm.ChatClient` or any object with its
            ``chat(messages, tools=None, *, max_tokens, temperature, seed, json_schema=None)``.
        prompts: the prompt files (default: the repository's ``prompts/``).
        embedder: for merging subjects by name similarity (optional).
        chunk_chars: most characters of caption lines per LLM call.
        max_tokens: completion budget per call, in tokens.
        progress: called as ``progress(chunks_done, chunks_total)`` after each chunk.

    Returns:
        the graph. ``g.graph["n_clips"]`` is the number of captions;
        ``g.graph["extraction"]`` holds ``llm`` (model name or None), ``chunks``,
        ``failed_chunks`` ([{"chunk", "start_s", "end_s", "error"}]), ``seconds``
        (wall time of the extraction), ``dropped_references`` and, with an LLM,
        ``calls``, ``repairs``, ``prompt_tokens``, ``completion_tokens``,
        ``chunk_seconds``, ``unpaired_interactions``, ``ungrounded_ids``, ``truncated_lines``.

    Raises:
        ValueError: ``chunk_chars`` < 2 (with an LLM).
        LLMUnavailableError, AviError: the LLM server failed other than by context
            overflow (which fails only that chunk).
    """
    caps = sorted(captions, key=lambda c: (c.start_s, c.clip_index))
    g = _structured_graph(caps)
    g.graph["n_clips"] = len(caps)
    g.graph["extraction"] = {"llm": None, "chunks": 0, "failed_chunks": [], "seconds": 0.0, "dropped_references": 0}
    if llm is not None and caps:
        if prompts is None:
            from avi.agent.prompts import PromptLibrary
            from avi.config import PROMPTS_DIR_DEFAULT

            prompts = PromptLibrary(PROMPTS_DIR_DEFAULT)
        g.graph["extraction"] = _extract(g, caps, llm, prompts, embedder, chunk_chars, max_tokens, progress)
    update_scores(g)
    return g


# ============================================================ importance (AVI §6.2.2)


def _unit(v: np.ndarray) -> np.ndarray:
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
    q = _unit(np.asarray(query_vec, dtype=np.float64).ravel())
    l1, l2, l3 = weights
    out = {}
    for n, v in node_vecs.items():
        if n not in g:
            raise KeyError(f"node {n!r} is not in the graph")
        d = g.nodes[n]
        rel = float(_unit(np.asarray(v, dtype=np.float64).ravel()) @ q)
        out[n] = l1 * float(d.get("freq", 0.0)) + l2 * float(d.get("centrality", 0.0)) + l3 * rel
    return out


# ============================================================ super-nodes (AVI §6.2.1)


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
    v = np.stack([_unit(np.asarray(x, dtype=np.float64)) for x in vecs]) if len(nodes) else np.zeros((0, 1))
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


def add_super_nodes(g: nx.DiGraph, embedder: Embedder, k_range: tuple[int, int] = (3, 8),
                    min_members: int = 4) -> list[str]:
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

    Returns:
        the new super-node ids; [] when there are fewer than ``min_members``
        entities or no allowed ``k``.
    """
    g.remove_nodes_from([n for n, d in list(g.nodes(data=True)) if d.get("kind") == "super"])
    ents = sorted(n for n, d in g.nodes(data=True) if d.get("kind") in ENTITY_KINDS)
    g.graph["super_nodes"] = {"k": None, "entities": len(ents), "nodes": []}
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
                  if all(_key(a) in {_key(b) for b in g.nodes[m].get("attributes") or []} for m in members)]
        node = f"super:{num}"
        g.add_node(node, kind="super", name=f"{g.nodes[central]['name']} group", members=sorted(members),
                   attributes=_dedupe(shared),
                   spans=merge_spans([list(sp) for m in members for sp in g.nodes[m].get("spans") or []]),
                   clips=sorted({c for m in members for c in g.nodes[m].get("clips") or []}))
        for m in members:
            g.add_edge(node, m, relation="groups", spans=[list(sp) for sp in g.nodes[m].get("spans") or []])
        made.append(node)
    g.graph["super_nodes"] = {"k": int(k), "entities": len(ents), "nodes": made}
    update_scores(g)
    return made


# ============================================================ persistence


def save_graph(g: nx.DiGraph, path: Path) -> None:
    """Write the graph (nodes, edges and graph attributes) as node-link JSON."""
    Path(path).write_text(json.dumps(json_graph.node_link_data(g, edges="edges"), indent=1))


def load_graph(path: Path) -> nx.DiGraph:
    """Read a graph written by :func:`save_graph`."""
    return json_graph.node_link_graph(json.loads(Path(path).read_text()), directed=True, edges="edges")
