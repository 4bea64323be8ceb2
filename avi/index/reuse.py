"""Stages an index build can take from another complete index of the same video.

An index directory is keyed by everything that shapes it (``avi.index.build.index_key``), so editing the graph
prompt or switching the orchestrator LLM gives a new key. Only the stages downstream of the change have to be
built again: the transcript, the clip captions and their embeddings depend on far less than the whole key. This
module finds a complete sibling index (same video sha256, other key) whose inputs to those stages are equal and
copies their files into a fresh work directory, where the build's own resume logic then skips them.

What each stage depends on (besides the video and the index schema):

- ``transcript``: the transcript fingerprint (mode, ASR weights, subtitle file hash);
- ``captions``: frame rate, frame size, clip length, OCR frames per clip, the captioner id and the caption prompts
  (the speech attached to captions is added at build time from the transcript, so it is not part of this stage);
- ``embeddings``: the captions, the transcript and the embedder;
- ``graph``: all of the above (the graph is built from the captions with their speech, its subjects merged with the
  embedder) and its own settings (``graph_llm``, ``graph_chunk_chars``); with ``graph_llm`` on, also the LLM and
  the graph prompts;
- ``summary``: the transcript and the captions, ``summary_llm``; with it on, also the LLM and the summary prompts.

So a change that touches none of a stage's inputs (a new tracker, the other LLM stage's prompt) copies that stage
too; the graph and the summary are copied only from a sibling that built them (not pending there), and what a
prompt or LLM change is about is built again. :func:`salvage_work` is the other case: the index of the *same*
key whose Chroma database no longer works gives its transcript, captions, graph and summary to its rebuild, so
only the embeddings are computed again.

Nothing is copied unchecked (issue 55): every file a sibling gives is checked on its copy with the check its
file has in :data:`avi.index.stage_files.STAGE_FILES` (shape and types; the Chroma database answers with the
right counts), and a copy that fails is removed and its stage built instead, so a damaged sibling never
poisons the new index or its work directory. A sibling whose manifest fails its check is no sibling.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Sequence

from avi.index.stage_files import STAGE_FILES as CHECKS
from avi.index.stage_files import check_stage_file, describe, stages_to_rebuild
from avi.index.store import release_chroma

log = logging.getLogger(__name__)

CAPTION_SETTINGS = ("fps", "max_side", "clip_seconds", "caption_ocr_frames")
CAPTION_PROMPTS = ("caption_clip", "caption_repair")
LLM_STAGE_INPUTS = {  # stage -> (its on/off setting, its other settings, its prompts)
    "graph": ("graph_llm", ("graph_chunk_chars",), ("graph_extract", "graph_repair")),
    "summary": ("summary_llm", (), ("summary_segment", "summary_video")),
}
LEADING_STAGES = ("transcript", "captions", "embeddings")
STAGE_FILES = {
    "transcript": ("transcript.jsonl", "transcript_info.json"),
    "captions": ("captions.partial.jsonl",),
    "graph": ("graph.json",),
    "summary": ("summary.json",),
}


def has_stage(directory: Path, stage: str) -> bool:
    """Whether ``directory`` (an index or its work directory) holds every file of ``stage`` (:data:`STAGE_FILES`)."""
    return all((directory / name).is_file() for name in STAGE_FILES[stage])


def stage_inputs(settings_fields: dict, components: dict) -> dict[str, dict]:
    """What each reusable stage depends on, from an index's settings fields and components (manifest form).

    Returns:
        ``{"transcript": {...}, "captions": {...}, "embeddings": {...}, "graph": {...}, "summary": {...}}``; two
        indexes of one video whose entries for a stage are equal (and, for transcript, captions and embeddings,
        whose earlier stages are equal) hold the same output for that stage (module docstring).
    """
    prompts = components.get("prompts") or {}
    transcript = {"transcript": components.get("transcript")}
    captions = {"settings": {k: settings_fields.get(k) for k in CAPTION_SETTINGS},
                "captioner": components.get("captioner"),
                "prompts": {k: prompts.get(k) for k in CAPTION_PROMPTS}}
    embeddings = {**transcript, **captions, "embedder": components.get("embedder")}
    out = {"transcript": transcript, "captions": captions, "embeddings": embeddings}
    for stage, (switch, names, prompt_names) in LLM_STAGE_INPUTS.items():
        on = settings_fields.get(switch)
        out[stage] = {"built_from": embeddings if stage == "graph" else {**transcript, **captions},
                      "settings": {k: settings_fields.get(k) for k in (switch, *names)},
                      "llm": components.get("llm") if on else None,
                      "prompts": {k: prompts.get(k) for k in prompt_names} if on else None}
    return out


def find_sibling(root: Path, key: str, settings_fields: dict, components: dict,
                 wanted: Sequence[str] = ()) -> tuple[Path, list[str]] | None:
    """The complete index of the same video (first 16 hex digits of the key) that can give the most of the
    ``wanted`` stages, and of those the most stages.

    The transcript, captions and embeddings are given in that order, each only with the ones before it; the graph
    and the summary each when their inputs are equal and the sibling built them (its file is there and the stage
    is not pending in its manifest).

    Args:
        root: the index root; ``key``: the key being built (``<sha16>-<fingerprint>``).
        wanted: stages the caller needs most (a complete index's pending LLM stages); empty: every stage counts
            alike.

    Returns:
        (sibling directory, stages it can give, in build order) or None when no sibling shares the transcript.
        Unreadable or incomplete siblings are skipped.
    """
    want = stage_inputs(settings_fields, components)
    best: tuple[Path, list[str]] | None = None

    def rank(stages: list[str]) -> tuple[int, int]:
        return len(set(stages) & set(wanted)), len(stages)

    for other in sorted(root.glob(f"{key.split('-')[0]}-*")):
        if other.name == key or not other.is_dir():
            continue
        if check_stage_file(other, "manifest.json") is not None:  # unreadable, incomplete, of another schema
            continue
        manifest = json.loads((other / "manifest.json").read_text())
        have = stage_inputs(manifest.get("settings") or {}, manifest.get("components") or {})
        stages: list[str] = []
        for stage in LEADING_STAGES:
            if have[stage] != want[stage]:
                break
            stages.append(stage)
        pending = manifest.get("pending") or []
        stages += [s for s in LLM_STAGE_INPUTS if stages and have[s] == want[s] and s not in pending
                   and has_stage(other, s)]
        if stages and (best is None or rank(stages) > rank(best[1])):
            best = (other, stages)
    return best


def seed_work(work: Path, root: Path, key: str, settings_fields: dict, components: dict) -> dict | None:
    """Copy the stages a sibling index can give into the (new, empty) work directory ``work``.

    Captions are copied as ``captions.partial.jsonl`` (the finished-clips file the caption stage resumes from);
    embeddings as the ``chroma/`` folder with the ``embeddings.done`` marker; the graph and the summary as their
    files, which their stages then open instead of building. Each copy is checked where it lands
    (:func:`avi.index.stage_files.check_stage_file`: the Chroma copy answers with the copied captions' and
    transcript's counts); a copy that fails part way or fails its check is removed again, with one warning naming
    the cause, so the build then runs the stage itself (and, for the transcript, captions and embeddings, the
    stages after it).

    Returns:
        ``{"from": sibling key, "stages": [...]}`` for the manifest, or None when nothing was copied.
    """
    found = find_sibling(root, key, settings_fields, components)
    if found is None:
        return None
    other, stages = found
    copied: list[str] = []
    for stage in stages:
        try:
            if stage == "embeddings":
                shutil.copytree(other / "chroma", work / "chroma")
                (work / "embeddings.done").touch()
            else:
                for name in STAGE_FILES[stage]:
                    _copy_atomic(other / name, work / name)
            cause = _copies_cause(work, stage)
        except OSError as exc:
            cause = f"{type(exc).__name__}: {exc}"
        if cause is not None:
            log.warning("could not reuse the %s stage of %s (%s); building it", stage, other, cause)
            _remove_stage(work, stage)
            if stage in LEADING_STAGES:
                break  # the later stages are built from this one
            continue
        copied.append(stage)
    if not copied:
        return None
    log.info("reusing the %s stages of %s", ", ".join(copied), other.name)
    return {"from": other.name, "stages": copied}


def _stage_names(stage: str) -> tuple[str, ...]:
    """The :data:`~avi.index.stage_files.STAGE_FILES` rows a copied stage is checked by."""
    return ("chroma",) if stage == "embeddings" else STAGE_FILES[stage]


def _copies_cause(work: Path, stage: str) -> str | None:
    """Why the copy of ``stage`` in ``work`` cannot be used (its files' checks), or None."""
    problems = {n: c for n in _stage_names(stage) if (c := check_stage_file(work, n)) is not None}
    return describe(problems) if problems else None


def _remove_stage(work: Path, stage: str) -> None:
    """Remove the copied files of ``stage`` from ``work``."""
    if stage == "embeddings":
        (work / "embeddings.done").unlink(missing_ok=True)
        release_chroma(work / "chroma")
        shutil.rmtree(work / "chroma", ignore_errors=True)
    for name in STAGE_FILES.get(stage, ()):
        (work / name).unlink(missing_ok=True)


def copy_pending_stages(final: Path, manifest: dict, wanted: list[str]) -> dict[str, str]:
    """Copy into the complete index ``final`` those of its pending LLM stages ``wanted`` that a sibling index
    built from equal inputs (:func:`find_sibling`): an index built with the stages pending (``stages="search"``)
    before its sibling had them, or before avi copied them at build time, needs no LLM call for them.

    Args:
        manifest: ``final``'s manifest (its settings and components say what the stages need).

    Returns:
        ``{stage: sibling key}`` of the stages copied (their files are in ``final``); the caller updates the
        manifest. A stage whose copy fails is left to be built.
    """
    found = find_sibling(final.parent, final.name, manifest.get("settings") or {}, manifest.get("components") or {},
                         wanted)
    if found is None:
        return {}
    other, stages = found
    copied: dict[str, str] = {}
    for stage in (s for s in wanted if s in stages and s in LLM_STAGE_INPUTS):
        try:
            for name in STAGE_FILES[stage]:
                _copy_atomic(other / name, final / name, check=True)
        except (OSError, ValueError) as exc:
            log.warning("could not reuse the %s stage of %s (%s); building it", stage, other, exc)
            continue
        copied[stage] = other.name
    if copied:
        log.info("reusing the %s stages of %s", ", ".join(copied), other.name)
    return copied


def _copy_atomic(src: Path, dst: Path, check: bool = False) -> None:
    """Copy ``src`` to ``dst`` through a temporary name, so a build killed mid-copy never leaves a torn file
    that a resumed build would take for a finished stage.

    Args:
        check: run the check of ``dst``'s name (:data:`~avi.index.stage_files.STAGE_FILES`) on the copy before
            it takes the name.

    Raises:
        OSError: the copy failed.
        ValueError: ``check`` and the copy fails its check (nothing is left at ``dst`` or the temporary name).
    """
    tmp = dst.with_name(f".{dst.name}.copy")
    shutil.copy2(src, tmp)
    cause = check_stage_file(dst.parent, dst.name, tmp) if check and dst.name in CHECKS else None
    if cause is not None:
        tmp.unlink(missing_ok=True)
        raise ValueError(f"{src.name}: {cause}")
    tmp.replace(dst)


SALVAGE_ORDER = ("transcript", "captions", "embeddings", "graph", "summary")
"""The stages a rebuild of the same key can take over, in build order."""


def salvage_work(final: Path, work: Path, problems: dict[str, str] | None = None) -> dict | None:
    """Copy what the complete index ``final`` (same key) still holds into the new work directory ``work``: every
    stage whose files passed their check, less the stages built from a failing one
    (:func:`avi.index.stage_files.stages_to_rebuild`). The build then redoes only the failing stages (the
    object tracks, person subjects and subject registry are always computed again from the captions).

    The captions are taken as the finished-clips file the caption stage resumes from: ``captions.partial.jsonl``
    (the captions before the speech was attached) when it passes its check, else ``captions.jsonl`` (the
    speech is attached again idempotently, :func:`avi.index.transcript.attach_speech`). Each copy is checked
    again in ``work``; one that fails is removed and its stage built.

    Args:
        problems: ``{file: cause}`` of ``final``'s failing files (:func:`avi.index.stage_files.check_index_files`);
            None: only its Chroma database failed.

    Returns:
        ``{"from": key, "stages": [...], "salvaged": True}`` for the manifest's ``reused``, or None when nothing
        could be taken.
    """
    problems = dict(problems) if problems is not None else {"chroma": ""}
    partial = final / "captions.partial.jsonl"
    partial_ok = partial.is_file() and check_stage_file(final, partial.name) is None
    if partial_ok:  # captions.jsonl is written again from it; what was built from the captions still holds
        problems.pop("captions.jsonl", None)
    skip = stages_to_rebuild(problems)
    copied: list[str] = []
    for stage in SALVAGE_ORDER:
        if stage in skip or (stage in ("embeddings", "graph", "summary")
                             and not {"transcript", "captions"} <= set(copied)):
            continue  # failed, or built from what is built again
        try:
            if stage == "embeddings":
                shutil.copytree(final / "chroma", work / "chroma")
                (work / "embeddings.done").touch()
            elif stage == "captions":
                shutil.copy2(partial if partial_ok else final / "captions.jsonl", work / "captions.partial.jsonl")
            else:
                if not has_stage(final, stage):
                    continue
                for name in STAGE_FILES[stage]:
                    shutil.copy2(final / name, work / name)
            cause = _copies_cause(work, stage)
        except OSError as exc:
            cause = f"{type(exc).__name__}: {exc}"
        if cause is not None:
            log.info("not taking the %s stage of %s over (%s)", stage, final, cause)
            _remove_stage(work, stage)
            continue
        copied.append(stage)
    if not copied:
        return None
    log.info("taking the %s stages of %s over; the rest is built again", ", ".join(copied), final.name)
    return {"from": final.name, "stages": copied, "salvaged": True}
