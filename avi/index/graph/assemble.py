"""The entity graph assembled layer by layer: structured, then LLM extraction (:func:`build_entity_graph`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import networkx as nx

from avi.backends.types import Caption
from avi.index.graph.extraction import extract_chunk
from avi.index.graph.importance import update_scores
from avi.index.graph.structured import structured_graph

if TYPE_CHECKING:
    from avi.backends.embedder import Embedder
    from avi.backends.llm import ChatClient
    from avi.prompts import PromptLibrary


def build_entity_graph(captions: list[Caption], *, llm: ChatClient | None = None, prompts: PromptLibrary | None = None,
                       embedder: Embedder | None = None, chunk_chars: int = 6000, max_tokens: int = 1536,
                       progress: Callable[[int, int], None] | None = None) -> nx.DiGraph:
    """Build the entity graph of one video from its clip captions (AVI §3.2.3, Fig. 8, §6.2.2).

    Always: the structured layer (subject registry, on-screen text, scenes; see the
    module docstring). With ``llm``: the captions' lines ``"[12.0s–17.0s] text"``
    (a run of identical captions as one line over the run) are sent in
    chronological chunks of at most ``chunk_chars`` characters with the
    ``graph_extract`` prompt and the JSON schema of :class:`GraphExtraction`
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
        ``chunk_seconds``, ``unpaired_interactions``, ``ungrounded_ids``, ``truncated_lines`` and
        ``skipped_chunks`` (chunks not sent: their clips' perception saw no person or face).

    Raises:
        ValueError: ``chunk_chars`` < 2 (with an LLM).
        LLMUnavailableError, AviError: the LLM server failed other than by context
            overflow (which fails only that chunk).
    """
    caps = sorted(captions, key=lambda c: (c.start_s, c.clip_index))
    g = structured_graph(caps)
    g.graph["n_clips"] = len(caps)
    g.graph["extraction"] = {"llm": None, "chunks": 0, "failed_chunks": [], "seconds": 0.0, "dropped_references": 0}
    if llm is not None and caps:
        if prompts is None:
            from avi.config import PROMPTS_DIR_DEFAULT
            from avi.prompts import PromptLibrary

            prompts = PromptLibrary(PROMPTS_DIR_DEFAULT)
        g.graph["extraction"] = extract_chunk(g, caps, llm, prompts, embedder, chunk_chars, max_tokens, progress)
    update_scores(g)
    return g
