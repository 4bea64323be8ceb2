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
- ``embeddings``: the captions, the transcript and the embedder.

The graph and the summary (LLM stages) are never copied from a sibling: they are what a prompt or LLM change is
about. :func:`salvage_work` is the other case: the index of the *same* key whose Chroma database no longer works
gives its transcript, captions, graph and summary to its rebuild, so only the embeddings are computed again.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

from avi.index.store import SCHEMA_VERSION

log = logging.getLogger(__name__)

CAPTION_SETTINGS = ("fps", "max_side", "clip_seconds", "caption_ocr_frames")
CAPTION_PROMPTS = ("caption_clip", "caption_repair")
STAGE_FILES = {
    "transcript": ("transcript.jsonl", "transcript_info.json"),
    "captions": ("captions.partial.jsonl",),
}


def stage_inputs(settings_fields: dict, components: dict) -> dict[str, dict]:
    """What each reusable stage depends on, from an index's settings fields and components (manifest form).

    Returns:
        ``{"transcript": {...}, "captions": {...}, "embeddings": {...}}``; two indexes of one video whose entries
        for a stage are equal (and whose earlier stages are equal) hold the same output for that stage.
    """
    prompts = components.get("prompts") or {}
    transcript = {"transcript": components.get("transcript")}
    captions = {"settings": {k: settings_fields.get(k) for k in CAPTION_SETTINGS},
                "captioner": components.get("captioner"),
                "prompts": {k: prompts.get(k) for k in CAPTION_PROMPTS}}
    return {"transcript": transcript, "captions": captions,
            "embeddings": {**transcript, **captions, "embedder": components.get("embedder")}}


def find_sibling(root: Path, key: str, settings_fields: dict, components: dict) -> tuple[Path, list[str]] | None:
    """The complete index of the same video (first 16 hex digits of the key) sharing the most leading stages.

    Args:
        root: the index root; ``key``: the key being built (``<sha16>-<fingerprint>``).

    Returns:
        (sibling directory, stages it can give, in build order) or None when no sibling shares the transcript.
        Unreadable or incomplete siblings are skipped.
    """
    want = stage_inputs(settings_fields, components)
    best: tuple[Path, list[str]] | None = None
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
        for stage in ("transcript", "captions", "embeddings"):
            if have[stage] != want[stage]:
                break
            stages.append(stage)
        if stages and (best is None or len(stages) > len(best[1])):
            best = (other, stages)
    return best


def seed_work(work: Path, root: Path, key: str, settings_fields: dict, components: dict) -> dict | None:
    """Copy the stages a sibling index can give into the (new, empty) work directory ``work``.

    Captions are copied as ``captions.partial.jsonl`` (the finished-clips file the caption stage resumes from);
    embeddings as the ``chroma/`` folder with the ``embeddings.done`` marker. A copy that fails part way is
    removed again, so the build then runs the stage itself.

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
                    shutil.copy2(other / name, work / name)
        except OSError as exc:
            log.warning("could not reuse the %s stage of %s (%s); building it", stage, other, exc)
            for name in STAGE_FILES.get(stage, ()):
                (work / name).unlink(missing_ok=True)
            if stage == "embeddings":
                shutil.rmtree(work / "chroma", ignore_errors=True)
            break
        copied.append(stage)
    if not copied:
        return None
    log.info("reusing the %s stages of %s", ", ".join(copied), other.name)
    return {"from": other.name, "stages": copied}


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
