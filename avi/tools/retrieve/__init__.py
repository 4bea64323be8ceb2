"""Retrieve tools (AVI §3.3.1): find where in the video to look.

All four work on the index alone (captions, their Chroma embeddings, the
summary, the entity graph) and never call the LLM, so they are cheap:

* ``clip_retrieve``: top-k clips by cosine similarity of caption and query embeddings;
* ``clip_merge``: merges adjacent or near ranges whose captions agree
  (gap <= one clip length, caption cosine >= :data:`MERGE_MIN_COSINE`);
* ``global_explore``: the hierarchical summary (video + segments) ranked by
  relevance to a query, with candidate segments; falls back to
  :data:`FALLBACK_SEGMENT_S` windows of captions when the index has no summary;
* ``graph_retrieve``: entity lookup in the entity graph (AVI §3.2.3, §6.2), k-hop
  traversal and importance-ranked (entity, relation, entity, time) triples.

Embeddings of captions, summaries and graph nodes are computed once per index
and embedder and kept in a small in-process cache (:func:`cached_vectors`).
All times are seconds from the start of the video.
"""

from avi.tools.retrieve.clip_merge import clip_merge
from avi.tools.retrieve.clip_retrieve import clip_retrieve
from avi.tools.retrieve.common import (
    ENTITY_MIN_COSINE,
    FALLBACK_SEGMENT_S,
    MERGE_MIN_COSINE,
    SEED_MARGIN,
    SUMMARY_WEIGHT,
    cached_vectors,
)
from avi.tools.retrieve.global_explore import global_explore, load_summary
from avi.tools.retrieve.graph_retrieve import graph_retrieve

__all__ = ["ENTITY_MIN_COSINE", "FALLBACK_SEGMENT_S", "MERGE_MIN_COSINE", "SEED_MARGIN", "SUMMARY_WEIGHT",
           "cached_vectors", "clip_merge", "clip_retrieve", "global_explore", "graph_retrieve", "load_summary"]
