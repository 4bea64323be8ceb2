"""The stages of an index build (avi/index/build.py has the order, the work directory and the lock): transcript,
captions (resumable clip by clip), embeddings, entity graph and summary, each writing its files atomically
into the directory it is given (the work directory, or a finished index for its pending LLM stages).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path

from tqdm import tqdm

from avi.backends import Backends
from avi.backends.asr import TranscriptSegment
from avi.backends.types import Caption
from avi.config import Settings
from avi.errors import AviError, InputError
from avi.index.chroma_io import add_batched, verify_chroma, write_error
from avi.index.chroma_panic import contain_panics
from avi.index.graph import add_super_nodes, build_entity_graph, save_graph
from avi.index.stage_schemas import CaptionRecord
from avi.index.store import (
    COLLECTION,
    TRANSCRIPT_COLLECTION,
    ChromaEmbeddingFunction,
    chroma_client,
    release_chroma,
)
from avi.index.summary import build_summary
from avi.index.transcript import TranscriptPlan, build_transcript
from avi.video.clips import Clip, segment
from avi.video.decode import DecodeStats, Frame, VideoInfo, sample_frames


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_jsonl(path: Path, rows) -> None:
    write_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _read_partial_captions(path: Path) -> dict[int, Caption]:
    """Captions finished by earlier attempts; from the first line that is torn (killed mid-write) or fails its
    check (:class:`avi.index.stage_schemas.CaptionRecord`: shape and types) on, the file is cut off and those
    clips are captioned again."""
    done: dict[int, Caption] = {}
    if not path.exists():
        return done
    good = 0
    with open(path, "rb") as f:
        for raw in f:
            try:
                CaptionRecord.model_validate_json(raw)
                cap = Caption.from_dict(json.loads(raw))
            except (ValueError, TypeError):
                break
            done[cap.clip_index] = cap
            good += len(raw)
    if good != path.stat().st_size:
        with open(path, "r+b") as f:
            f.truncate(good)
    return done


def stage_transcript(work: Path, info: VideoInfo, plan: TranscriptPlan, backends: Backends,
                     progress: bool) -> tuple[list[TranscriptSegment], dict]:
    """The transcript stage: ``transcript.jsonl`` and ``transcript_info.json`` in ``work`` (taken over when both
    exist), built as ``plan`` says (:func:`avi.index.transcript.build_transcript`)."""
    seg_path, info_path = work / "transcript.jsonl", work / "transcript_info.json"
    if seg_path.exists() and info_path.exists():
        return [TranscriptSegment.from_dict(d) for d in read_jsonl(seg_path)], json.loads(info_path.read_text())
    if progress:
        print(f"transcript of {info.path.name} ({plan.mode})…", file=sys.stderr, flush=True)
    segments, tinfo = build_transcript(plan, backends, duration_s=info.duration_s)
    write_jsonl(seg_path, [s.to_dict() for s in segments])
    write_atomic(info_path, json.dumps(tinfo))
    return segments, tinfo


def _clip_frames(info: VideoInfo, clips: list[Clip], settings: Settings, first: int, stats: DecodeStats | None = None):
    """Yield ``(clip, frames, previous_frame)`` for clips ``first..`` in one sequential decode (skipped
    undecodable packets counted in ``stats``)."""
    start = max(0.0, clips[first].start_s - 1.0 / settings.fps) if first else 0.0
    frames_iter = sample_frames(info, fps=settings.fps, max_side=settings.max_side, start_s=start, stats=stats)
    pending: Frame | None = next(frames_iter, None)
    previous: Frame | None = None
    last = clips[-1].index
    while pending is not None and pending.t_s < clips[first].start_s - 1e-6:
        previous, pending = pending, next(frames_iter, None)
    for clip in clips[first:]:
        frames = []
        while pending is not None and (pending.t_s < clip.end_s or clip.index == last):
            frames.append(pending)
            pending = next(frames_iter, None)
        yield clip, frames, previous
        if frames:
            previous = frames[-1]


def stage_captions(work: Path, info: VideoInfo, settings: Settings, backends: Backends, progress: bool,
                    stats: DecodeStats | None = None) -> tuple[list[Caption], int]:
    """All clips' captions (resuming finished ones); returns (captions, clips captioned in this run).

    Packets skipped as undecodable while decoding the clips of this run are counted in ``stats``."""
    clips = segment(info.duration_s, settings.clip_seconds)
    path = work / "captions.partial.jsonl"
    done = _read_partial_captions(path)
    todo = [c for c in clips if c.index not in done]
    if todo:
        captioner = backends.captioner
        workers = max(1, int(getattr(captioner, "concurrency", 1)))
        bar = tqdm(total=len(clips), initial=len(done), desc=f"captions {info.path.name}", unit="clip",
                   file=sys.stderr, disable=not progress, dynamic_ncols=True)
        pool = ThreadPoolExecutor(max_workers=workers) if workers > 1 else None
        in_flight: set[Future] = set()

        def finish(cap: Caption, out) -> None:
            out.write(json.dumps(cap.to_dict(), ensure_ascii=False) + "\n")
            out.flush()
            os.fsync(out.fileno())
            done[cap.clip_index] = cap
            bar.update(1)

        try:
            with open(path, "a") as out, bar:
                for clip, frames, previous in _clip_frames(info, clips, settings, todo[0].index, stats):
                    if clip.index in done:
                        continue
                    if pool is None:
                        finish(captioner.caption(clip, frames, previous), out)
                        continue
                    in_flight.add(pool.submit(captioner.caption, clip, frames, previous))
                    if len(in_flight) >= 2 * workers:  # bound the frames held in memory
                        finished, in_flight = wait(in_flight, return_when=FIRST_COMPLETED)
                        for fut in finished:
                            finish(fut.result(), out)
                for fut in list(in_flight):
                    finish(fut.result(), out)
                    in_flight.discard(fut)
        finally:
            if pool is not None:
                for fut in in_flight:
                    fut.cancel()
                pool.shutdown(wait=True)
    captions = [done[c.index] for c in clips if c.index in done]
    if len(captions) != len(clips):
        raise AviError(f"captioning ended with {len(clips) - len(captions)} clips missing")
    if not any(c.data.get("frames_s") for c in captions):
        raise InputError(f"no frames could be decoded from {info.path}")
    return captions, len(todo)


EMBED_CHARS = 32_000
"""Most characters of one caption or transcript segment that are embedded (about 8k tokens, the longest context of
the embedders avi uses; a longer text, a 6 MB subtitle cue, is cut: the models would truncate it anyway)."""
DOCUMENT_CHARS = 1_000
"""Most characters of a text kept in Chroma beside its vector: avi reads the texts from captions.jsonl and
transcript.jsonl, never from Chroma, so a long cue is stored once (Chroma would keep it again in its full-text
index)."""


def stage_embeddings(work: Path, captions: list[Caption], segments: list[TranscriptSegment],
                      backends: Backends) -> None:
    """Captions and transcript lines into the work directory's Chroma database (``chroma/``), in batches under
    the client's limit (:func:`avi.index.chroma_io.add_batched`: no limit on the video's length), then
    checked (:func:`avi.index.chroma_io.verify_chroma`); ``embeddings.done`` marks it finished. Texts are
    embedded up to :data:`EMBED_CHARS` characters and kept in Chroma up to :data:`DOCUMENT_CHARS`.

    Raises:
        AviError: a Chroma write or the check fails (a full disk: "no space left on DEVICE (mounted at PATH,
            ...)"); the marker is not written, so the next build redoes this stage.
    """
    marker = work / "embeddings.done"
    if marker.exists():
        return
    chroma_dir = work / "chroma"
    release_chroma(chroma_dir)
    shutil.rmtree(chroma_dir, ignore_errors=True)  # a half-written collection from a killed attempt
    embedder = backends.embedder
    texts = [(c.text or "(no caption)")[:EMBED_CHARS] for c in captions]
    seg_texts = [s.text[:EMBED_CHARS] for s in segments]
    vecs = embedder.embed(texts)  # the embeddings first: the Chroma lock is held only for Chroma's own calls
    seg_vecs = embedder.embed(seg_texts) if segments else None
    what = "the clip embeddings"
    try:
        with contain_panics():
            client = chroma_client(chroma_dir)
            col = client.create_collection(COLLECTION, embedding_function=ChromaEmbeddingFunction(embedder),
                                           metadata={"hnsw:space": "cosine"})
            add_batched(client, col, [f"clip-{c.clip_index:05d}" for c in captions], vecs,
                        [{"clip_index": c.clip_index, "start_s": c.start_s, "end_s": c.end_s} for c in captions],
                        [t[:DOCUMENT_CHARS] for t in texts])
            if segments:
                what = "the transcript embeddings"
                tcol = client.create_collection(TRANSCRIPT_COLLECTION,
                                                embedding_function=ChromaEmbeddingFunction(embedder),
                                                metadata={"hnsw:space": "cosine"})
                add_batched(client, tcol, [f"seg-{i:05d}" for i in range(len(segments))], seg_vecs,
                            [{"segment_index": i, "start_s": s.start_s, "end_s": s.end_s, "source": s.source}
                             for i, s in enumerate(segments)], [t[:DOCUMENT_CHARS] for t in seg_texts])
                del tcol
            del col, client
    except Exception as exc:  # noqa: BLE001 - Chroma's errors have many types; write_error names the cause
        release_chroma(chroma_dir)
        raise write_error(exc, chroma_dir, what) from None
    release_chroma(chroma_dir)
    verify_chroma(chroma_dir, len(captions), len(segments))
    release_chroma(chroma_dir)
    marker.touch()


def stage_graph(work: Path, captions: list[Caption], settings: Settings, backends: Backends,
                 progress: bool = False) -> dict:
    path = work / "graph.json"
    if not path.exists():
        from avi.prompts import PromptLibrary

        usable = [c for c in captions if c.text.strip()]  # failed VLM captions carry no text
        llm = backends.llm if settings.graph_llm else None
        bar = tqdm(desc="entity graph", unit="chunk", file=sys.stderr,
                   disable=not progress or llm is None, dynamic_ncols=True)

        def tick(done: int, total: int) -> None:
            bar.total = total
            bar.n = done
            bar.refresh()

        with bar:
            graph = build_entity_graph(usable, llm=llm, prompts=PromptLibrary(settings.prompts_dir),
                                       embedder=backends.embedder, chunk_chars=settings.graph_chunk_chars,
                                       progress=tick)
        graph.graph["n_clips"] = len(captions)
        add_super_nodes(graph, backends.embedder)  # also refreshes freq/centrality with n_clips
        tmp = work / f".graph.json.tmp-{os.getpid()}"
        save_graph(graph, tmp)
        os.replace(tmp, path)
    from avi.index.graph import load_graph

    g = load_graph(path)
    kinds: dict[str, int] = {}
    for _, d in g.nodes(data=True):
        kinds[d.get("kind", "?")] = kinds.get(d.get("kind", "?"), 0) + 1
    return {"nodes": g.number_of_nodes(), "edges": g.number_of_edges(), "kinds": kinds,
            "extraction": g.graph.get("extraction")}


def stage_summary(work: Path, captions: list[Caption], settings: Settings, backends: Backends,
                   progress: bool) -> dict:
    path = work / "summary.json"
    if not path.exists():
        from avi.prompts import PromptLibrary

        llm = backends.llm if settings.summary_llm else None
        bar = tqdm(desc="summary", unit="call", file=sys.stderr, disable=not progress or llm is None,
                   dynamic_ncols=True)

        def tick(done: int, total: int) -> None:
            bar.total = total
            bar.n = done
            bar.refresh()

        with bar:
            summary = build_summary(captions, llm, PromptLibrary(settings.prompts_dir), progress=tick)
        write_atomic(path, json.dumps(summary, ensure_ascii=False, indent=1))
    return json.loads(path.read_text())


