"""Building a video's database (AVI §3.2), in resumable stages.

Stages, in order (each one's output is kept in the work directory, so a build
that is killed or fails resumes where it stopped and redoes nothing finished):

1. ``transcript``: subtitles and/or speech recognition (``transcript.jsonl``);
2. ``captions``: one caption per 5 s clip, appended to ``captions.partial.jsonl``
   and fsync'ed as each clip finishes (several clips in flight at once when the
   captioner declares ``concurrency`` > 1, e.g. a VLM server); a resumed build
   decodes from the first unfinished clip and captions only the missing ones;
3. ``tracks`` and ``subjects``: the captioner's boxes linked in time (``tracks.json``, :mod:`avi.index.tracks`;
   cpu captioner only), its person tracks linked into one subject per person (each track's ``subject``,
   :mod:`avi.index.person_subjects`; their face descriptors in ``person_faces.npz``, for linking people across
   videos) and the clips' subject registries merged into one (``subjects.json``); then the perception memory
   (``memory.sqlite``, :mod:`avi.memory.store`: every measurement above in SQLite, plus one decode of the sampled
   frames for colours, shapes and the people models; not part of the key, rebuilt alone when stale);
4. ``embeddings``: captions and transcript lines into Chroma (``chroma/``);
5. ``graph``: the entity graph, LLM extraction, super-nodes and importance
   inputs (``graph.json``, AVI §3.2.3 and §6.2);
6. ``summary``: the hierarchical summary for global_explore (``summary.json``).

The two LLM stages (5 and 6) are off the critical path when asked (``stages="search"``, what ``avi-run``,
``avi batch`` and ``avi tool`` do): the index is put in place as soon as the embeddings exist, its manifest
lists the stages still to run (``"pending": ["graph", "summary"]``), questions can be asked, and
:func:`finish_index` builds them into the index directory under the same lock, each file written atomically,
the manifest updated after each: all of them for ``avi index`` (or any ``ensure_index`` with ``stages="all"``),
one of them when a question's tool first needs it (graph_retrieve the graph, global_explore the summary;
:mod:`avi.index.lazy`, issue 38). Nothing builds them after an answer: the answering process pays only for
what its question used (issue 17 built them after the answer; issue 38 made that lazy).

The index directory is keyed by the video's sha256 and a fingerprint of the
settings, models and index prompts that shape it; a later question reuses it,
and any change builds a new one instead of trusting a stale one. Work happens
in ``.<key>.partial/`` beside it, guarded by an exclusive lock file
``.<key>.lock`` (one builder per index); the manifest with
``"complete": true`` is written last and the work directory is renamed into
place atomically, so nothing half-built is ever opened as an index. A new key whose
stages another complete index of the same video already holds with equal inputs (e.g. only a graph prompt
changed: transcript, captions, embeddings and summary; only the tracker changed: all five) starts from a copy of
them (``avi/index/reuse.py``; the manifest's ``reused`` says from which index; a copied LLM stage is not
pending); ``rebuild`` builds everything.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Callable, Sequence

from avi import __version__
from avi.backends import Backends
from avi.backends.types import Caption
from avi.config import Settings, fingerprint
from avi.hashing import sha256_file
from avi.index.locking import IndexBusy, build_lock  # noqa: F401 - IndexBusy re-exported: callers catch it here
from avi.index.memory_stage import ensure_memory, write_memory
from avi.index.opening import BrokenIndex, open_checked, report_broken
from avi.index.person_subjects import FACES_FILE, link_person_tracks, save_subject_faces, tracks_stage_id
from avi.index.reuse import copy_pending_stages, has_stage, salvage_work, seed_work
from avi.index.stage_files import discard_broken
from avi.index.stages import (
    read_jsonl,
    stage_captions,
    stage_embeddings,
    stage_graph,
    stage_summary,
    stage_transcript,
    write_atomic,
    write_jsonl,
)
from avi.index.store import (
    SCHEMA_VERSION,
    VideoIndex,
    release_chroma,
)
from avi.index.subjects import merge_subjects
from avi.index.tracks import build_tracks
from avi.index.transcript import TranscriptPlan, attach_speech, plan_transcript
from avi.places import check_writable
from avi.video.decode import DecodeStats, VideoInfo, VideoReader, file_sha256, probe

log = logging.getLogger(__name__)

VIDEO_SUFFIXES = {".mp4", ".avi", ".mkv", ".mov", ".webm", ".m4v", ".mpg", ".mpeg", ".wmv", ".flv", ".ts", ".3gp"}
# Prompt files whose text shapes what an index contains (their hashes are part of the key).
INDEX_PROMPTS = ("graph_extract", "graph_repair", "summary_segment", "summary_video", "caption_clip", "caption_repair")


def index_key(video_sha256: str, settings: Settings, components: dict) -> str:
    """Directory name of the index for a video under the given setup.

    Args:
        components: :func:`index_components` of the video (models, transcript, prompts).
    """
    fp = fingerprint({"schema": SCHEMA_VERSION, "settings": settings.index_fingerprint_fields(), **components})
    return f"{video_sha256[:16]}-{fp[:12]}"


def index_components(plan: TranscriptPlan, settings: Settings, backends: Backends) -> dict:
    """Each stage's own id, the parts of the index key: captions (the captioner's), embeddings (the embedder's),
    transcript (the video's :class:`~avi.index.transcript.TranscriptPlan`), graph and summary (the LLM's, when
    they use it, and the hashes of their prompts), tracks (:func:`~avi.index.person_subjects.tracks_stage_id`)."""
    prompts = {}
    for name in INDEX_PROMPTS:
        p = Path(settings.prompts_dir) / f"{name}.md"
        if p.exists():
            prompts[name] = sha256_file(p)[:16]
    uses_llm = settings.graph_llm or settings.summary_llm
    return {
        "captioner": backends.captioner_id(settings),
        "embedder": backends.embedder_id(settings),
        "transcript": plan.fingerprint(),
        "llm": backends.llm_id(settings) if uses_llm else None,
        "tracker": tracks_stage_id(settings),
        "prompts": prompts,
    }


def find_index(info: VideoInfo, settings: Settings,
               backends: Backends) -> tuple[Path, VideoInfo, str, dict, TranscriptPlan]:
    """Where the index of the video lives (whether or not it exists yet).

    Args:
        info: the video's probe (:func:`avi.video.decode.probe`: the video is probed once per question).

    Returns:
        (index directory, video info, video sha256, index components, transcript plan)

    Raises:
        InputError: the video cannot be read.
    """
    sha = file_sha256(info.path)
    plan = plan_transcript(info.path, settings)
    components = index_components(plan, settings, backends)
    return settings.indexes_dir() / index_key(sha, settings, components), info, sha, components, plan


LLM_STAGES = ("graph", "summary")
"""The stages that call the LLM, which ``stages="search"`` leaves pending (module docstring)."""


def pending_stages(settings: Settings) -> list[str]:
    """The LLM stages a ``stages="search"`` build leaves for later: those the settings run with the LLM (a
    stage without it, ``graph_llm = false`` / ``summary_llm = false``, costs little and is built at once)."""
    return [s for s, on in zip(LLM_STAGES, (settings.graph_llm, settings.summary_llm)) if on]


def ensure_index(video: Path | VideoInfo, settings: Settings, backends: Backends, *, rebuild: bool = False,
                 progress: bool = True, stages: str = "all") -> VideoIndex:
    """:func:`ensure_index_for` the video file ``video`` (probed here), or its probe (not probed again).

    Raises:
        as :func:`ensure_index_for`; InputError also when the file cannot be probed.
    """
    info = video if isinstance(video, VideoInfo) else probe(video)
    return ensure_index_for(info, settings, backends, rebuild=rebuild, progress=progress, stages=stages)


def ensure_index_for(info: VideoInfo, settings: Settings, backends: Backends, *, rebuild: bool = False,
                     progress: bool = True, stages: str = "all") -> VideoIndex:
    """Open the index of the probed video ``info``, building (or resuming) it first if there is no complete one.

    A complete index is checked when it is opened (:func:`avi.index.opening.open_checked`: every stage file
    questions read passes its check of shape and types, the Chroma collections hold what the captions and the
    transcript count, one query answers); one that fails is reported with its cause (one warning, and
    ``rebuilt_from_broken`` and ``broken_files`` in the new manifest) and rebuilt, taking over every stage that
    passed (only the failing stages, and those built from them, are built again).

    Args:
        info: the video's probe (:func:`avi.video.decode.probe`; the video is not probed again).
        rebuild: build anew even if a complete index or a partial build exists
            (the complete one is replaced only once the new one is complete).
        progress: show progress bars on stderr.
        stages: ``"all"`` builds every stage (and finishes the pending LLM stages of an index built with
            ``"search"``); ``"search"`` returns as soon as the captions and embeddings exist, leaving the LLM
            stages pending (:func:`finish_index`).

    Raises:
        InputError: the video cannot be read or has zero length.
        DiskFullError: the file system filled up while the index was checked or written.
        AviError: a model backend fails, or another process is building this index.
        ValueError: ``stages`` is neither ``"all"`` nor ``"search"``.
    """
    if stages not in ("all", "search"):
        raise ValueError(f"stages must be 'all' or 'search', not {stages!r}")
    final, info, sha, components, plan = find_index(info, settings, backends)
    broken = None
    if not rebuild and final.is_dir():
        try:
            index = open_checked(final)
        except BrokenIndex as exc:  # incomplete or damaged
            broken = report_broken(final, exc)
        else:
            if stages == "all":  # `avi index`: the perception memory too (a question would build it otherwise)
                mem, _ = ensure_memory(index, settings, backends, progress=progress)
                if mem is not None:
                    mem.close()
            if stages == "all" and index.pending:
                return finish_index(index, settings, backends, progress=progress)
            return index
    return build_index(info, sha, final, settings, backends, components, plan, progress=progress, rebuild=rebuild,
                       broken=broken, stages=stages)


def finish_index(index: VideoIndex, settings: Settings, backends: Backends, *, progress: bool = True,
                 only: Sequence[str] | None = None, on_locked: Callable[[], None] | None = None) -> VideoIndex:
    """Build the pending LLM stages of ``index`` (built with ``stages="search"``) into its directory.

    A stage that a sibling index of the same video built from equal inputs is copied from it instead
    (:func:`avi.index.reuse.copy_pending_stages`; the manifest's ``reused_pending`` names the sibling). Each
    stage's file is written atomically and the manifest is rewritten after it (its ``pending`` list
    shrinks, ``build_seconds`` and ``counts`` grow), under the index's build lock, so readers see the index
    before, between and after the stages, never half a file. A build killed here resumes at the stage that was
    running.

    Args:
        only: build just these of the pending stages (a tool that needs one of them; :mod:`avi.index.lazy`);
            None builds every pending stage.
        on_locked: called once the build lock is held, before any stage is built (the lazy build's "building it
            now" line: never said when another process holds the lock).

    Returns:
        the index opened again (no stage pending, or none of ``only``).

    Raises:
        IndexBusy: another process holds the build lock.
        AviError: a backend fails (the stages finished so far are kept).
        OSError: the index directory cannot be written (a read-only index).
    """
    final = index.path
    with build_lock(final.parent, final.name):
        if on_locked is not None:
            on_locked()
        manifest = json.loads((final / "manifest.json").read_text())
        captions = [Caption.from_dict(d) for d in read_jsonl(final / "captions.jsonl")]
        todo = [s for s in manifest.get("pending") or [] if only is None or s in only]
        copied = copy_pending_stages(final, manifest, [s for s in todo if not has_stage(final, s)])
        if copied:
            manifest["reused_pending"] = {**(manifest.get("reused_pending") or {}), **copied}
        for stage in todo:
            t = time.perf_counter()
            if stage == "graph":
                info = stage_graph(final, captions, settings, backends, progress)
                manifest["graph"] = info
                manifest["counts"].update(entities=info["nodes"], relations=info["edges"])
            elif stage == "summary":
                summary = stage_summary(final, captions, settings, backends, progress)
                manifest["counts"]["summary_segments"] = len(summary.get("segments", []))
            manifest["build_seconds"][stage] = round(time.perf_counter() - t, 2)
            manifest["build_seconds"]["total"] = round(manifest["build_seconds"].get("total", 0.0)
                                                       + manifest["build_seconds"][stage], 2)
            manifest["pending"] = [p for p in manifest["pending"] if p != stage]
            write_atomic(final / "manifest.json", json.dumps(manifest, indent=1))
    return VideoIndex(final)


# ---------------------------------------------------------------- work directory


# ---------------------------------------------------------------- the build


def build_index(info: VideoInfo, sha: str, final: Path, settings: Settings, backends: Backends, components: dict,
                plan: TranscriptPlan, *, progress: bool = True, rebuild: bool = False, broken: str | None = None,
                stages: str = "all") -> VideoIndex:
    """Build (or resume building) the database of one video into ``final`` (see module docstring).

    ``stages="search"`` puts the index in place once its embeddings exist, with the LLM stages pending
    (:func:`pending_stages`, :func:`finish_index`); ``"all"`` builds every stage first.

    ``broken``: why the complete index already at ``final`` could not be opened (kept in the manifest as
    ``rebuilt_from_broken``, each failing file's cause as ``broken_files``); an index that cannot be opened here,
    under the lock, is reported the same way, and its stages that passed their checks are taken over.
    The manifest's ``decode`` says how many undecodable packets the caption stage of this run skipped.

    Raises:
        InputError: the index root cannot be written (checked first); no frame decodes; a required subtitle
            file is missing.
        AviError: another process holds this index's build lock; a backend fails
            (the work directory is kept, and the next build resumes from it).
    """
    root = final.parent
    check_writable(root, "the index", "set AVI_INDEX_ROOT or --index-root to a writable folder")
    root.mkdir(parents=True, exist_ok=True)
    key = final.name
    work = root / f".{key}.partial"
    with build_lock(root, key):
        salvage, problems = False, None
        if not rebuild and final.is_dir():
            try:
                return open_checked(final)  # another process finished it while we waited to start
            except BrokenIndex as exc:
                broken, salvage = (exc.cause if broken else report_broken(final, exc)), exc.salvage
                problems = exc.problems
        if work.exists() and not work.is_dir():  # a file in its place: no unfinished build to resume
            work.unlink()
        if rebuild and work.exists():
            release_chroma(work / "chroma")
            shutil.rmtree(work)
        resumed = work.exists()
        if resumed:  # a stage file damaged since (or seeded by an older avi) is built again, never trusted
            discard_broken(work)
        work.mkdir(exist_ok=True)
        reused = None
        if salvage and not resumed:  # keep every stage that passed its check, redo the failing ones
            reused = salvage_work(final, work, problems)
        if reused is None and not (resumed or rebuild):
            reused = seed_work(work, root, key, settings.index_fingerprint_fields(), components)
        times: dict[str, float] = {}
        t0 = time.perf_counter()
        segments, transcript_info = stage_transcript(work, info, plan, backends, progress)
        times["transcript"] = time.perf_counter() - t0
        t = time.perf_counter()
        decode = DecodeStats()
        captions, captioned_now = stage_captions(work, info, settings, backends, progress, decode)
        times["captions"] = time.perf_counter() - t
        attach_speech(captions, segments)
        t = time.perf_counter()
        tracks = build_tracks(captions, fps=settings.fps)
        times["tracks"] = time.perf_counter() - t
        t = time.perf_counter()
        people = []
        if any(tr["label"] == "person" for tr in tracks):  # decode only for a video with people in it
            people = link_person_tracks(tracks, VideoReader(info, settings.max_side).frames_at,
                                        *(getattr(backends, "face_models", None) or (None, None)))  # stand-ins: none
        times["person_subjects"] = time.perf_counter() - t
        t = time.perf_counter()
        subjects = merge_subjects(captions, backends.embedder)
        times["subjects"] = time.perf_counter() - t
        write_atomic(work / "tracks.json", json.dumps(tracks, ensure_ascii=False))
        save_subject_faces(work / FACES_FILE, people)
        write_jsonl(work / "captions.jsonl", [c.to_dict() for c in captions])
        write_atomic(work / "subjects.json", json.dumps(subjects, ensure_ascii=False, indent=1))
        t = time.perf_counter()
        memory = write_memory(work, info, transcript_info, settings, backends,
                              people=bool(getattr(settings, "memory_people", True)), progress=progress)
        times["memory"] = time.perf_counter() - t
        t = time.perf_counter()
        stage_embeddings(work, captions, segments, backends)
        times["embeddings"] = time.perf_counter() - t
        # a stage whose file is already in the work directory (copied from a sibling or salvaged) is not pending
        pending = [s for s in pending_stages(settings) if not has_stage(work, s)] \
            if stages == "search" else []
        graph_info, summary = {"nodes": 0, "edges": 0, "kinds": {}, "extraction": None}, {}
        if "graph" not in pending:
            t = time.perf_counter()
            graph_info = stage_graph(work, captions, settings, backends, progress)
            times["graph"] = time.perf_counter() - t
        if "summary" not in pending:
            t = time.perf_counter()
            summary = stage_summary(work, captions, settings, backends, progress)
            times["summary"] = time.perf_counter() - t
        failed = [c.clip_index for c in captions if c.data.get("failed")]
        manifest = {
            "schema": SCHEMA_VERSION,
            "complete": True,
            "pending": pending,
            "avi_version": __version__,
            "key": key,
            "video": {"path": str(info.path), "sha256": sha, "duration_s": info.duration_s, "fps": info.fps,
                      "width": info.width, "height": info.height, "codec": info.codec},
            "settings": settings.index_fingerprint_fields(),
            "components": components,
            "captioner": captions[0].captioner if captions else components["captioner"],
            "embedder": {"name": backends.embedder.name, "dim": backends.embedder.dim},
            "transcript": transcript_info,
            "counts": {"clips": len(captions), "frames": sum(len(c.data.get("frames_s", [])) for c in captions),
                       "failed_clips": len(failed), "subjects": len(subjects), "tracks": len(tracks),
                       "entities": graph_info["nodes"], "relations": graph_info["edges"],
                       "summary_segments": len(summary.get("segments", []))},
            "memory": {"id": memory["id"], "rows": memory["rows"], "bytes": memory["bytes"]},
            "failed_clips": failed,
            "decode": decode.to_dict(),
            "rebuilt_from_broken": broken,
            "broken_files": problems,
            "graph": graph_info,
            "build_seconds": {k: round(v, 2) for k, v in times.items()} | {
                "total": round(time.perf_counter() - t0, 2)},
            "resumed": {"resumed": resumed, "clips_captioned_in_last_run": captioned_now},
            "reused": reused,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (work / "embeddings.done").unlink(missing_ok=True)
        write_atomic(work / "manifest.json", json.dumps(manifest, indent=1))
        release_chroma(work / "chroma")
        if final.exists():
            release_chroma(final / "chroma")  # a client opened on the old index must not serve it on
            old = root / f".{key}.old-{uuid.uuid4().hex[:8]}"
            os.replace(final, old)
            os.replace(work, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(work, final)
    return VideoIndex(final)


def video_files(folder: Path) -> list[Path]:
    """Video files directly inside ``folder`` (by suffix), sorted by name."""
    return sorted(p for p in Path(folder).iterdir() if p.is_file() and p.suffix.lower() in VIDEO_SUFFIXES)
