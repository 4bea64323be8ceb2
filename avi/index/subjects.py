"""One subject registry for the whole video, merged from the per-clip registries.

Each clip's caption carries its own subject registry (AVI Fig. 7: name,
appearance, identity, first_seen). Clips are captioned independently (and
concurrently against a VLM server), so subjects are merged afterwards, the
second of DVD's two options (§3: a progressive registry, or per-clip
registries merged): two entries are the same subject when their normalised
names match, or, given an embedder, when the embeddings of "name: appearance"
are at least ``threshold`` similar. Every subject keeps appearance, identity,
first_seen and its time spans; each clip entry gets the ``global_id`` it was
merged into.
"""

from __future__ import annotations

import math
import re

import numpy as np

from avi.backends.types import Caption
from avi.video.spans import merge_spans


def _norm(name: str) -> str:
    return re.sub(r"\s+", " ", str(name)).strip(" .,;:'\"").lower()


def _as_list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    return [str(v) for v in value if str(v).strip()]


def merge_subjects(captions: list[Caption], embedder=None, threshold: float = 0.85) -> list[dict]:
    """Merge the clips' subject registries into video-level subjects (in place: sets ``global_id``).

    Args:
        captions: in time order; ``data["subject_registry"]`` maps a clip-local
            key to ``{name, appearance, identity, first_seen, ...}``.
        embedder: optional :class:`~avi.backends.embedder.Embedder` for matching
            differently named entries by their description.
        threshold: cosine similarity at or above which two descriptions match.

    Returns:
        subjects ``{id, name, appearance[], identity[], first_seen, spans[[s, e]], clips[]}``
        in order of first appearance (times in seconds).
    """
    entries = []
    for cap in captions:
        for key, subj in (cap.data.get("subject_registry") or {}).items():
            if isinstance(subj, dict):
                entries.append((cap, key, subj))
    vecs = None
    if embedder is not None and entries:
        texts = [f"{s.get('name') or k}: {'; '.join(_as_list(s.get('appearance')))}" for _, k, s in entries]
        vecs = embedder.embed(texts)
    subjects: list[dict] = []
    subject_vecs: list[np.ndarray] = []
    by_name: dict[str, int] = {}
    for i, (cap, key, subj) in enumerate(entries):
        name = str(subj.get("name") or key)
        idx = by_name.get(_norm(name))
        if idx is None and vecs is not None and subject_vecs:
            sims = np.stack(subject_vecs) @ vecs[i]
            best = int(np.argmax(sims))
            if sims[best] >= threshold:
                idx = best
        if idx is None:
            idx = len(subjects)
            subjects.append({"id": f"S{idx + 1}", "name": name, "appearance": [], "identity": [],
                             "first_seen": None, "spans": [], "clips": []})
            subject_vecs.append(vecs[i] if vecs is not None else np.zeros(1))
            by_name[_norm(name)] = idx
        s = subjects[idx]
        for field in ("appearance", "identity"):
            for item in _as_list(subj.get(field)):
                if item not in s[field]:
                    s[field].append(item)
        seen = subj.get("first_seen")
        try:
            seen = float(seen) if seen is not None else cap.start_s
        except (TypeError, ValueError):
            seen = cap.start_s
        if not math.isfinite(seen):  # a VLM's NaN: subjects.json holds finite times (avi/index/stage_schemas.py)
            seen = cap.start_s
        s["first_seen"] = seen if s["first_seen"] is None else min(s["first_seen"], seen)
        s["spans"].append([cap.start_s, cap.end_s])
        if cap.clip_index not in s["clips"]:
            s["clips"].append(cap.clip_index)
        subj["global_id"] = s["id"]
    for s in subjects:
        s["spans"] = merge_spans(s["spans"])
    return subjects
