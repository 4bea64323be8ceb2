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


def uses_asr(video: Path, settings) -> bool:
    """Whether the transcript of ``video`` runs speech recognition."""
    mode = settings.transcript
    return mode in ("asr", "both") or (mode == "auto" and subtitle_file(video, settings) is None)


def transcript_fingerprint(video: Path, settings) -> dict:
    """What shapes the transcript, for the index key: mode, ASR weights, subtitle file contents."""
    subs = subtitle_file(video, settings)
    fp = {"mode": settings.transcript,
          "asr": settings.asr_model if uses_asr(video, settings) else None,
          "subtitles_sha256": sha256_file(subs) if subs else None}
    offset = float(getattr(settings, "subtitles_offset_s", 0.0) or 0.0)
    if subs and offset:  # only when set: indexes built without an offset keep their keys
        fp["subtitles_offset_s"] = offset
    return fp


def build_transcript(video: Path, settings, backends,
                     duration_s: float | None = None) -> tuple[list[TranscriptSegment], dict]:
    """Transcript segments of ``video`` in time order, and facts for the manifest.

    Every segment has finite times with ``0 <= start_s <= end_s`` (what the index check of ``transcript.jsonl``
    requires; a subtitle file with a bad cue is refused, :func:`avi.index.subtitles.load_subtitles`).

    Args:
        duration_s: the video's duration in seconds: subtitle cues far past it are refused (None: not checked).

    Raises:
        InputError: a subtitle file is required but missing, cannot be parsed, holds a bad cue, or (``transcript =
            "subtitles"``) holds no cue with text.
        AviError: the audio track exists but cannot be decoded at all.
    """
    info: dict = {"mode": settings.transcript, "sources": [], "segments": 0}
    if settings.transcript == "off":
        return [], info
    segments: list[TranscriptSegment] = []
    subs = subtitle_file(video, settings)
    if subs is not None:
        cues = load_subtitles(subs, offset_s=float(getattr(settings, "subtitles_offset_s", 0.0) or 0.0),
                              duration_s=duration_s)
        if not cues:
            if settings.transcript == "subtitles":
                raise InputError(f"subtitles {subs} hold no cue with text: with --transcript subtitles the video "
                                 f"would have no transcript; give another file or --transcript auto")
            log.warning("subtitles %s hold no cue with text: they add nothing to the transcript", subs)
        segments += cues
        info["sources"].append(f"subtitles:{subs.name}")
    if uses_asr(video, settings):
        t0 = time.perf_counter()
        audio, decoder = load_audio(video)
        info["audio_decoder"] = decoder
        if audio is None:
            info["sources"].append("none (no audio track)")
        else:
            info["audio_seconds"] = round(audio.size / 16000, 2)
            asr = backends.asr
            segments += asr.transcribe(audio, language=settings.asr_language)
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
