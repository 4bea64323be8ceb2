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

from avi.index.graph.assemble import build_entity_graph
from avi.index.graph.constants import (
    ENTITY_KINDS,
    EXACT_BETWEENNESS_MAX_NODES,
    MAX_KNOWN_SUBJECTS,
    NAME_MERGE_COSINE,
    TIME_TOLERANCE_S,
)
from avi.index.graph.extraction import caption_lines, chunk_captions
from avi.index.graph.importance import importance, node_text, update_scores
from avi.index.graph.schema import (
    ExtractedAction,
    ExtractedInteraction,
    ExtractedSubject,
    GraphExtraction,
    extraction_schema,
    parse_extraction,
)
from avi.index.graph.storage import load_graph, save_graph
from avi.index.graph.supernodes import add_super_nodes, choose_k, entity_affinity

__all__ = ["ENTITY_KINDS", "EXACT_BETWEENNESS_MAX_NODES", "MAX_KNOWN_SUBJECTS", "NAME_MERGE_COSINE",
           "TIME_TOLERANCE_S", "ExtractedAction", "ExtractedInteraction", "ExtractedSubject", "GraphExtraction",
           "add_super_nodes", "build_entity_graph", "caption_lines", "choose_k", "chunk_captions", "entity_affinity",
           "extraction_schema", "importance", "load_graph", "node_text", "parse_extraction", "save_graph",
           "update_scores"]
