#!/usr/bin/env python
"""Per-tool latency (p50 / p95, seconds) on a real video, cpu profile by default.

Builds (or reuses) the video's index, then calls every agent tool ``--repeats``
times with arguments spread over the video (different time ranges and queries
each call, so no call is a cache hit of the previous one), through the same
``Tool.run`` path the agent uses. Prints a Markdown table with p50, p95, mean,
frames looked at per call and errors.

    .venv/bin/python scripts/bench_tools.py [--video VIDEO] [--repeats 8]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from avi.backends import Backends
from avi.config import Settings
from avi.index.build import ensure_index
from avi.offline import enforce_offline_env
from avi.tools import ALL_TOOLS, ToolContext
from avi.video.decode import VideoReader, probe

DEFAULT_VIDEO = Path("/usr/share/doc/opencv-doc/examples/data/vtest.avi")
QUERIES = ["people walking", "a person carrying a bag", "two people meet", "someone near the door",
           "a crowd", "a man in a dark coat", "people leave the scene", "the street is empty"]


def arguments(name: str, i: int, duration: float) -> dict:
    """The i-th call's arguments for tool ``name``: a 5 s range (a 15 s one for boundary_detect) that moves
    through the video, and a query from QUERIES."""
    start = (i * 0.37 * duration) % max(1.0, duration - 5.0)
    rng = [[round(start, 1), round(min(duration, start + 5.0), 1)]]
    q = QUERIES[i % len(QUERIES)]
    return {
        "clip_retrieve": {"query": q},
        "transcript_search": {"query": q},
        "global_explore": {"query": q},
        "graph_retrieve": {"query": q},
        "clip_merge": {"clips": [rng[0], [rng[0][1], min(duration, rng[0][1] + 5.0)]]},
        "text_extract": {"time_ranges": rng},
        "object_detect": {"time_ranges": rng, "objects": ["person"]},
        "boundary_detect": {"time_ranges": [[rng[0][0], min(duration, rng[0][0] + 15.0)]], "event": q},
        "frame_analysis": {"time_ranges": rng, "question": f"Is there {q}?"},
        "transcript_read": {"time_ranges": rng},
    }.get(name, {})


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--video", type=Path, default=DEFAULT_VIDEO)
    p.add_argument("--repeats", type=int, default=8)
    p.add_argument("--tools", nargs="*", help="only these tools (default: all)")
    args = p.parse_args()
    enforce_offline_env()
    settings = Settings(frame_budget=0)  # no budget: every call looks at what it asks for
    backends = Backends(settings)
    try:
        info = probe(args.video)
        index = ensure_index(info.path, settings, backends, progress=True)
        ctx = ToolContext(settings=settings, index=index, video=VideoReader(info, settings.max_side),
                          backends=backends)
        names = args.tools or list(ALL_TOOLS)
        # warm-up: load each backend once so the table shows steady-state latency
        for name in names:
            ALL_TOOLS[name].run(ctx, arguments(name, 0, info.duration_s))
        print(f"# per-tool latency on {info.path.name} ({info.duration_s:.1f} s, {info.width}x{info.height}), "
              f"profile {settings.resolved_profile()}, {args.repeats} calls each, {time.strftime('%Y-%m-%d')}\n")
        print("| tool | p50 s | p95 s | mean s | frames/call | errors |")
        print("|---|---|---|---|---|---|")
        for name in names:
            secs, frames, errors = [], [], 0
            for i in range(1, args.repeats + 1):
                t0 = time.perf_counter()
                obs = ALL_TOOLS[name].run(ctx, arguments(name, i, info.duration_s))
                secs.append(time.perf_counter() - t0)
                frames.append(len(obs.frames_s))
                errors += obs.error
            print(f"| {name} | {np.percentile(secs, 50):.3f} | {np.percentile(secs, 95):.3f} | "
                  f"{statistics.mean(secs):.3f} | {statistics.mean(frames):.1f} | {errors} |", flush=True)
    finally:
        backends.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
