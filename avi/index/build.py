"""Building a video's database (AVI §3.2): clips, captions, embeddings, entity graph.

The index directory is keyed by the video's sha256 and a fingerprint of the
settings and models that shape it, so a later question on the same video with
the same setup reuses it, and any change (another embedder, fps, captioner)
builds a new one instead of trusting a stale one.

Crash safety: everything is written into a hidden temporary directory next to
the final one; the manifest with ``"complete": true`` is written last and the
directory is renamed into place atomically. A failed or interrupted build
leaves nothing that a later run would trust (its temporary directory is
removed, or ignored and cleaned up by the next build).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import uuid
from pathlib import Path

from tqdm import tqdm

from avi import __version__
from avi.backends import Backends
from avi.config import Settings, fingerprint
from avi.index.graph import build_entity_graph, save_graph
from avi.index.store import (
    COLLECTION,
    SCHEMA_VERSION,
    TRANSCRIPT_COLLECTION,
    ChromaEmbeddingFunction,
    VideoIndex,
    chroma_client,
    release_chroma,
)
from avi.index.transcript import attach_speech, build_transcript, transcript_fingerprint
from avi.video.clips import segment
from avi.video.decode import VideoInfo, file_sha256, probe, sample_frames


def index_key(video_sha256: str, settings: Settings, captioner: str, embedder: str,
              transcript: dict | None = None) -> str:
    """Directory name of the index for a video under the given setup.

    Args:
        transcript: :func:`avi.index.transcript.transcript_fingerprint` of the video.
    """
    fp = fingerprint({
        "schema": SCHEMA_VERSION,
        "settings": settings.index_fingerprint_fields(),
        "captioner": captioner,
        "embedder": embedder,
        "transcript": transcript,
    })
    return f"{video_sha256[:16]}-{fp[:12]}"


def _captioner_name(backends: Backends) -> str:
    from avi.backends.captioner import PerceptionCaptioner

    return PerceptionCaptioner.name  # the only captioner of the cpu profile for now


def find_index(video: Path, settings: Settings, backends: Backends) -> tuple[Path, VideoInfo, str]:
    """Where the index of ``video`` lives (whether or not it exists yet).

    Returns:
        (index directory, video info, video sha256)

    Raises:
        InputError: the video cannot be read.
    """
    info = probe(video)
    sha = file_sha256(info.path)
    key = index_key(sha, settings, _captioner_name(backends), settings.embedder,
                    transcript_fingerprint(info.path, settings))
    return settings.indexes_dir() / key, info, sha


def _clean_stale(root: Path, key: str) -> None:
    """Remove temporary build directories of ``key`` left by dead builds."""
    for p in root.glob(f".{key}.building-*"):
        try:
            pid = int(p.name.rsplit("-", 2)[-2])
        except ValueError:
            pid = -1
        alive = pid > 0 and Path(f"/proc/{pid}").exists() and pid != os.getpid()
        if not alive:
            shutil.rmtree(p, ignore_errors=True)


def ensure_index(video: Path, settings: Settings, backends: Backends, *, rebuild: bool = False,
                 progress: bool = True) -> VideoIndex:
    """Open the index of ``video``, building it first if there is no complete one.

    Args:
        video: path of the video file.
        rebuild: build anew even if a complete index exists (it is replaced
            only once the new one is complete).
        progress: show a progress bar on stderr.

    Raises:
        InputError: the video cannot be read or has zero length.
        AviError: a model backend fails.
    """
    final, info, sha = find_index(video, settings, backends)
    if not rebuild and (final / "manifest.json").exists():
        try:
            return VideoIndex(final)
        except Exception:
            pass  # incomplete or damaged: rebuild below
    return build_index(info, sha, final, settings, backends, progress=progress)


def build_index(info: VideoInfo, sha: str, final: Path, settings: Settings, backends: Backends,
                progress: bool = True) -> VideoIndex:
    """Build the database of one video into ``final`` (see module docstring).

    Steps: transcript (subtitles and/or ASR), sample frames at ``settings.fps``
    (long side <= ``max_side``), cut ``clip_seconds`` clips, caption each clip
    and attach the speech said during it, embed the captions into a Chroma
    collection with clip start/end metadata (and the transcript segments into a
    second one), build the entity graph, write the manifest.
    """
    root = final.parent
    root.mkdir(parents=True, exist_ok=True)
    key = final.name
    _clean_stale(root, key)
    tmp = root / f".{key}.building-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    t0 = time.perf_counter()
    try:
        if progress:
            print(f"transcript of {info.path.name} ({settings.transcript})…", file=sys.stderr, flush=True)
        segments, transcript_info = build_transcript(info.path, settings, backends)
        t_transcript = time.perf_counter() - t0
        clips = segment(info.duration_s, settings.clip_seconds)
        captioner = backends.captioner
        captions = []
        bar = tqdm(total=len(clips), desc=f"indexing {info.path.name}", unit="clip", file=sys.stderr,
                   disable=not progress, dynamic_ncols=True)
        frames_iter = sample_frames(info, fps=settings.fps, max_side=settings.max_side)
        pending = next(frames_iter, None)
        previous = None
        n_frames = 0
        with bar:
            for clip in clips:
                frames = []
                is_last = clip.index == clips[-1].index
                while pending is not None and (pending.t_s < clip.end_s or is_last):
                    frames.append(pending)
                    pending = next(frames_iter, None)
                n_frames += len(frames)
                captions.append(captioner.caption(clip, frames, previous))
                if frames:
                    previous = frames[-1]
                bar.update(1)
        if n_frames == 0:
            from avi.errors import InputError

            raise InputError(f"no frames could be decoded from {info.path}")
        attach_speech(captions, segments)
        t_caption = time.perf_counter() - t0 - t_transcript
        with open(tmp / "transcript.jsonl", "w") as f:
            for seg in segments:
                f.write(json.dumps(seg.to_dict()) + "\n")

        with open(tmp / "captions.jsonl", "w") as f:
            for cap in captions:
                f.write(json.dumps(cap.to_dict()) + "\n")

        t1 = time.perf_counter()
        embedder = backends.embedder
        client = chroma_client(tmp / "chroma")
        col = client.create_collection(COLLECTION, embedding_function=ChromaEmbeddingFunction(embedder),
                                       metadata={"hnsw:space": "cosine"})
        vectors = embedder.embed([c.text for c in captions])
        col.add(ids=[f"clip-{c.clip_index:05d}" for c in captions], documents=[c.text for c in captions],
                embeddings=vectors,
                metadatas=[{"clip_index": c.clip_index, "start_s": c.start_s, "end_s": c.end_s} for c in captions])
        if segments:
            tcol = client.create_collection(TRANSCRIPT_COLLECTION,
                                            embedding_function=ChromaEmbeddingFunction(embedder),
                                            metadata={"hnsw:space": "cosine"})
            tcol.add(ids=[f"seg-{i:05d}" for i in range(len(segments))], documents=[s.text for s in segments],
                     embeddings=embedder.embed([s.text for s in segments]),
                     metadatas=[{"segment_index": i, "start_s": s.start_s, "end_s": s.end_s, "source": s.source}
                                for i, s in enumerate(segments)])
            del tcol
        del col, client
        release_chroma(tmp / "chroma")
        t_embed = time.perf_counter() - t1

        graph = build_entity_graph(captions)
        save_graph(graph, tmp / "graph.json")

        manifest = {
            "schema": SCHEMA_VERSION,
            "complete": True,
            "avi_version": __version__,
            "key": key,
            "video": {"path": str(info.path), "sha256": sha, "duration_s": info.duration_s, "fps": info.fps,
                      "width": info.width, "height": info.height, "codec": info.codec},
            "settings": settings.index_fingerprint_fields(),
            "captioner": captioner.name,
            "embedder": {"name": embedder.name, "dim": embedder.dim},
            "transcript": transcript_info,
            "counts": {"clips": len(captions), "frames": n_frames, "entities": graph.number_of_nodes(),
                       "relations": graph.number_of_edges()},
            "build_seconds": {"transcript": round(t_transcript, 2), "captions": round(t_caption, 2),
                              "embeddings": round(t_embed, 2),
                              "total": round(time.perf_counter() - t0, 2)},
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1))
        if final.exists():
            release_chroma(final / "chroma")  # a client opened on the old index must not serve it on
            old = root / f".{key}.old-{uuid.uuid4().hex[:8]}"
            os.replace(final, old)
            os.replace(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, final)
    except BaseException:
        release_chroma(tmp / "chroma")
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return VideoIndex(final)
