"""Subtitle files (avi/index/subtitles.py) and the transcript source choice (avi/index/transcript.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from avi.config import Settings
from avi.errors import InputError
from avi.index.subtitles import find_sidecar, load_subtitles
from avi.index.transcript import plan_transcript, subtitle_file

SRT = """1
00:00:01,500 --> 00:00:03,000
<i>Hello</i> there
friend

2
00:00:04,000 --> 00:00:05,250
The code is 42.
"""

VTT = """WEBVTT

00:01.500 --> 00:03.000
Hello there

01:00:04.000 --> 01:00:05.250
<v Bob>The code is 42.
"""


def test_srt(tmp_path):
    p = tmp_path / "a.srt"
    p.write_text(SRT)
    segs = load_subtitles(p)
    assert [(s.start_s, s.end_s, s.text) for s in segs] == [(1.5, 3.0, "Hello there friend"), (4.0, 5.25, "The code is 42.")]
    assert {s.source for s in segs} == {"subtitles:a.srt"}


def test_vtt(tmp_path):
    p = tmp_path / "a.vtt"
    p.write_text(VTT)
    segs = load_subtitles(p)
    assert [(s.start_s, s.end_s, s.text) for s in segs] == [(1.5, 3.0, "Hello there"), (3604.0, 3605.25, "The code is 42.")]


@pytest.mark.parametrize("name, content", [("bad.srt", "1\nnot a time\nhello\n"), ("bad.vtt", "no header\n"),
                                           ("x.txt", "hello")])
def test_bad_subtitle_files(tmp_path, name, content):
    p = tmp_path / name
    p.write_text(content)
    with pytest.raises(InputError):
        load_subtitles(p)
    with pytest.raises(InputError, match="not found"):
        load_subtitles(tmp_path / "missing.srt")


def test_sidecar_detection(tmp_path):
    video = tmp_path / "talk.mp4"
    video.write_bytes(b"x")
    assert find_sidecar(video) is None
    (tmp_path / "talk.en.vtt").write_text(VTT)
    assert find_sidecar(video).name == "talk.en.vtt"
    (tmp_path / "talk.srt").write_text(SRT)
    assert find_sidecar(video).name == "talk.srt"  # the exact name wins
    (tmp_path / "other.srt").write_text(SRT)
    assert find_sidecar(tmp_path / "nothing.mp4") is None


def test_source_choice(tmp_path):
    video = tmp_path / "talk.mp4"
    video.write_bytes(b"x")
    auto = Settings(transcript="auto")
    assert plan_transcript(video, auto).asr and subtitle_file(video, auto) is None
    (tmp_path / "talk.srt").write_text(SRT)
    plan = plan_transcript(video, auto)
    assert plan.subtitles.name == "talk.srt" and not plan.asr
    both = plan_transcript(video, Settings(transcript="both"))
    assert both.subtitles is not None and both.asr
    assert plan_transcript(video, Settings(transcript="asr")).subtitles is None
    assert not plan_transcript(video, Settings(transcript="off")).asr
    with pytest.raises(InputError, match="no subtitle file"):
        subtitle_file(tmp_path / "silent.mp4", Settings(transcript="subtitles"))
    with pytest.raises(InputError, match="not found"):
        subtitle_file(video, Settings(subtitles=tmp_path / "missing.srt"))


def test_fingerprint_follows_the_subtitle_contents(tmp_path):
    video = tmp_path / "talk.mp4"
    video.write_bytes(b"x")
    without = plan_transcript(video, Settings()).fingerprint()
    (tmp_path / "talk.srt").write_text(SRT)
    first = plan_transcript(video, Settings()).fingerprint()
    (tmp_path / "talk.srt").write_text(SRT.replace("42", "43"))
    second = plan_transcript(video, Settings()).fingerprint()
    assert without["asr"] == "whisper-base-ct2" and without["subtitles_sha256"] is None
    assert first["asr"] is None and first["subtitles_sha256"] != second["subtitles_sha256"]


def test_cli_missing_subtitles_is_one_line(tmp_path, sign_video):
    avi_run = str(Path(sys.executable).with_name("avi-run"))
    proc = subprocess.run([avi_run, "--video", str(sign_video), "--question", "what is said?",
                           "--subtitles", str(tmp_path / "none.srt"), "--index-root", str(tmp_path / "i")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0 and "subtitle file not found" in proc.stderr


def test_subtitle_offset_reaches_the_transcript_and_the_index_key(tmp_path):
    """LongVideoBench's starting_timestamp_for_subtitles: cues shift by the offset, and the index key changes
    only when an offset is set (indexes built before keep their keys)."""
    from avi.config import Settings
    from avi.index.transcript import build_transcript, plan_transcript
    from avi.jobs.spec import JobQuestion
    from avi.jobs.work import group_by_video

    srt = tmp_path / "v.srt"
    srt.write_text("1\n00:00:12,500 --> 00:00:15,000\nhello there\n\n2\n00:00:20,000 --> 00:00:22,000\nbye\n")
    video = tmp_path / "v.mp4"
    base = Settings(home=tmp_path, transcript="subtitles", subtitles=srt)
    shifted = base.model_copy(update={"subtitles_offset_s": 12.5})
    plain, _ = build_transcript(plan_transcript(video, base), None)
    moved, _ = build_transcript(plan_transcript(video, shifted), None)
    assert [(s.start_s, s.end_s) for s in plain] == [(12.5, 15.0), (20.0, 22.0)]
    assert [(s.start_s, s.end_s) for s in moved] == [(0.0, 2.5), (7.5, 9.5)]
    assert "subtitles_offset_s" not in plan_transcript(video, base).fingerprint()
    assert plan_transcript(video, shifted).fingerprint()["subtitles_offset_s"] == 12.5

    qs = [JobQuestion(qid=str(i), video=video, question="Q?", subtitles=srt, meta={"subtitle_offset_s": off})
          for i, off in enumerate([12.5, 12.5, 0.0])]
    jobs = group_by_video(qs)
    assert [(j.subtitles_offset_s, len(j.questions)) for j in jobs] == [(12.5, 2), (0.0, 1)]
