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
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Sequence

from avi.index.store import SCHEMA_VERSION

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
        try:
            manifest = json.loads((other / "manifest.json").read_text())
        except (OSError, ValueError):
            continue
        if not manifest.get("complete") or manifest.get("schema") != SCHEMA_VERSION:
            continue
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
    files, which their stages then open instead of building. A copy that fails part way is removed again, so the
    build then runs the stage itself.

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
        except OSError as exc:
            log.warning("could not reuse the %s stage of %s (%s); building it", stage, other, exc)
            for name in STAGE_FILES.get(stage, ()):
                (work / name).unlink(missing_ok=True)
            if stage == "embeddings":
                shutil.rmtree(work / "chroma", ignore_errors=True)
            if stage in LEADING_STAGES:
                break  # the later stages are built from this one
            continue
        copied.append(stage)
    if not copied:
        return None
    log.info("reusing the %s stages of %s", ", ".join(copied), other.name)
    return {"from": other.name, "stages": copied}


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
                _copy_atomic(other / name, final / name)
        except OSError as exc:
            log.warning("could not reuse the %s stage of %s (%s); building it", stage, other, exc)
            continue
        copied[stage] = other.name
    if copied:
        log.info("reusing the %s stages of %s", ", ".join(copied), other.name)
    return copied


def _copy_atomic(src: Path, dst: Path) -> None:
    """Copy ``src`` to ``dst`` through a temporary name, so a build killed mid-copy never leaves a torn file
    that a resumed build would take for a finished stage."""
    tmp = dst.with_name(f".{dst.name}.copy")
    shutil.copy2(src, tmp)
    tmp.replace(dst)


SALVAGE_FILES = {
    "transcript": (("transcript.jsonl", "transcript.jsonl"), ("transcript_info.json", "transcript_info.json")),
    "captions": (("captions.jsonl", "captions.partial.jsonl"),),
    "graph": (("graph.json", "graph.json"),),
    "summary": (("summary.json", "summary.json"),),
}


def salvage_work(final: Path, work: Path) -> dict | None:
    """Copy what the complete index ``final`` (same key) still holds into the new work directory ``work``, when
    only its Chroma database failed: transcript, captions (as the finished-clips file the caption stage resumes
    from), entity graph and summary, each only when its files are all there and parse as JSON. The build then
    embeds again and redoes nothing else.

    Returns:
        ``{"from": key, "stages": [...], "salvaged": True}`` for the manifest's ``reused``, or None when nothing
        could be taken.
    """
    copied: list[str] = []
    for stage, files in SALVAGE_FILES.items():
        if stage in ("graph", "summary") and "captions" not in copied:
            continue  # built from the captions: only with them
        try:
            for src, _ in files:
                text = (final / src).read_text()
                if src.endswith(".jsonl"):
                    for line in text.splitlines():
                        if line.strip():
                            json.loads(line)
                else:
                    json.loads(text)
            for src, dst in files:
                shutil.copy2(final / src, work / dst)
        except (OSError, ValueError) as exc:
            log.info("not taking the %s stage of %s over (%s)", stage, final, exc)
            for _, dst in files:
                (work / dst).unlink(missing_ok=True)
            continue
        copied.append(stage)
    if not copied:
        return None
    log.info("taking the %s stages of %s over; its embeddings are built again", ", ".join(copied), final.name)
    return {"from": final.name, "stages": copied, "salvaged": True}
