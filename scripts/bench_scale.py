#!/usr/bin/env python
"""Index build time and size per hour of video, at the length of a long recording (issue 39).

Makes a long synthetic video with ffmpeg's ``lavfi`` sources (no file is committed) and, optionally, a subtitle
file with many cues, builds its index with avi's build code and reports seconds per stage, the index's size by
part, and both per hour of video. Two ways to caption:

* ``--captioner clock`` (default): a stand-in that writes one caption per clip of the length real perception
  captions have (~180 characters; tests/test_scale.py's clock reading padded) without looking at pixels, so a
  10-hour build takes minutes: it measures everything but captioning (decoding at the index frame rate, the
  embeddings, Chroma, the subject registry, the entity graph and the summary without the LLM);
* ``--captioner perception``: the cpu profile's real captioner (OCR, detectors, colours, motion) on every frame at
  ``--fps``: the whole build as a user meets it, but about 0.3-0.5 x the video's length on 2 cores.

The embedder is the cpu profile's real MiniLM (``--embedder real``, default) or the test suite's hash stand-in.

    .venv/bin/python scripts/bench_scale.py --hours 10 --segments 10000              # stand-in captions
    .venv/bin/python scripts/bench_scale.py --hours 0.25 --captioner perception --fps 2 --source testsrc2

Prints one JSON object (``--out`` also writes it): ``seconds`` per stage and in total, ``bytes`` per part,
``per_hour`` (wall and CPU seconds, MB) and the settings. Run it with ``nice`` beside other work and the wall
times are pessimistic; the CPU seconds (all threads) do not depend on what else runs.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

FILLER = ("People: no people detected. Objects: none of the detector's classes. On-screen text: \"CAM 3\"; "
          "\"{clock}\". Dominant colours: blue 97%. Motion: static.")


def make_video(path: Path, seconds: float, source: str, size: str, rate: str) -> None:
    """A ``seconds`` long H.264 video of ffmpeg's lavfi ``source`` (``color`` or ``testsrc2``) at ``rate`` fps."""
    src = f"color=c=navy:s={size}:r={rate}:d={seconds}" if source == "color" else \
        f"testsrc2=s={size}:r={rate}:d={seconds}"
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", src, "-c:v",
                    "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", str(path)], check=True)


def write_srt(path: Path, seconds: float, n: int) -> None:
    """``n`` subtitle cues spread over ``seconds``."""
    from test_scale import _srt_time

    step = seconds / n
    path.write_text("".join(f"{i + 1}\n{_srt_time(i * step)} --> {_srt_time((i + 1) * step - 0.1)}\n"
                            f"announcement number {i} on platform {i % 12}\n\n" for i in range(n)))


class PaddedClock:
    """tests/test_scale.py's clock captioner with the length of a real perception caption."""

    name = "bench-clock-captioner"

    def __init__(self):
        from test_scale import ClockCaptioner

        self.inner = ClockCaptioner()

    def caption(self, clip, frames, previous=None):
        cap = self.inner.caption(clip, frames, previous)
        cap.text = f"{cap.text}. " + FILLER.format(clock=cap.data["ocr"][0]["text"])
        cap.captioner = self.name
        return cap


def _cpu_s() -> float:
    """CPU seconds this process (all its threads) and its waited-for children have used."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hours", type=float, default=10.0)
    p.add_argument("--segments", type=int, default=10_000, help="subtitle cues (0: no transcript)")
    p.add_argument("--captioner", choices=["clock", "perception"], default="clock")
    p.add_argument("--embedder", choices=["real", "hash"], default="real")
    p.add_argument("--fps", type=float, default=0.2, help="index frame rate (setting fps; default one frame per "
                                                         "5 s clip)")
    p.add_argument("--source", choices=["color", "testsrc2"], default="color")
    p.add_argument("--size", default="64x36", help="frame size of the synthetic video (default 64x36)")
    p.add_argument("--work", type=Path, help="folder for the video and index (default: a temporary one)")
    p.add_argument("--out", type=Path, help="also write the JSON result here")
    args = p.parse_args()

    from avi.backends import Backends
    from avi.config import Settings
    from avi.index.build import ensure_index
    from avi.offline import enforce_offline_env

    enforce_offline_env()
    work = args.work or Path(tempfile.mkdtemp(prefix="avi-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    seconds = args.hours * 3600
    video = work / f"long-{args.hours:g}h-{args.source}.mp4"
    t0 = time.perf_counter()
    if not video.exists():
        make_video(video, seconds, args.source, args.size, "1/5" if args.fps <= 0.2 else f"{args.fps:g}")
    make_s = time.perf_counter() - t0
    srt = work / f"long-{args.segments}.srt"
    if args.segments:
        write_srt(srt, seconds, args.segments)
    settings = Settings(home=work / "home", index_root=work / "indexes", fps=args.fps, graph_llm=False,
                        summary_llm=False, transcript="subtitles" if args.segments else "off",
                        subtitles=srt if args.segments else None)
    real = Backends(settings)
    backends = real
    if args.captioner == "clock" or args.embedder == "hash":
        from test_scale import HashEmbedder, ScaleBackends

        backends = ScaleBackends()
        backends.captioner = PaddedClock() if args.captioner == "clock" else real.captioner
        backends.embedder = real.embedder if args.embedder == "real" else HashEmbedder()
        if args.embedder == "real":
            backends.embedder_id = real.embedder_id
        if args.captioner == "perception":
            backends.captioner_id = real.captioner_id
    t0, cpu0 = time.perf_counter(), _cpu_s()
    try:
        index = ensure_index(video, settings, backends, rebuild=True, progress=True)
    finally:
        real.close()
    total, cpu = time.perf_counter() - t0, _cpu_s() - cpu0
    parts: dict[str, int] = {}
    for f in index.path.rglob("*"):
        if f.is_file():
            rel = f.relative_to(index.path)
            key = rel.parts[0] if len(rel.parts) > 1 else rel.name
            parts[key] = parts.get(key, 0) + f.stat().st_size
    size = sum(parts.values())
    stages = index.manifest["build_seconds"]
    out = {"hours": args.hours, "clips": len(index.captions), "segments": len(index.transcript),
           "captioner": args.captioner, "embedder": backends.embedder.name, "fps": args.fps, "source": args.source,
           "size": args.size, "video_seconds_to_make": round(make_s, 1),
           "seconds": {**stages, "wall": round(total, 1), "cpu": round(cpu, 1)},
           "bytes": {**parts, "total": size},
           "per_hour": {"build_s": round(total / args.hours, 1), "cpu_s": round(cpu / args.hours, 1),
                        "index_mb": round(size / 2**20 / args.hours, 2),
                        **{f"{k}_s": round(v / args.hours, 1) for k, v in stages.items()}},
           "index": str(index.path)}
    text = json.dumps(out, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
