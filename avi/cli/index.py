"""``avi index``: build, reuse or resume the index of videos or of a folder of videos."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from avi.cli.common import settings_from_args
from avi.errors import AviError, InputError
from avi.input_paths import check_input_path


def cmd_index(args) -> int:
    """Build or reuse the index of each video (files, or every video in a folder)."""
    from tqdm import tqdm

    from avi.backends import Backends
    from avi.index.build import ensure_index, video_files

    videos: list[Path] = []
    for path in args.videos:
        if check_input_path(path, "the video or folder").is_dir():
            found = video_files(path)
            if not found:
                raise InputError(f"no video files in folder {path}")
            videos += found
        else:
            videos.append(path)
    settings = settings_from_args(args)
    backends = Backends(settings)
    results, failures = [], []
    outer = tqdm(videos, desc="videos", unit="video", file=sys.stderr, disable=args.quiet or len(videos) < 2,
                 position=0, dynamic_ncols=True)
    try:
        for video in outer:
            t0 = time.perf_counter()
            try:
                index = ensure_index(video, settings, backends, rebuild=args.rebuild, progress=not args.quiet)
            except AviError as exc:
                if len(videos) == 1:
                    raise
                failures.append({"video": str(video), "error": " ".join(str(exc).split())})
                continue
            m = index.manifest
            failed = [c for c in index.captions if c.data.get("failed")]
            if failed:  # recorded in the manifest ("failed_clips"); said here so an exit 0 does not hide them
                reasons = sorted({str(c.data["failed"]) for c in failed})
                print(f"avi: warning: {video.name}: {len(failed)} of {len(index.captions)} clips failed "
                      f"({'; '.join(reasons)[:200]}): {_clip_list(failed)}", file=sys.stderr)
            results.append({"video": str(video), "index_dir": str(index.path),
                            "seconds": round(time.perf_counter() - t0, 2), **m["counts"],
                            "captioner": m["captioner"], "embedder": m["embedder"]["name"],
                            "transcript": m.get("transcript", {}).get("sources", []),
                            "pending": m.get("pending", []), "build_seconds": m["build_seconds"]})
    finally:
        backends.close()
    for r in results:
        if args.json:
            print(json.dumps(r))
        else:
            print(f"Index: {r['index_dir']}  ({Path(r['video']).name})")
            print(f"  clips {r['clips']} (failed {r['failed_clips']})  frames {r['frames']}  subjects "
                  f"{r['subjects']}  entities {r['entities']}  relations {r['relations']}  summary segments "
                  f"{r['summary_segments']}  transcript {', '.join(r['transcript']) or 'none'}")
    for f in failures:
        print(json.dumps({"video": f["video"], "error": f["error"]}) if args.json else
              f"FAILED {f['video']}: {f['error']}", file=sys.stdout if args.json else sys.stderr)
    if failures:
        raise AviError(f"{len(failures)} of {len(videos)} videos failed to index")
    return 0


def _clip_list(captions, most: int = 8) -> str:
    """``clips 1 (5.0-10.0 s), 2 (10.0-15.0 s)``, at most ``most`` named."""
    named = ", ".join(f"{c.clip_index} ({c.start_s:.1f}-{c.end_s:.1f} s)" for c in captions[:most])
    more = f" and {len(captions) - most} more" if len(captions) > most else ""
    return f"clip{'s' if len(captions) > 1 else ''} {named}{more}"
