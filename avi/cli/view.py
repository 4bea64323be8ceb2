"""``avi view``: a self-contained HTML page for a JSON trace."""

from __future__ import annotations

from avi.errors import InputError


def cmd_view(args) -> int:
    """Write a self-contained HTML page for a JSON trace and print its path."""
    from avi.viewer import load_trace, render_trace_html

    if args.max_thumbs < 0:
        raise InputError("--max-thumbs must be 0 or more")
    trace = load_trace(args.trace)
    out = args.out or args.trace.with_suffix(".html")
    if out.resolve() == args.trace.resolve():
        raise InputError(f"--out would overwrite the trace itself: {out}")
    from avi.videos.view import is_multi, render_videos_html

    if is_multi(trace):  # a question over several videos: one timeline row per video; --video is not needed
        if args.video:
            raise InputError("--video names one video; a trace over several videos names each of its videos")
        print(render_videos_html(trace, out, max_thumbs=args.max_thumbs))
        return 0
    print(render_trace_html(trace, out, video=args.video, max_thumbs=args.max_thumbs))
    return 0
