#!/usr/bin/env python3
"""Perception-memory build cost (issue 53, item 1): seconds and bytes per hour of video, with and without the
people models, on the indexes of the given videos (built first when missing, as ``avi index`` does).

Each video's memory is built twice into a temporary copy of its index (people models off, then on), so its own
index is not touched; the index's own build seconds (captions, tracks, ...) are printed beside for scale.

    .venv/bin/python scripts/bench_memory.py [VIDEO ...]    (default: the devbench videos of both splits)
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEVBENCH = Path("~/.cache/avi/devbench/videos").expanduser()


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(REPO))
    from avi.backends import Backends
    from avi.config import Settings
    from avi.index.build import ensure_index, video_files
    from avi.memory.store import build_memory
    from avi.video.decode import probe

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("videos", nargs="*", type=Path)
    args = ap.parse_args(argv)
    videos = args.videos or (video_files(DEVBENCH) if DEVBENCH.is_dir() else [])
    if not videos:
        print("bench_memory: no videos (make them with bench/make_videos.py or name some)", file=sys.stderr)
        return 2
    settings = Settings()
    backends = Backends(settings)
    rows = []
    try:
        for video in videos:
            index = ensure_index(video, settings, backends, progress=False, stages="search")
            m = index.manifest
            dur = float(m["video"]["duration_s"])
            own = m.get("build_seconds") or {}
            index_s = sum(float(own.get(k) or 0.0) for k in ("transcript", "captions", "tracks", "person_subjects",
                                                              "subjects", "embeddings"))
            out = {"video": video.name, "duration_s": dur, "index_s": index_s}
            for people in (False, True):
                with tempfile.TemporaryDirectory(prefix="avi-memory-bench-") as tmp:
                    work = Path(tmp) / index.path.name
                    shutil.copytree(index.path, work, ignore=shutil.ignore_patterns("chroma", "memory.sqlite"))
                    t0 = time.perf_counter()
                    info = build_memory(work, probe(Path(m["video"]["path"])), dur, m.get("transcript") or {},
                                        settings, backends, people=people)
                    key = "people" if people else "plain"
                    out[f"{key}_s"] = time.perf_counter() - t0
                    out[f"{key}_bytes"] = info["bytes"]
                    out[f"{key}_rows"] = info["rows"]
            rows.append(out)
            print(f"{video.name}: {dur:.0f} s of video; memory {out['plain_s']:.1f} s without the people models, "
                  f"{out['people_s']:.1f} s with them ({out['people_rows']['people']} person readings); "
                  f"{out['people_bytes'] / 1e6:.2f} MB; the index's own stages {index_s:.1f} s", file=sys.stderr)
    finally:
        backends.close()
    total = sum(r["duration_s"] for r in rows)
    hours = total / 3600.0
    plain = sum(r["plain_s"] for r in rows)
    people = sum(r["people_s"] for r in rows)
    size = sum(r["people_bytes"] for r in rows)
    index_s = sum(r["index_s"] for r in rows)
    print("| video | length s | index stages s | memory s (no people) | memory s (people) | MB |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['video']} | {r['duration_s']:.0f} | {r['index_s']:.1f} | {r['plain_s']:.1f} | "
              f"{r['people_s']:.1f} | {r['people_bytes'] / 1e6:.2f} |")
    print(f"| all ({len(rows)} videos) | {total:.0f} | {index_s:.1f} | {plain:.1f} | {people:.1f} | "
          f"{size / 1e6:.2f} |")
    print(f"\nper hour of video: memory {plain / hours / 60:.1f} min without the people models, "
          f"{people / hours / 60:.1f} min with them ({(people - plain) / max(plain, 1e-9) * 100:.0f} % more); "
          f"{size / hours / 1e6:.1f} MB; the index's own stages {index_s / hours / 60:.1f} min "
          f"(memory with people = {people / max(index_s, 1e-9) * 100:.0f} % of that)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
