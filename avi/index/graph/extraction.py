"""The LLM extraction driver (AVI §3.2.3): chronological caption lines in chunks, one structured request
per chunk, replies parsed, repaired once, and merged. Runs of repeated captions are sent once
(:func:`avi.index.caption_runs.merge_repeats`), and a chunk whose clips' perception counted no person and no face
is not sent at all (:func:`avi.index.caption_runs.no_person_seen`; recorded in ``skipped_chunks``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import networkx as nx

from avi.backends.llm import ContextOverflowError
from avi.backends.types import Caption
from avi.index.caption_runs import merge_repeats, no_person_seen
from avi.index.graph.merge import Merger
from avi.index.graph.schema import extraction_schema, parse_extraction
from avi.video.timecode import fmt_range

if TYPE_CHECKING:
    from avi.backends.embedder import Embedder
    from avi.backends.llm import ChatClient
    from avi.prompts import PromptLibrary


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




def _user_message(lines: list[str], t0: float, t1: float, known: list[tuple[str | None, str]]) -> str:
    parts = []
    if known:
        parts.append("Known subjects:\n" + "\n".join(
            f"- subject_id: {sid if sid is not None else 'null'}; subject_name: {name}" for sid, name in known))
    parts.append(f"Captions from {t0:g} to {t1:g} seconds:\n" + "\n".join(lines))
    return "\n\n".join(parts)


def extract_chunk(g: nx.DiGraph, captions: list[Caption], llm: ChatClient, prompts: PromptLibrary,
             embedder: Embedder | None, chunk_chars: int, max_tokens: int,
             progress: Callable[[int, int], None] | None) -> dict:
    t_start = time.perf_counter()
    chunks = chunk_captions(merge_repeats(captions), chunk_chars)
    system = prompts.render("graph_extract")
    schema = extraction_schema()
    merger = Merger(g, captions, embedder)
    stats = {"llm": getattr(llm, "model", None), "chunks": len(chunks), "failed_chunks": [],
             "skipped_chunks": [], "seconds": 0.0, "calls": 0, "repairs": 0, "prompt_tokens": 0, "completion_tokens": 0,
             "chunk_seconds": [], "truncated_lines": sum(line.endswith("…") and len(line) == chunk_chars
                                                         for ch in chunks for _, line in ch)}
    for i, chunk in enumerate(chunks):
        t_chunk = time.perf_counter()
        lines = [line for _, line in chunk]
        t0, t1 = min(c.start_s for c, _ in chunk), max(c.end_s for c, _ in chunk)
        if no_person_seen([c for c in captions if c.start_s >= t0 - 1e-6 and c.end_s <= t1 + 1e-6]):
            stats["skipped_chunks"].append({"chunk": i, "start_s": t0, "end_s": t1,
                                            "reason": "no person or face detected in these clips"})
            stats["chunk_seconds"].append(0.0)
            if progress is not None:
                progress(i + 1, len(chunks))
            continue
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
                 ungrounded_ids=merger.ungrounded_ids,
                 ungrounded_subjects=merger.ungrounded_subjects, seconds=round(time.perf_counter() - t_start, 3))
    return stats
