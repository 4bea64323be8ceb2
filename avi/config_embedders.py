"""What depends on the embedding model, part of the config: the query instruction and the cosine thresholds of
the retrieve tools, per embedder, each with its source (issue 19; re-exported by :mod:`avi.config`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EmbedderSettings:
    """What depends on the embedding model: the query instruction and the cosine thresholds, with their source.

    Attributes:
        query_instruction: task text put before a *query* (never a stored caption) as
            ``"Instruct: {task}\nQuery:{query}"``; None = queries embedded as they are.
        merge_min_cosine: clip_merge's least caption-to-caption cosine (same event).
        entity_min_cosine: graph_retrieve's least query-to-entity cosine.
        calibrated: whether the thresholds were measured on labelled data for this model.
        source: where the numbers come from.
    """

    query_instruction: str | None
    merge_min_cosine: float
    entity_min_cosine: float
    calibrated: bool
    source: str


QWEN3_EMBEDDING_QUERY_FORMAT = "Instruct: {task}\nQuery:{query}"
"""The query format of Qwen3-Embedding's model card (huggingface.co/Qwen/Qwen3-Embedding-4B, get_detailed_instruct);
documents are embedded without it."""

EMBEDDER_SETTINGS: dict[str, EmbedderSettings] = {
    "all-minilm-l6-v2": EmbedderSettings(
        query_instruction=None, merge_min_cosine=0.5, entity_min_cosine=0.4, calibrated=True,
        source="merge 0.5: tuned by hand on natural-language captions (tests/test_retrieve_tools.py MERGE_CAPTIONS: "
               "one scene 0.45-0.8, unrelated < 0.15). Calibrated by scripts/calibrate_thresholds.py on "
               "bench/thresholds/caption_pairs.jsonl (52 pairs of cpu-profile perception captions, 26 same event): "
               "best 0.848, accuracy 0.904; 0.5 there gives 0.519 (perception captions read alike across events). "
               "Not applied: it would change clip_merge on the cpu profile while a benchmark is measured, and there "
               "clip_merge also splits at shot changes; a per-captioner threshold is the open follow-up. "
               "entity 0.4: hand-checked paraphrases (0.45-0.8) vs unrelated short texts (0.2-0.3); not calibrated"),
    "qwen3-embedding": EmbedderSettings(
        query_instruction="Given a question or description of a moment in a video, retrieve the video clip "
                          "captions that show it",
        merge_min_cosine=0.5, entity_min_cosine=0.4, calibrated=False,
        source="uncalibrated: all-MiniLM-L6-v2's values reused, since no Qwen3-Embedding weights exist on the "
               "development machines to run scripts/calibrate_thresholds.py with; calibrate before trusting them"),
}
"""Per embedding model (matched by :func:`embedder_settings`): instruction and thresholds, with their source."""


def embedder_settings(name: str) -> EmbedderSettings:
    """The :class:`EmbedderSettings` of an embedder by its name (case-insensitive, ``/`` and ``_`` ignored).

    ``Qwen/Qwen3-Embedding-4B``, ``qwen3-embedding-8b`` and the like match ``qwen3-embedding``; any other
    name gets all-MiniLM-L6-v2's (the values the thresholds were tuned with).
    """
    key = str(name).lower().replace("_", "-").rsplit("/", 1)[-1]
    for prefix, value in EMBEDDER_SETTINGS.items():
        if key.startswith(prefix):
            return value
    return EMBEDDER_SETTINGS["all-minilm-l6-v2"]


__all__ = ["EMBEDDER_SETTINGS", "QWEN3_EMBEDDING_QUERY_FORMAT", "EmbedderSettings", "embedder_settings"]
