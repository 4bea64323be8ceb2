"""The transcript of a video: subtitles and/or speech recognition, attached to clips.

``Settings.transcript`` chooses the source:

* ``auto`` (default): a subtitle file if there is one (``--subtitles`` or a
  sidecar), else speech recognition;
* ``asr`` / ``subtitles``: only that source; ``both``: the two side by side,
  each segment recording its source; ``off``: no transcript.

Each clip's caption gets the speech said during it appended (DVD attaches
subtitles to its clip captions the same way), so clip_retrieve finds spoken
content too; the segments are also searchable on their own (transcript_search).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path

from avi.backends.asr import TranscriptSegment
from avi.backends.types import Caption
from avi.errors import InputError
from avi.hashing import sha256_file
from avi.index.subtitles import find_sidecar, load_subtitles
from avi.input_paths import check_input_path
from avi.video.audio import load_audio

log = logging.getLogger(__name__)

SPEECH_CHARS_PER_CLIP = 400


def subtitle_file(video: Path, settings) -> Path | None:
    """The subtitle file the transcript uses for ``video`` under ``settings`` (None if none).

    Raises:
        InputError: ``transcript = "subtitles"`` but there is no subtitle file.
    """
    if settings.transcript in ("off", "asr"):
        return None
    path = check_input_path(settings.subtitles, "the subtitle file") if settings.subtitles else find_sidecar(video)
    if path is not None and not path.is_file():
        raise InputError(f"subtitle file not found: {path}")
    if path is None and settings.transcript == "subtitles":
        raise InputError(f"no subtitle file for {Path(video).name}: pass --subtitles FILE or put a .srt/.vtt "
                         f"with the same name beside the video")
    return path


@dataclass(frozen=True)
class TranscriptPlan:
    """Where the transcript of one video comes from, decided once per video (:func:`plan_transcript`; issue 54):
    the ``mode`` (the ``transcript`` setting), the ``subtitles`` file (None: none) and its contents' sha256,
    whether speech recognition runs (``asr``) with which ``asr_model`` and ``language``, and the subtitles'
    ``offset_s`` (seconds)."""

    video: Path
    mode: str
    subtitles: Path | None
    asr: bool
    asr_model: str | None = None
    language: str | None = None
    offset_s: float = 0.0
    subtitles_sha256: str | None = None

    def fingerprint(self) -> dict:
        """What shapes the transcript, for the index key: mode, ASR weights, subtitle file contents (and an offset
        only when set, so that indexes built without one keep their keys)."""
        fp = {"mode": self.mode, "asr": self.asr_model if self.asr else None, "subtitles_sha256": self.subtitles_sha256}
        if self.subtitles and self.offset_s:
            fp["subtitles_offset_s"] = self.offset_s
        return fp


def plan_transcript(video: Path, settings) -> TranscriptPlan:
    """The :class:`TranscriptPlan` of ``video`` under ``settings``: ``auto`` uses a subtitle file if there is one,
    else speech recognition; ``both`` the two; ``asr`` / ``subtitles`` one; ``off`` none.

    Raises:
        InputError: ``transcript = "subtitles"`` but there is no subtitle file, or a given one is missing.
    """
    mode, subs = settings.transcript, subtitle_file(video, settings)
    return TranscriptPlan(Path(video), mode, subs, mode in ("asr", "both") or (mode == "auto" and subs is None),
                          settings.asr_model, getattr(settings, "asr_language", None),
                          float(getattr(settings, "subtitles_offset_s", 0.0) or 0.0),
                          sha256_file(subs) if subs else None)


def build_transcript(plan: TranscriptPlan, backends,
                     duration_s: float | None = None) -> tuple[list[TranscriptSegment], dict]:
    """Transcript segments of the planned video in time order (:class:`TranscriptPlan`), and facts for the
    manifest.

    Every segment has finite times with ``0 <= start_s <= end_s`` (what the index check of ``transcript.jsonl``
    requires; a subtitle file with a bad cue is refused, :func:`avi.index.subtitles.load_subtitles`).

    Args:
        duration_s: the video's duration in seconds: subtitle cues far past it are refused (None: not checked).

    Raises:
        InputError: a subtitle file is required but missing, cannot be parsed, holds a bad cue, or (``transcript =
            "subtitles"``) holds no cue with text.
        AviError: the audio track exists but cannot be decoded at all.
    """
    info: dict = {"mode": plan.mode, "sources": [], "segments": 0}
    if plan.mode == "off":
        return [], info
    segments: list[TranscriptSegment] = []
    subs = plan.subtitles
    if subs is not None:
        cues = load_subtitles(subs, offset_s=plan.offset_s, duration_s=duration_s)
        if not cues:
            if plan.mode == "subtitles":
                raise InputError(f"subtitles {subs} hold no cue with text: with --transcript subtitles the video "
                                 f"would have no transcript; give another file or --transcript auto")
            log.warning("subtitles %s hold no cue with text: they add nothing to the transcript", subs)
        segments += cues
        info["sources"].append(f"subtitles:{subs.name}")
    if plan.asr:
        t0 = time.perf_counter()
        audio, decoder = load_audio(plan.video)
        info["audio_decoder"] = decoder
        if audio is None:
            info["sources"].append("none (no audio track)")
        else:
            info["audio_seconds"] = round(audio.size / 16000, 2)
            asr = backends.asr
            segments += asr.transcribe(audio, language=plan.language)
            info["sources"].append(f"asr:{asr.name}")
        info["asr_seconds"] = round(time.perf_counter() - t0, 2)
    for seg in segments:  # a recogniser's times, made what the index check requires
        seg.start_s = max(0.0, seg.start_s) if math.isfinite(seg.start_s) else 0.0
        seg.end_s = max(seg.start_s, seg.end_s) if math.isfinite(seg.end_s) else seg.start_s
    segments.sort(key=lambda s: (s.start_s, s.end_s))
    info["segments"] = len(segments)
    return segments, info


SPEECH_MARK = ' Speech: "'
"""What :func:`attach_speech` puts between a caption and the speech said during its clip."""


def attach_speech(captions: list[Caption], segments: list[TranscriptSegment]) -> None:
    """Append to each caption what was said during its clip (in place).

    A segment overlapping several clips is attached to each of them. The text added to a caption is capped at
    ``SPEECH_CHARS_PER_CLIP`` characters; ``caption.data["speech"]`` refers to the segments by their index in
    the transcript (``{"segment", "start_s", "end_s", "source"}``), so a segment's text is stored once, in
    ``transcript.jsonl``, however many clips it spans (a 6 MB subtitle cue over a whole video no longer makes every
    clip's caption 6 MB). Attaching again (a caption taken over from a finished index) replaces the speech
    attached before.
    """
    for cap in captions:
        if cap.data.pop("speech", None) is not None and SPEECH_MARK in cap.text:
            cap.text = cap.text[:cap.text.rindex(SPEECH_MARK)]
        said = [(i, s) for i, s in enumerate(segments) if s.start_s < cap.end_s and s.end_s > cap.start_s]
        if not said:
            continue
        cap.data["speech"] = [{"segment": i, "start_s": s.start_s, "end_s": s.end_s, "source": s.source}
                              for i, s in said]
        text, most = "", SPEECH_CHARS_PER_CLIP + 1
        for _, s in said:  # no more than the cap is joined, however long a segment is
            text = f"{text} {s.text[:most]}" if text else s.text[:most]
            if len(text) > SPEECH_CHARS_PER_CLIP:
                break
        if len(text) > SPEECH_CHARS_PER_CLIP:
            text = text[: SPEECH_CHARS_PER_CLIP - 1] + "…"
        cap.text = f'{cap.text}{SPEECH_MARK}{text}"'
