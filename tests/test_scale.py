"""Long videos (issue 39): a 10-hour video and a 10,000-segment transcript are indexed and answer queries.

Chroma refuses an insert of more than ``get_max_batch_size()`` items (5,461 with its default SQLite limits); an
index of 7,200 clips (10 h of 5 s clips) and 10,000 transcript segments passes that limit in both collections.

What is real: the video (a 10-hour ``lavfi`` colour source at one frame per 5 s, 64x36 px, made by ffmpeg at
test time, about 100 kB), its decoding, the subtitle parser, the build stages, Chroma on disk, the check an index
gets when it is opened and the entity graph without the LLM. What stands in: the captioner (a clock reading per
clip, as caption and as on-screen text, as a fixed camera with a time overlay gives, without OCR's cost) and the
embedder (words and digits hashed into 124 dimensions); the LLM stages are off. The build takes about 35 s of CPU
on 2 cores (a minute while another job shares them), most of it Chroma and the super-node clustering.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess

import numpy as np
import pytest

from avi.backends.types import Caption
from avi.config import Settings
from avi.index.build import ensure_index
from avi.index.store import COLLECTION, TRANSCRIPT_COLLECTION, chroma_client

HOURS = 10
CLIP_S = 5.0
SEGMENTS = 10_000


class ClockCaptioner:
    """One caption per clip naming its clip and the clock time shown (a fixed camera with a time overlay)."""

    name = "test-clock-captioner"

    def caption(self, clip, frames, previous=None) -> Caption:
        clock = f"{int(clip.start_s // 3600):02d}:{int(clip.start_s % 3600 // 60):02d}:{int(clip.start_s % 60):02d}"
        return Caption(clip.index, clip.start_s, clip.end_s, f"clip {clip.index} camera clock {clock}", self.name,
                       {"frames_s": [f.t_s for f in frames], "subject_registry": {},
                        "ocr": [{"text": clock, "score": 1.0, "box": [0, 0, 30, 8], "t_s": clip.start_s}]})


class HashEmbedder:
    """Test double: each word hashed into one of 64 dimensions, and each digit of a number into one of 60 more
    (by its place), unit length: equal texts embed equally, texts that differ in a number differ."""

    name, dim = "test-hash-embedder", 124

    def embed(self, texts):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", str(text).lower()):
                if word.isdigit():
                    for place, digit in enumerate(reversed(word[-6:])):
                        out[i, 64 + 10 * place + int(digit)] += 1.0
                else:
                    out[i, int(hashlib.md5(word.encode()).hexdigest()[:8], 16) % 64] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)


class ScaleBackends:
    """Backends for the scale test: the clock captioner and the hash embedder; no LLM, no ASR."""

    def __init__(self):
        self.captioner, self.embedder = ClockCaptioner(), HashEmbedder()

    def captioner_id(self, settings=None):
        return self.captioner.name

    def embedder_id(self, settings=None):
        return self.embedder.name

    def llm_id(self, settings=None):
        return None

    def close(self):
        pass


def _srt_time(t: float) -> str:
    ms = int(round(t * 1000))
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"


@pytest.fixture(scope="module")
def long_index(tmp_path_factory):
    """The index of a 10-hour video with 10,000 subtitle cues, built once."""
    if shutil.which("ffmpeg") is None:
        pytest.skip("ffmpeg not installed (scripts/setup.sh installs it)")
    work = tmp_path_factory.mktemp("scale")
    video = work / "camera.mp4"
    seconds = HOURS * 3600
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    f"color=c=navy:s=64x36:r=1/5:d={seconds}", "-c:v", "libx264", "-preset", "ultrafast",
                    "-g", "720", "-pix_fmt", "yuv420p", str(video)], check=True, timeout=300)
    step = seconds / SEGMENTS
    (work / "camera.srt").write_text("".join(
        f"{i + 1}\n{_srt_time(i * step)} --> {_srt_time((i + 1) * step - 0.1)}\nannouncement number {i}\n\n"
        for i in range(SEGMENTS)))
    settings = Settings(home=work / "home", index_root=work / "indexes", fps=1 / CLIP_S, clip_seconds=CLIP_S,
                        graph_llm=False, summary_llm=False, transcript="subtitles", subtitles=work / "camera.srt")
    backends = ScaleBackends()
    return ensure_index(video, settings, backends, progress=False), settings, backends, video


def test_ten_hours_of_clips_past_chromas_batch_limit(long_index):
    index, _, backends, _ = long_index
    clips = int(HOURS * 3600 / CLIP_S)
    assert len(index.captions) == index.manifest["counts"]["clips"] == clips
    client = chroma_client(index.chroma_dir())
    assert client.get_max_batch_size() < clips  # the build had to batch
    assert client.get_collection(COLLECTION).count() == clips
    last = index.captions[-1]
    assert last.start_s == pytest.approx(HOURS * 3600 - CLIP_S) and last.data["frames_s"]
    hit = index.search(last.text, backends.embedder, top_k=1)[0]
    assert hit.caption.clip_index == clips - 1 and hit.similarity > 0.99


def test_ten_thousand_transcript_segments(long_index):
    index, _, backends, _ = long_index
    assert len(index.transcript) == SEGMENTS == index.manifest["transcript"]["segments"]
    client = chroma_client(index.chroma_dir())
    assert client.get_max_batch_size() < SEGMENTS
    assert client.get_collection(TRANSCRIPT_COLLECTION).count() == SEGMENTS
    seg, sim = index.search_transcript(f"announcement number {SEGMENTS - 1}", backends.embedder, top_k=1)[0]
    assert seg.text == f"announcement number {SEGMENTS - 1}" and sim > 0.99


def test_one_text_entity_per_clip_is_clustered_within_bounds(long_index):
    """The clock gives one text entity per clip (7,200): the super-nodes are clustered over at most
    MAX_CLUSTERED of them (the dense affinity matrix of all would take gigabytes and many minutes)."""
    from avi.index.graph.supernodes import MAX_CLUSTERED

    index = long_index[0]
    info = index.graph.graph["super_nodes"]
    assert info["entities"] == len(index.captions) and info["clustered"] == MAX_CLUSTERED


def test_the_long_index_is_reused_and_checked(long_index, monkeypatch):
    """Opened again, the index passes its check (count and query) and nothing is built."""
    index, settings, backends, video = long_index
    import avi.index.build as build

    monkeypatch.setattr(build, "build_index", lambda *a, **k: pytest.fail("rebuilt a working index"))
    again = ensure_index(video, settings, backends, progress=False)
    assert again.path == index.path
