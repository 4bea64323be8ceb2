"""Transcripts in the index and the speech tools (avi/index/transcript.py, avi/tools/transcript.py)."""

from __future__ import annotations

import pytest

from avi.backends.asr import TranscriptSegment
from avi.backends.types import Caption
from avi.config import Settings
from avi.index.build import ensure_index
from avi.index.transcript import attach_speech
from avi.tools import ToolContext
from avi.tools.transcript import transcript_read, transcript_search
from avi.video.decode import VideoReader, probe


def test_index_holds_the_transcript(narrated_index):
    idx = narrated_index
    texts = [s.text.lower() for s in idx.transcript]
    assert len(texts) == 2 and "pineapple" in texts[0] and "gate" in texts[1]
    tr = idx.manifest["transcript"]
    assert tr["sources"] == ["asr:whisper-base-ct2"] and tr["segments"] == 2 and tr["audio_decoder"] == "pyav"
    assert tr["audio_seconds"] == pytest.approx(24.0, abs=0.1) and tr["asr_seconds"] > 0
    assert idx.manifest["build_seconds"]["transcript"] > 0
    # the speech is attached to the captions of the clips it overlaps (DVD), and only those
    with_speech = [c for c in idx.captions if "Speech:" in c.text]
    # speech at ~3.7-6.0 s and ~13-16.5 s: clips 0-1 and 2-3 of five; the last clip (20-24 s) is silent
    assert {c.clip_index for c in with_speech} == {0, 1, 2, 3}
    assert "pineapple" in idx.captions[0].text.lower() and idx.captions[0].data["speech"][0]["source"].startswith("asr:")


def test_transcript_search_and_caption_search(narrated_index, session_backends):
    hits = narrated_index.search_transcript("what is the password", session_backends.embedder, top_k=2)
    assert "pineapple" in hits[0][0].text.lower() and hits[0][1] > hits[1][1]
    clips = narrated_index.search("secret code word", session_backends.embedder, top_k=1)
    assert clips[0].caption.clip_index in (0, 1)


def _ctx(index, video, backends):
    return ToolContext(settings=Settings(), index=index, video=VideoReader(probe(video)), backends=backends)


def test_speech_tools(narrated_index, narrated_video, session_backends):
    ctx = _ctx(narrated_index, narrated_video[0], session_backends)
    obs = transcript_search.run(ctx, {"query": "meeting place", "top_k": 2})
    assert not obs.error and obs.text.index("pineapple") < obs.text.lower().index("gate")  # time order
    obs = transcript_read.run(ctx, {"time_ranges": [[12, 18]]})
    assert not obs.error and "gate" in obs.text.lower() and "pineapple" not in obs.text.lower()
    assert len(obs.evidence) == 1 and 12.0 <= obs.evidence[0][0] <= 15.0
    obs = transcript_read.run(ctx, {"time_ranges": [[8, 11]]})
    assert not obs.error and "nothing was said" in obs.text and obs.evidence == []
    obs = transcript_read.run(ctx, {"time_ranges": [[20, 99]]})
    assert "clipped" in obs.text


def test_speech_tools_without_speech(sign_index, sign_video, session_backends):
    ctx = _ctx(sign_index, sign_video, session_backends)
    assert sign_index.transcript == [] and sign_index.manifest["transcript"]["sources"] == ["none (no audio track)"]
    for tool, args in ((transcript_search, {"query": "hello"}), (transcript_read, {"time_ranges": [[0, 5]]})):
        obs = tool.run(ctx, args)
        assert obs.error and "no speech transcript" in obs.text


def test_sidecar_subtitles_replace_asr(tmp_path, narrated_video, session_backends, monkeypatch):
    video = tmp_path / "talk.mp4"
    video.write_bytes(narrated_video[0].read_bytes())
    (tmp_path / "talk.srt").write_text("1\n00:00:02,000 --> 00:00:04,000\nThe meeting is in room twelve.\n")

    class NoAsr:  # test double: fails the test if speech recognition is run
        name = "no-asr"

        def transcribe(self, *a, **k):
            raise AssertionError("ASR must not run when subtitles are used")

    class NoAsrBackends:  # test double: the real captioner and embedder, an ASR that must not run
        captioner, embedder, asr = session_backends.captioner, session_backends.embedder, NoAsr()
        captioner_id = staticmethod(session_backends.captioner_id)
        embedder_id = staticmethod(session_backends.embedder_id)
        llm_id = staticmethod(session_backends.llm_id)

    backends = NoAsrBackends()
    off_llm = {"graph_llm": False, "summary_llm": False}
    idx = ensure_index(video, Settings(index_root=tmp_path / "i", **off_llm), backends, progress=False)
    assert [s.text for s in idx.transcript] == ["The meeting is in room twelve."]
    assert idx.manifest["transcript"]["sources"] == ["subtitles:talk.srt"]
    # transcript "both": subtitles and ASR side by side, each segment keeps its source
    both = ensure_index(video, Settings(index_root=tmp_path / "i", transcript="both", **off_llm), session_backends,
                        progress=False)
    assert both.path != idx.path
    assert {s.source for s in both.transcript} == {"subtitles:talk.srt", "asr:whisper-base-ct2"}
    # off: no transcript at all
    off = ensure_index(video, Settings(index_root=tmp_path / "i", transcript="off", **off_llm), backends,
                       progress=False)
    assert off.transcript == [] and off.path not in (idx.path, both.path)


def test_attach_speech():
    caps = [Caption(i, i * 5.0, i * 5.0 + 5, "People: none.", "x", {}) for i in range(3)]
    segs = [TranscriptSegment(4.0, 6.0, "across two clips", "asr:x"), TranscriptSegment(11.0, 12.0, "x" * 500, "asr:x")]
    attach_speech(caps, segs)
    assert caps[0].text.endswith('Speech: "across two clips"') and caps[1].text.startswith("People: none. Speech:")
    assert len(caps[1].data["speech"]) == 1
    assert caps[2].text.endswith('…"') and len(caps[2].text) < 450
    # the text is stored once, in the transcript: the caption refers to the segment
    assert caps[2].data["speech"] == [{"segment": 1, "start_s": 11.0, "end_s": 12.0, "source": "asr:x"}]
    before = [c.text for c in caps]
    attach_speech(caps, segs)  # a caption taken over from a finished index gets its speech once, not twice
    assert [c.text for c in caps] == before
