"""What the retrieve tools share: their constants, the per-index embedding cache, caption helpers and
observation-size fitting."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from avi.backends.embedder import embed_query
from avi.config_embedders import EMBEDDER_SETTINGS, embedder_settings
from avi.tools.base import ToolContext
from avi.video.timecode import fmt_range

#: how clip_retrieve opens its line of the best hits, best first (the host search drops that line: its places
#: list says the same)
BEST_FIRST = "Most similar first: "

CAPTION_CHARS = 320  # per clip in the LLM's context; the trace keeps full captions


MERGE_MIN_COSINE = EMBEDDER_SETTINGS["all-minilm-l6-v2"].merge_min_cosine
"""clip_merge: least cosine similarity between a group's captions (mean vector) and the next range's, for
all-MiniLM-L6-v2; per embedder: :func:`merge_min_cosine`
(values and sources: ``avi.config_embedders.EMBEDDER_SETTINGS``)."""

FALLBACK_SEGMENT_S = 60.0
"""global_explore: segment length (s) when the index has no LLM summary."""

SUMMARY_WEIGHT = 0.5
"""global_explore: weight of the summary similarity in a segment's score (the rest: its captions')."""

ENTITY_MIN_COSINE = EMBEDDER_SETTINGS["all-minilm-l6-v2"].entity_min_cosine
"""graph_retrieve: least query-to-entity cosine for a match, for all-MiniLM-L6-v2 (unrelated short texts score
about 0.2-0.3 and a paraphrase of an entity 0.45-0.8); per embedder: :func:`entity_min_cosine`."""


def merge_min_cosine(ctx: ToolContext) -> float:
    """clip_merge's threshold for the context's embedder (``avi.config_embedders.EMBEDDER_SETTINGS``)."""
    return embedder_settings(getattr(ctx.backends.embedder, "name", "")).merge_min_cosine


def entity_min_cosine(ctx: ToolContext) -> float:
    """graph_retrieve's threshold for the context's embedder (``avi.config_embedders.EMBEDDER_SETTINGS``)."""
    return embedder_settings(getattr(ctx.backends.embedder, "name", "")).entity_min_cosine

def pending_stage(ctx: ToolContext, stage: str):
    """Build ``stage`` (``"graph"`` or ``"summary"``) of the context's index now if it is pending
    (:func:`avi.index.lazy.build_if_pending`: the first tool call that needs it builds it; issue 38).

    Returns:
        None when it is not pending, else the :class:`avi.index.lazy.StageNote` saying what was done.
    """
    from avi.index.lazy import build_if_pending

    return build_if_pending(ctx.index, stage, ctx.settings, ctx.backends)


def with_stage_note(obs, note):
    """``obs`` with what :func:`pending_stage` did in its notes (the trace's step) and ``data["index_stage"]``."""
    if note is not None:
        obs.notes.append(note.note)
        obs.data["index_stage"] = note.to_dict()
    return obs


SEED_MARGIN = 0.1
"""graph_retrieve: entities within this cosine of the best match are also traversal seeds (at most 3)."""

_CACHE: OrderedDict[tuple, np.ndarray] = OrderedDict()
_CACHE_MAX = 32
_CACHE_LOCK = threading.Lock()


def cached_vectors(index: Any, embedder: Any, kind: str, texts: list[str],
                   compute: Callable[[], np.ndarray] | None = None) -> np.ndarray:
    """Unit embeddings of ``texts``, computed once per index, embedder and text list in this process.

    The key is (index path, embedder name, ``kind``, sha1 of the texts), so an index
    rebuilt in place or another embedder never gets stale vectors. At most
    ``_CACHE_MAX`` entries are kept (least recently used dropped).

    Args:
        index: a :class:`~avi.index.store.VideoIndex` (or anything; its ``path`` is used when present).
        embedder: the :class:`~avi.backends.embedder.Embedder`.
        kind: what the texts are (``"captions"``, ``"summary"``, ``"graph"``).
        texts: the texts, in the order of the rows returned.
        compute: returns the vectors when not cached (default: ``embedder.embed(texts)``).

    Returns:
        float64 array of shape (len(texts), dim), rows L2-normalised (zero rows stay zero).
    """
    digest = hashlib.sha1("\x1f".join(texts).encode("utf-8", "replace")).hexdigest()
    key = (str(getattr(index, "path", id(index))), str(getattr(embedder, "name", type(embedder).__name__)), kind,
           digest)
    with _CACHE_LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    if not texts:
        vecs = np.zeros((0, int(getattr(embedder, "dim", 1) or 1)))
    else:
        vecs = np.asarray(compute() if compute is not None else embedder.embed(texts), dtype=np.float64)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        vecs = vecs / np.where(norms > 0, norms, 1.0)
    with _CACHE_LOCK:
        _CACHE[key] = vecs
        while len(_CACHE) > _CACHE_MAX:
            _CACHE.popitem(last=False)
    return vecs


def query_vector(ctx: ToolContext, query: str) -> np.ndarray:
    v = np.asarray(embed_query(ctx.backends.embedder, [query]), dtype=np.float64)[0]
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def captions_of(ctx: ToolContext) -> list:
    return sorted(ctx.index.captions, key=lambda c: (c.start_s, c.clip_index))


def caption_vectors(ctx: ToolContext, caps: list) -> np.ndarray:
    """Unit caption embeddings, rows in the order of ``caps``: the ones stored in Chroma at build
    time when they can be read, else embedded now (same text as the build: empty -> "(no caption)");
    an unreadable or incomplete collection is recorded in the index's ``problems`` and logged."""
    texts = [c.text or "(no caption)" for c in caps]
    embedder = ctx.backends.embedder

    def compute() -> np.ndarray:
        try:
            col = ctx.index.collection(embedder)
            got = col.get(include=["embeddings", "metadatas"])
            by_clip = {int(m["clip_index"]): e for m, e in zip(got["metadatas"], got["embeddings"])}
            if all(c.clip_index in by_clip for c in caps):
                return np.asarray([by_clip[c.clip_index] for c in caps], dtype=np.float64)
            cause = f"{sum(c.clip_index not in by_clip for c in caps)} of {len(caps)} clips have no stored vector"
        except Exception as exc:  # noqa: BLE001 - no collection (hand-made or damaged index): embed the texts
            cause = f"{type(exc).__name__}: {exc}"
        note = getattr(ctx.index, "note_problem", None)
        if note is not None:
            note("clip collection (chroma/)", cause, "the captions are embedded again for this question")
        return embedder.embed(texts)

    return cached_vectors(ctx.index, embedder, "captions", texts, compute)


def clips_in(caps: list, s: float, e: float) -> list[int]:
    """Positions in ``caps`` of the clips overlapping [s, e] (the clip containing s when s == e)."""
    if e > s:
        return [i for i, c in enumerate(caps) if c.start_s < e and c.end_s > s]
    return [i for i, c in enumerate(caps) if c.start_s <= s < c.end_s or (i == len(caps) - 1 and s == c.end_s)]


def shorten(text: str, n: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n - 1] + "…"


def max_chars(ctx: ToolContext) -> int:
    return int(getattr(ctx.settings, "observation_max_chars", 2400) or 2400)


def fit_lines(lines: list[str], limit: int, tail: list[str] = ()) -> str:
    """Join ``lines`` (dropping those that do not fit, from the end) and ``tail`` within ``limit`` characters."""
    budget = limit - sum(len(t) + 1 for t in tail)
    out, size, dropped = [], 0, 0
    for i, line in enumerate(lines):
        if i > 0 and size + len(line) + 1 > budget - 30:
            dropped = len(lines) - i
            break
        out.append(line)
        size += len(line) + 1
    if dropped:
        out.append(f"(+{dropped} more lines left out)")
    return "\n".join(out + list(tail))


def f2(x: float) -> str:
    return f"{x:.2f}".replace("-0.00", "0.00")


def spans_text(spans: list[list[float]], n: int = 3) -> str:
    shown = ", ".join(fmt_range(s, e) for s, e in spans[:n])
    return shown + (f" +{len(spans) - n} more" if len(spans) > n else "")


# ===================================================================== clip_merge
