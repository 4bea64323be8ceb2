"""Every agent tool with a ``video`` argument, for questions over several videos (issue 21; AgentCVR §3.2:
each call names its video, so every observation stays attributed to one).

* Search tools (``clip_retrieve``, ``transcript_search``, ``global_explore``, ``graph_retrieve``): without
  ``video`` they search every video's index; ``clip_retrieve`` and ``transcript_search`` rank the hits of all
  videos together by similarity (one top_k over all), the other two give one section per video.
* Tools on time ranges (the perceive tools and ``clip_merge``): ``video`` is required; times are seconds from
  the start of that video.

Every range in an observation names its video (``vtest 0:10–0:15``); :attr:`Observation.evidence` holds
``[start_s, end_s, video]`` and :attr:`Observation.data` the ``video`` of a one-video call or, for a search
over all, each row's ``video`` and ``per_video`` (name -> that video's own data).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, create_model

from avi.tools import PHASE_TOOLS, Observation, Tool
from avi.tools.retrieve.common import fit_lines, max_chars, shorten
from avi.video.timecode import fmt_range
from avi.videos.context import MultiContext
from avi.videos.naming import resolve_name

RANKED = {"clip_retrieve": "clips", "transcript_search": "segments"}
"""Search tools whose hits are ranked together over all videos -> the key of their rows in ``data``."""

SEARCH_ALL = ("clip_retrieve", "transcript_search", "global_explore", "graph_retrieve")
"""Tools that search every video when no ``video`` is given."""

_ROW_CHARS = 200  # caption or transcript characters per row of a search over all videos


class VideoTool(Tool):
    """A :class:`Tool` with a ``video`` argument naming one of the question's videos (module docstring).

    Args:
        base: the single-video tool (its schema, validation and code are reused unchanged).
        names: the question's video names, in order.

    The schema's ``video`` is a string enum of ``names``, required for tools on time ranges. A name that is not
    one of them (after :func:`avi.videos.naming.resolve_name`: any case, with its file ending, ``video 2``) gives
    an error observation listing the valid names.
    """

    def __init__(self, base: Tool, names: list[str]):
        self.base, self.fn, self.name, self.phase = base, base.fn, base.name, base.phase
        self.names = list(names)
        self.searches_all = base.name in SEARCH_ALL
        self.description = base.description
        what = ("which video to search (default: all of them, results labelled with their video)"
                if self.searches_all else "which video to look at; the time ranges are seconds of this video")
        default = None if self.searches_all else ...
        self.args_model = create_model(
            f"{base.name}_videos_args", __base__=base.args_model,
            video=(Literal[tuple(self.names)] | None if self.searches_all else Literal[tuple(self.names)],
                   Field(default, description=f"{what}; one of: {', '.join(self.names)}")))

    def run(self, ctx: MultiContext, arguments: dict | None) -> Observation:  # type: ignore[override]
        """Run the tool on the named video, or on all of them (search tools without ``video``).

        Raises:
            WeightsError: as :meth:`Tool.run` (the run must end, exit 4).
        """
        args = dict(arguments or {})
        given = args.pop("video", None)
        if given is None or (isinstance(given, str) and not given.strip()):
            if self.searches_all:
                return self._run_all(ctx, args)
            return Observation(f"Error: {self.name} looks at one video: pass video, one of: "
                               f"{', '.join(self._listed(ctx))}.", {"arguments": arguments or {}}, error=True)
        name = resolve_name(given, self.names)
        if name is None:
            return Observation(f"Error: there is no video named {str(given)[:80]!r}. The videos are: "
                               f"{', '.join(self._listed(ctx))}.", {"arguments": arguments or {}}, error=True)
        return self._run_one(ctx, name, args)

    def _listed(self, ctx: MultiContext) -> list[str]:
        return [f"{n} ({d:.1f}s)" for n, d in ctx.durations().items()]

    def _run_one(self, ctx: MultiContext, name: str, args: dict) -> Observation:
        sub = ctx.sub(name)
        obs = self.base.run(sub, args)
        ctx.settle(sub)
        obs.text = f"Video {name}: {obs.text}"
        obs.data = {**obs.data, "video": name}
        obs.evidence = [[float(s), float(e), name] for s, e, *_ in obs.evidence]
        return obs

    def _run_all(self, ctx: MultiContext, args: dict) -> Observation:
        runs = {n: self._run_one(ctx, n, dict(args)) for n in ctx.names}
        ok = {n: o for n, o in runs.items() if not o.error}
        if not ok:
            return Observation("\n".join(o.text for o in runs.values()), {"per_video": {
                n: o.data for n, o in runs.items()}}, error=True)
        failed = [f"{n}: {o.text.split(': ', 2)[-1][:160]}" for n, o in runs.items() if o.error]
        data = {"query": args.get("query"), "videos": list(ok), "per_video": {n: o.data for n, o in ok.items()}}
        key = RANKED.get(self.name)
        text = _ranked_text(self.name, key, ok, args, data, max_chars(ctx)) if key else \
            _sections_text(ok, max_chars(ctx))
        if failed:
            text += "\nNot searched: " + "; ".join(failed)
        evidence = [ev for o in ok.values() for ev in o.evidence]
        return Observation(text, data, evidence=evidence, notes=[x for o in ok.values() for x in o.notes])


def _ranked_text(tool: str, key: str, runs: dict[str, Observation], args: dict, data: dict, limit: int) -> str:
    """One list of the best hits of all videos (by similarity, one top_k), shown by video and time."""
    rows = [{**r, "video": n} for n, o in runs.items() for r in o.data.get(key) or []]
    rows.sort(key=lambda r: -float(r.get("similarity") or 0.0))
    top_k = int(args.get("top_k") or (16 if tool == "clip_retrieve" else 8))
    rows = rows[:top_k]
    for n, o in runs.items():  # each video's evidence: its ranges among the hits kept
        o.evidence = [[float(r["start_s"]), float(r["end_s"]), n] for r in rows if r["video"] == n]
    data[key] = rows
    order = {n: i for i, n in enumerate(runs)}
    shown = sorted(rows, key=lambda r: (order[r["video"]], float(r["start_s"])))
    what = "clips" if key == "clips" else "transcript lines"
    header = (f'{len(rows)} {what} of all videos most similar to "{args.get("query", "")}", ranked together '
              f"(grouped by video, in time order; each range is seconds of its own video):")
    lines = [f"{r['video']} {fmt_range(float(r['start_s']), float(r['end_s']))} sim {float(r['similarity']):.2f}: "
             f"{shorten(r.get('caption') or r.get('text') or '', _ROW_CHARS)}" for r in shown]
    tail = ["Most similar first: " + ", ".join(
        f"{r['video']} {fmt_range(float(r['start_s']), float(r['end_s']))}" for r in rows[:3])] if rows else []
    none = [n for n in runs if not any(r["video"] == n for r in rows)]
    if none:
        tail.append("No hit among the best in: " + ", ".join(none))
    return fit_lines([header] + lines, limit, tail)


def _sections_text(runs: dict[str, Observation], limit: int) -> str:
    """One section per video, each cut to an equal share of the observation size."""
    share = max(200, limit // max(1, len(runs)))
    parts = []
    for o in runs.values():
        text = o.text
        parts.append(text if len(text) <= share else text[:share - 20] + " …(cut)")
    return "\n\n".join(parts)


def video_tools(names: list[str]) -> dict[str, VideoTool]:
    """Every tool of :data:`avi.tools.PHASE_TOOLS` as a :class:`VideoTool` over ``names``, by tool name."""
    return {t.name: VideoTool(t, names) for tools in PHASE_TOOLS.values() for t in tools}
