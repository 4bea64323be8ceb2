"""Tunable constants of the entity graph (merging, time tolerance, sizes)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass


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
