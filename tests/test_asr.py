"""Speech recognition (avi/backends/asr.py) and audio decoding (avi/video/audio.py) on real audio."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import VTEST, sample_video

from avi.backends.asr import FasterWhisperTranscriber, TranscriptSegment, Word, split_at_pauses
from avi.errors import AviError
from avi.video import audio as audio_mod
from avi.video.audio import load_audio

pytest.importorskip("jiwer")  # test extra of the cpu environment
from wer import normalised_wer, raw_wer  # noqa: E402 - after the skip: tests/wer.py imports jiwer

# What is said in opencv-doc's Megamind.avi (checked by ear).
MEGAMIND = ("Of course. You don't judge a book by its cover or a person from the outside. Oh, that's a relief to "
            "hear. You judge them based on their actions. Well, that seems kind of petty, don't you think?")


def test_narrated_video_wer_and_times(session_backends, narrated_video):
    path, truth = narrated_video
    audio, decoder = load_audio(path)
    assert decoder == "pyav" and audio.dtype == np.float32
    assert audio.size / 16000 == pytest.approx(24.0, abs=0.1)
    segments = session_backends.asr.transcribe(audio)
    hyp = " ".join(s.text for s in segments)
    ref = " ".join(t for _, _, t in truth)
    # Raw WER (jiwer's standard normalisation of both sides): "Northgate" for "north gate" and "7" for "seven"
    # are 3 errors in 15 words (0.2, measured); the same spelling variants normalised on both sides: 0.
    assert raw_wer(ref, hyp) <= 0.2, (hyp, raw_wer(ref, hyp))
    assert normalised_wer(ref, hyp) == 0.0, (hyp, normalised_wer(ref, hyp))
    # one segment per utterance (split at the 8 s pause), each within 1.2 s of the truth
    assert len(segments) == len(truth)
    for seg, (t0, t1, _) in zip(segments, truth):
        assert abs(seg.start_s - t0) <= 1.2 and abs(seg.end_s - t1) <= 1.2, (seg, t0, t1)
        assert seg.source == "asr:whisper-base-ct2" and seg.words is None


def test_word_timestamps_on_request(session_backends, narrated_video):
    audio, _ = load_audio(narrated_video[0])
    seg = session_backends.asr.transcribe(audio, word_timestamps=True)[0]
    assert [w.word.lower().strip(".") for w in seg.words][-1] == "pineapple"
    assert all(a.end_s <= b.start_s + 0.05 for a, b in zip(seg.words, seg.words[1:]))


def test_real_dialogue_through_the_ffmpeg_fallback(session_backends):
    path = sample_video("vtest.avi").with_name("Megamind.avi")  # same opencv-doc folder
    audio, decoder = load_audio(path)
    # PyAV decodes this AC3-in-AVI track to nothing; the ffmpeg CLI decodes it
    assert audio_mod._decode_pyav(path, 16000).size == 0
    assert decoder == "ffmpeg-cli" and audio.size / 16000 == pytest.approx(11.2, abs=0.3)
    segments = session_backends.asr.transcribe(audio, language="en")
    hyp = " ".join(s.text for s in segments)
    assert raw_wer(MEGAMIND, hyp) <= 0.05, hyp  # 0 measured: every one of the 38 words right
    assert segments[0].start_s < 1.0 and segments[-1].end_s == pytest.approx(11.2, abs=1.0)


def test_no_audio_track_is_no_transcript(sign_video):
    assert load_audio(sign_video) == (None, "none")
    assert load_audio(VTEST if VTEST.exists() else sign_video)[0] is None


def test_undecodable_audio_without_ffmpeg_is_a_clear_error(monkeypatch):
    path = sample_video("vtest.avi").with_name("Megamind.avi")
    monkeypatch.setattr(audio_mod.shutil, "which", lambda name: None)
    with pytest.raises(AviError, match="install the ffmpeg"):
        load_audio(path)


def test_silence_gives_no_segments(session_backends):
    assert session_backends.asr.transcribe(np.zeros(16000 * 5, np.float32)) == []
    assert session_backends.asr.transcribe(np.zeros(0, np.float32)) == []


def test_hallucination_filters():
    keep = FasterWhisperTranscriber.keep
    assert keep(0.1, -0.3, 1.5, "hello")
    assert not keep(0.9, -1.5, 1.5, "thank you")  # silence read as speech
    assert keep(0.9, -0.2, 1.5, "hello")  # confident text despite a high no-speech probability
    assert not keep(0.1, -0.3, 3.1, "la la la la la la")  # repetition
    assert not keep(0.1, -0.3, 1.0, "   ")


def test_split_at_pauses():
    words = [Word(" a", 0.0, 0.4, 1.0), Word(" b", 0.5, 0.9, 1.0), Word(" c", 3.0, 3.4, 1.0), Word("d", 3.5, 4.0, 1.0)]
    runs = split_at_pauses(words, 1.0)
    assert [[w.word for w in r] for r in runs] == [[" a", " b"], [" c", "d"]]
    assert split_at_pauses([], 1.0) == []


def test_segment_round_trip():
    seg = TranscriptSegment(1.0, 2.0, "hi", "asr:x", -0.2, 0.1, 1.2, [Word("hi", 1.0, 2.0, 0.9)])
    assert TranscriptSegment.from_dict(seg.to_dict()) == seg
