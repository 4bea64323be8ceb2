"""Decoding, sampling and frame access (avi/video/decode.py) on synthetic and real videos."""

from __future__ import annotations

import av
import numpy as np
import pytest
from conftest import sample_video
from synth import Spec, Text, make_video

from avi.errors import InputError
from avi.video.decode import VideoReader, file_sha256, probe, sample_frames


def test_probe_synthetic(sign_video):
    info = probe(sign_video)
    assert info.duration_s == pytest.approx(20.0, abs=0.15)
    assert (info.width, info.height) == (640, 360)
    assert info.fps == pytest.approx(10.0)


def test_sample_frames_at_2fps(sign_video):
    info = probe(sign_video)
    frames = list(sample_frames(info, fps=2.0, max_side=1280))
    assert len(frames) == 40
    times = [f.t_s for f in frames]
    assert times == sorted(times)
    assert np.allclose(np.diff(times), 0.5, atol=0.11)
    assert frames[0].image.shape == (360, 640, 3) and frames[0].image.dtype == np.uint8


def test_sample_frames_resizes_long_side(sign_video):
    info = probe(sign_video)
    f = next(sample_frames(info, fps=1.0, max_side=320))
    assert max(f.image.shape[:2]) == 320 and f.image.shape[1] == 320


def test_sample_window(sign_video):
    info = probe(sign_video)
    frames = list(sample_frames(info, fps=2.0, start_s=12.0, end_s=14.0))
    assert [round(f.t_s, 1) for f in frames] == [12.0, 12.5, 13.0, 13.5]


def test_frames_at_nearest_and_content(sign_video):
    info = probe(sign_video)
    r = VideoReader(info)
    frames = r.frames_at([13.04, 2.0, 2.0, 99.0])
    assert [f.t_s for f in frames] == [2.0, 13.0, pytest.approx(19.9, abs=0.11)]
    # navy before the 10 s cut, dark green after: blue channel dominates, then green.
    before, after = frames[0].image.mean(axis=(0, 1)), frames[1].image.mean(axis=(0, 1))
    assert before[2] > before[1] and after[1] > after[2]
    # cached second call returns the same arrays
    again = r.frames_at([2.0])
    assert again[0] is frames[0]


def test_frames_at_far_apart_seeks(tmp_path):
    spec = Spec(duration_s=60.0, fps=5, size=(320, 180),
                texts=[Text(f"{m}", m, m + 1, size=40) for m in range(0, 60, 10)])
    path = make_video(tmp_path / "long.mp4", spec)
    r = VideoReader(probe(path))
    frames = r.frames_at([55.0, 5.0, 35.0])
    assert [f.t_s for f in frames] == [5.0, 35.0, 55.0]


def test_sha256_is_content_based(sign_video, tmp_path):
    copy = tmp_path / "copy.mp4"
    copy.write_bytes(sign_video.read_bytes())
    assert file_sha256(copy) == file_sha256(sign_video)
    assert len(file_sha256(copy)) == 64


@pytest.mark.parametrize("kind", ["missing", "dir", "empty", "text"])
def test_probe_rejects_bad_input(tmp_path, kind):
    p = tmp_path / "x.mp4"
    if kind == "dir":
        p.mkdir()
    elif kind == "empty":
        p.write_bytes(b"")
    elif kind == "text":
        p.write_text("this is not a video\n" * 50)
    with pytest.raises(InputError):
        probe(p)


def test_probe_rejects_audio_only(tmp_path):
    p = tmp_path / "tone.wav"
    with av.open(str(p), "w") as out:
        s = out.add_stream("pcm_s16le", rate=8000)
        samples = (np.sin(np.arange(8000) / 8000 * 2 * np.pi * 440) * 3000).astype(np.int16)[None, :]
        frame = av.AudioFrame.from_ndarray(samples, format="s16", layout="mono")
        frame.sample_rate = 8000
        for pkt in s.encode(frame):
            out.mux(pkt)
        for pkt in s.encode():
            out.mux(pkt)
    with pytest.raises(InputError, match="no video stream"):
        probe(p)


def test_real_sample_vtest():
    path = sample_video("vtest.avi")
    info = probe(path)
    assert info.duration_s == pytest.approx(79.5, abs=0.2)
    assert (info.width, info.height) == (768, 576)
    frames = VideoReader(info).frames_at([40.0])
    assert frames[0].t_s == pytest.approx(40.0, abs=0.05)


def test_real_sample_bikes_multishot():
    path = sample_video("bikes.mp4")
    info = probe(path)
    assert info.duration_s == pytest.approx(10.0, abs=0.2)
    assert len(list(sample_frames(info, fps=2.0))) == 20
