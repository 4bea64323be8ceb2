"""``avi tool NAME``: run one agent tool on a video, outside the agent."""

from __future__ import annotations

import json
import sys

from avi.cli.common import settings_from_args
from avi.errors import InputError


def cmd_tool(args) -> int:
    """Run one agent tool on a video, outside the agent (the same code path the agent calls)."""
    from avi.tools import ALL_TOOLS, PHASE_TOOLS, TIMELINE_TOOLS
    from avi.tools.tree_search import tree_search

    if args.name == "list":
        for phase, tools in PHASE_TOOLS.items():
            for t in tools:
                print(f"{phase:9s} {t.signature_line()}\n          {t.description}")
        for t in TIMELINE_TOOLS:
            print(f"{'perceive':9s} {t.signature_line()}\n          {t.description} (perceive_strategy = timeline)")
        print(f"{'host':9s} {tree_search.signature_line()}\n          {tree_search.description} "
              f"(perceive_strategy = tree)")
        return 0
    tools = {**ALL_TOOLS, tree_search.name: tree_search}
    tool = tools.get(args.name)
    if tool is None:
        raise InputError(f"no tool named '{args.name}'; tools: {', '.join(tools)} (or `avi tool list`)")
    if args.video is None:
        raise InputError("--video is required")
    try:
        arguments = json.loads(args.args) if args.args else {}
    except json.JSONDecodeError as exc:
        raise InputError(f"--args is not valid JSON ({exc.msg} at character {exc.pos}): {args.args[:200]}") from None
    except RecursionError:
        raise InputError(f"--args is nested too deeply ({len(args.args)} characters; a tool's arguments are a "
                         f"JSON object a few levels deep)") from None
    if not isinstance(arguments, dict):
        raise InputError('--args must be a JSON object, e.g. \'{"time_ranges": [[0, 5]]}\'')
    problem = tool.check_arguments(arguments)
    if problem:  # refused before the video is probed or its index opened
        raise InputError(" ".join(problem.removeprefix("Error: ").split()))

    from avi.backends import Backends
    from avi.index.build import ensure_index_for
    from avi.tools import ToolContext
    from avi.video.decode import VideoReader, probe

    settings = settings_from_args(args)
    backends = Backends(settings)
    try:
        info = probe(args.video)
        # as avi-run: the LLM stages wait until a tool needs one (graph_retrieve, global_explore build theirs)
        stages = "search" if settings.index_llm_stages == "after" else "all"
        index = ensure_index_for(info, settings, backends, progress=not args.quiet, stages=stages)
        ctx = ToolContext(settings=settings, index=index, video=VideoReader(info, settings.max_side),
                          backends=backends)
        obs = tool.run(ctx, arguments)
    finally:
        backends.close()
    if args.json:
        print(json.dumps({"tool": tool.name, "arguments": arguments, "error": obs.error, "text": obs.text,
                          "frames": len(obs.frames_s), "frames_s": obs.frames_s, "evidence": obs.evidence,
                          "notes": obs.notes, "data": obs.data}, ensure_ascii=False, default=str))
    elif obs.error:
        print(f"avi: error: {' '.join(obs.text.split())}", file=sys.stderr)
    else:
        if (obs.data.get("index_stage") or {}).get("built") and not args.quiet:  # the wait was this call's
            print(f"avi: {obs.data['index_stage']['note']}", file=sys.stderr)
        print(obs.text)
    return 2 if obs.error else 0
