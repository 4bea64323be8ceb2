"""Audio decoding for speech recognition: mono float32 samples at 16 kHz.

PyAV decodes first. Some containers decode to nothing without an error (AC3
audio in AVI files, e.g. opencv-doc's Megamind.avi: PyAV's decoder rejects the
packets and yields zero samples); then the ffmpeg command-line tool, when it
is installed, decodes the same file. A video with no audio track has no audio
(``None``), which is not an error.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import av
import numpy as np

from avi.errors import AviError

SAMPLE_RATE = 16000


def has_audio(path: Path) -> bool:
    """Whether the file has at least one audio stream."""
    with av.open(str(path)) as container:
        return bool(container.streams.audio)


def _decode_pyav(path: Path, sample_rate: int) -> np.ndarray:
    chunks: list[np.ndarray] = []
    with av.open(str(path)) as container:
        stream = container.streams.audio[0]
        resampler = av.AudioResampler(format="flt", layout="mono", rate=sample_rate)
        try:
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    chunks.append(out.to_ndarray().reshape(-1))
            for out in resampler.resample(None):
                chunks.append(out.to_ndarray().reshape(-1))
        except av.error.FFmpegError:
            pass  # a stream PyAV cannot decode: the caller falls back to the ffmpeg CLI
    return np.concatenate(chunks).astype(np.float32) if chunks else np.zeros(0, np.float32)


def _decode_ffmpeg_cli(path: Path, sample_rate: int) -> np.ndarray:
    exe = shutil.which("ffmpeg")
    if exe is None:
        return np.zeros(0, np.float32)
    proc = subprocess.run([exe, "-nostdin", "-v", "error", "-i", str(path), "-vn", "-ac", "1", "-ar", str(sample_rate),
                           "-f", "f32le", "-"], capture_output=True, timeout=3600)
    if proc.returncode != 0:
        return np.zeros(0, np.float32)
    return np.frombuffer(proc.stdout, dtype=np.float32).copy()


def load_audio(path: Path, sample_rate: int = SAMPLE_RATE) -> tuple[np.ndarray | None, str]:
    """Decode the first audio track to mono float32 samples in [-1, 1].

    Args:
        path: a media file.
        sample_rate: output rate in Hz (Whisper wants 16 000).

    Returns:
        (samples, decoder): ``samples`` is None when the file has no audio
        stream; ``decoder`` is ``"pyav"``, ``"ffmpeg-cli"`` or ``"none"``.

    Raises:
        AviError: there is an audio stream but neither PyAV nor the ffmpeg CLI
            decodes any sample from it (the message says to install ffmpeg
            when it is missing).
    """
    path = Path(path)
    if not has_audio(path):
        return None, "none"
    samples = _decode_pyav(path, sample_rate)
    if samples.size:
        return samples, "pyav"
    samples = _decode_ffmpeg_cli(path, sample_rate)
    if samples.size:
        return samples, "ffmpeg-cli"
    hint = "" if shutil.which("ffmpeg") else " (install the ffmpeg command-line tool: it decodes what PyAV cannot)"
    raise AviError(f"the audio track of {path.name} decodes to no samples{hint}")
