"""Every file of an index checked by one function, for shape and types, not only "parses" (issue 55).

:data:`STAGE_FILES` is the table: each file (or folder) of an index directory, the build stage that writes it, and
its check. :func:`check_index_files` runs the checks of a directory and returns what failed, file by file, with the
cause; it is what opening an index runs (:func:`avi.index.build.open_checked`, before any question, ``avi tool``
or ``avi index`` uses it), what copying stages from another index runs on the copies (:mod:`avi.index.reuse`), and
what a resumed build runs on its work directory (:func:`discard_broken`), so a damaged file is found in one place,
named in one line, and only its stage, with the stages built from it (:func:`stages_to_rebuild`), is built again.

Adding a stage file is one more row of :data:`STAGE_FILES` (its stage, its check, whether a complete index must
hold it and whether questions read it).

What each check requires (besides that the file can be read):

* ``manifest.json``: :class:`avi.index.stage_schemas.Manifest` (complete, this avi's schema, the video, counts,
  embedder, settings and components);
* ``captions.jsonl``: one :class:`~avi.index.stage_schemas.CaptionRecord` per line, clip indices 0, 1, 2, ... in
  order, as many as the manifest counts; ``captions.partial.jsonl`` (the finished clips a build resumes from, and
  the captions a rebuild takes over) the same records, in any order;
* ``transcript.jsonl`` / ``transcript_info.json``: :class:`~avi.index.stage_schemas.SegmentRecord` lines and
  :class:`~avi.index.stage_schemas.TranscriptInfo`;
* ``subjects.json``, ``tracks.json``: lists of :class:`~avi.index.stage_schemas.Subject` /
  :class:`~avi.index.stage_schemas.Track`;
* ``person_faces.npz``: an npz archive (no pickles) of (K, 1024) finite descriptors, K >= 1
  (:func:`avi.index.person_subjects.load_subject_faces`);
* ``chroma/``: both collections hold one vector per clip and transcript segment of the directory and one query
  answers (:func:`avi.index.chroma_io.verify_chroma`; a full disk is raised, never taken for damage);
* ``graph.json``: :class:`~avi.index.stage_schemas.Graph` (every edge joins two nodes), read by networkx;
* ``summary.json``: :class:`~avi.index.stage_schemas.Summary`;
* ``shots.json``: the cached hard cuts, finite and ascending (a cache: detected again when it does not read);
* ``memory.sqlite``: the perception memory opens with every table (:class:`avi.memory.store.Memory`; checked on
  copies and resumed builds; a question's :func:`avi.index.memory_stage.ensure_memory` rebuilds a damaged one alone).
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

from pydantic import TypeAdapter, ValidationError

from avi.errors import AviError
from avi.index import stage_schemas as sch
from avi.index.chroma_io import DiskFullError, verify_chroma
from avi.index.person_subjects import load_subject_faces
from avi.index.stage_schemas import validation_cause
from avi.index.store import SCHEMA_VERSION, release_chroma

log = logging.getLogger(__name__)


class StageFileError(ValueError):
    """A stage file whose content cannot be used; the message is the cause."""


@dataclass(frozen=True)
class StageFile:
    """One row of :data:`STAGE_FILES`.

    Attributes:
        stage: the build stage that writes it (``manifest``, ``transcript``, ``captions``, ``tracks``,
            ``subjects``, ``embeddings``, ``graph``, ``summary``).
        check: ``check(directory, path)``: raises (StageFileError, ValueError, OSError, AviError) when the file at
            ``path`` (a file of ``directory``, or its private read-only copy) cannot be used.
        required: a complete index must hold it (unless its stage is pending).
        read_by_questions: opening an index for questions checks it (False: only copies and resumed builds do).
    """

    stage: str
    check: Callable[[Path, Path], None]
    required: bool = False
    read_by_questions: bool = True


def _lines(path: Path) -> list[tuple[int, str]]:
    return [(n, line) for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if line.strip()]


def _validate_lines(path: Path, model) -> list:
    out = []
    for n, line in _lines(path):
        try:
            out.append(model.model_validate_json(line))
        except ValidationError as exc:
            raise StageFileError(f"line {n}: {validation_cause(exc)}") from None
    return out


def _check_json(model) -> Callable[[Path, Path], None]:
    """The check of a JSON file holding one ``model`` (a pydantic model or TypeAdapter)."""
    validate = model.validate_json if isinstance(model, TypeAdapter) else model.model_validate_json

    def check(directory: Path, path: Path) -> None:
        try:
            validate(path.read_bytes())
        except ValidationError as exc:
            raise StageFileError(validation_cause(exc)) from None
    return check


def _check_manifest(directory: Path, path: Path) -> None:
    try:
        m = sch.Manifest.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        raise StageFileError(validation_cause(exc)) from None
    if m.schema_ != SCHEMA_VERSION:
        raise StageFileError(f"it is of index schema {m.schema_}; this avi reads schema {SCHEMA_VERSION}")


def _manifest_clips(directory: Path) -> int | None:
    try:
        counts = json.loads((directory / "manifest.json").read_text()).get("counts") or {}
        clips = counts.get("clips")
        return clips if isinstance(clips, int) and not isinstance(clips, bool) else None
    except (OSError, ValueError, AttributeError):
        return None


def _check_captions(directory: Path, path: Path) -> None:
    caps = _validate_lines(path, sch.CaptionRecord)
    for want, cap in enumerate(caps):
        if cap.clip_index != want:
            raise StageFileError(f"line {want + 1} holds clip {cap.clip_index}, not clip {want}")
    counted = _manifest_clips(directory)
    if counted is not None and counted != len(caps):
        raise StageFileError(f"it holds {len(caps)} clips, its manifest counts {counted}")


def _check_partial_captions(directory: Path, path: Path) -> None:
    _validate_lines(path, sch.CaptionRecord)


def _check_transcript(directory: Path, path: Path) -> None:
    _validate_lines(path, sch.SegmentRecord)


def _check_faces(directory: Path, path: Path) -> None:
    load_subject_faces(path)


def _check_graph(directory: Path, path: Path) -> None:
    _check_json(sch.Graph)(directory, path)
    from avi.index.graph import load_graph

    load_graph(path)


def chroma_counts(directory: Path) -> tuple[int, int]:
    """``(clips, transcript segments)`` of an index or work directory: the lines of ``captions.jsonl`` (or, in a
    work directory, of ``captions.partial.jsonl``) and of ``transcript.jsonl``."""
    caps = directory / "captions.jsonl"
    caps = caps if caps.exists() else directory / "captions.partial.jsonl"
    tr = directory / "transcript.jsonl"
    return len(_lines(caps)) if caps.exists() else 0, len(_lines(tr)) if tr.exists() else 0


def _check_chroma(directory: Path, path: Path) -> None:
    clips, segments = chroma_counts(directory)
    verify_chroma(path, clips, segments)
    release_chroma(path)


def _check_memory(directory: Path, path: Path) -> None:
    """The perception memory opens read-only with every table of its schema (:class:`avi.memory.store.Memory`);
    questions do not check it here: :func:`avi.index.memory_stage.ensure_memory` rebuilds a stale or damaged one alone."""
    from avi.memory.store import Memory, MemoryUnreadable

    try:
        Memory(path).close()
    except MemoryUnreadable as exc:
        raise StageFileError(str(exc).split(": ", 1)[-1]) from None


def _check_shots(directory: Path, path: Path) -> None:
    """The cached hard cuts (:mod:`avi.video.shots`): a JSON object with finite, ascending ``cuts_s``; a cache, so
    questions do not check it (one that does not read is detected again)."""
    import math

    data = json.loads(path.read_text(encoding="utf-8"))
    cuts = data.get("cuts_s") if isinstance(data, dict) else None
    if not isinstance(cuts, list) or not all(isinstance(t, (int, float)) and math.isfinite(t) for t in cuts) \
            or cuts != sorted(cuts):
        raise StageFileError("cuts_s is not a list of finite, ascending seconds")


STAGE_FILES: dict[str, StageFile] = {
    "manifest.json": StageFile("manifest", _check_manifest, required=True),
    "transcript.jsonl": StageFile("transcript", _check_transcript),
    "transcript_info.json": StageFile("transcript", _check_json(sch.TranscriptInfo)),
    "captions.jsonl": StageFile("captions", _check_captions, required=True),
    "captions.partial.jsonl": StageFile("captions", _check_partial_captions, read_by_questions=False),
    "tracks.json": StageFile("tracks", _check_json(sch.TRACKS)),
    "person_faces.npz": StageFile("tracks", _check_faces),
    "subjects.json": StageFile("subjects", _check_json(sch.SUBJECTS)),
    "chroma": StageFile("embeddings", _check_chroma, required=True),
    "graph.json": StageFile("graph", _check_graph, required=True),
    "summary.json": StageFile("summary", _check_json(sch.Summary), required=True),
    "memory.sqlite": StageFile("memory", _check_memory, read_by_questions=False),
    "shots.json": StageFile("shots", _check_shots, read_by_questions=False),
}
"""Each file of an index -> its stage and check (module docstring). The order is the order of the checks."""

BUILT_FROM: dict[str, tuple[str, ...]] = {
    "transcript": ("embeddings", "graph", "summary", "memory"),
    "captions": ("tracks", "subjects", "embeddings", "graph", "summary", "memory"),
    "tracks": ("memory",),
}
"""Stages built from another stage's output: they are built again when it is."""


def check_stage_file(directory: Path, name: str, path: Path | None = None) -> str | None:
    """Run the check of ``name`` (a key of :data:`STAGE_FILES`) on ``path`` (default ``directory / name``).

    Returns:
        None when it passes; else the cause on one line (``"line 3: start_s: Input should be a valid number"``).

    Raises:
        DiskFullError: the file system filled up while the check wrote (Chroma writes when it opens a database).
    """
    path = Path(path) if path is not None else Path(directory) / name
    try:
        STAGE_FILES[name].check(Path(directory), path)
    except DiskFullError:
        raise
    except FileNotFoundError:
        return "missing"
    except Exception as exc:  # noqa: BLE001 - damage surfaces as any kind (OSError, zipfile, networkx, numpy, ...)
        text = str(exc) if isinstance(exc, (StageFileError, AviError)) else f"{type(exc).__name__}: {exc}"
        return " ".join(text.split())[:300] or type(exc).__name__
    return None


def check_index_files(directory: Path, *, names: Iterable[str] | None = None, pending: Sequence[str] = (),
                      chroma_dir: Path | None = None, for_questions: bool = True) -> dict[str, str]:
    """Check the stage files of an index (or work) directory (module docstring).

    Args:
        directory: the index directory.
        names: the files to check (default: every row of :data:`STAGE_FILES`; with ``for_questions`` only those
            questions read).
        pending: LLM stages not built yet (their files may be missing).
        chroma_dir: where to open the Chroma database (a read-only index's private copy); default its own.
        for_questions: leave out the files only copies and resumed builds read.

    Returns:
        ``{file name: cause}`` of the files that failed (a required file that is missing: ``"missing"``); the
        Chroma database is not checked when the captions or the transcript failed (it is built again anyway).

    Raises:
        DiskFullError: the file system filled up during the Chroma check.
    """
    directory = Path(directory)
    wanted = list(STAGE_FILES) if names is None else list(names)
    if names is None and for_questions:
        wanted = [n for n in wanted if STAGE_FILES[n].read_by_questions]
    problems: dict[str, str] = {}
    for name in wanted:
        row = STAGE_FILES[name]
        path = chroma_dir if name == "chroma" and chroma_dir is not None else directory / name
        if not path.exists():
            if row.required and row.stage not in pending:
                problems[name] = "missing"
            continue
        if name == "chroma" and any(STAGE_FILES[p].stage in ("captions", "transcript") for p in problems):
            continue
        cause = check_stage_file(directory, name, path)
        if cause is not None:
            problems[name] = cause
    return problems


def stages_to_rebuild(problems: Iterable[str]) -> set[str]:
    """The stages to build again for the failing files ``problems``: theirs and those built from them
    (:data:`BUILT_FROM`)."""
    stages = {STAGE_FILES[name].stage for name in problems}
    for stage in list(stages):
        stages.update(BUILT_FROM.get(stage, ()))
    return stages


def describe(problems: dict[str, str]) -> str:
    """``{file: cause}`` as one line: ``"graph.json: nodes: Input should be a valid list; chroma: ..."``."""
    return "; ".join(f"{name}: {cause}" for name, cause in problems.items())


def discard_broken(work: Path) -> dict[str, str]:
    """Remove from a work directory (a build that is resumed) the stage files that fail their check, and those
    built from them, so their stages run again: a work directory seeded from a damaged sibling by an older avi,
    or damaged since, never stays poisoned. A damaged finished-clips file (``captions.partial.jsonl``) is left
    to the caption stage, which cuts it at its first bad line and captions the rest again.

    Returns:
        ``{file: cause}`` of the files that failed.
    """
    work = Path(work)
    names = [n for n in ("transcript.jsonl", "transcript_info.json", "captions.partial.jsonl", "graph.json",
                         "summary.json") if (work / n).exists()]
    if (work / "embeddings.done").exists():
        names.append("chroma")
    problems = check_index_files(work, names=names)
    redo = stages_to_rebuild(problems)
    for name in ("transcript.jsonl", "transcript_info.json", "chroma", "graph.json", "summary.json"):
        if STAGE_FILES[name].stage not in redo:
            continue
        if name == "chroma":
            (work / "embeddings.done").unlink(missing_ok=True)
            release_chroma(work / "chroma")
            shutil.rmtree(work / "chroma", ignore_errors=True)
        else:
            (work / name).unlink(missing_ok=True)
    if problems:
        log.warning("the unfinished build in %s held damaged files; building their stages again (%s)", work,
                    describe(problems))
    return problems
