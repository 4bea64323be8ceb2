"""``avi view`` for a trace over several videos (issue 21): the page of :mod:`avi.viewer` with one timeline row
per video (the ranges each tool call asked for in that video, the frames it looked at there, the evidence found
there; x is seconds from that video's start, on the scale of the longest video) and the thumbnails grouped by
video. Self-contained like the single-video page (inline CSS and SVG, JPEG ``data:`` URIs, no scripts)."""

from __future__ import annotations

import json
from pathlib import Path

from avi.trace_values import as_dict, as_float, as_list
from avi.viewer import (
    CSS,
    EVIDENCE_COLOUR,
    OTHER_COLOUR,
    PHASE_COLOURS,
    argument_ranges,
    as_num,
    esc,
    fmt_t,
    kv_table,
    nice_step,
    step_frames,
    step_html,
    thumbnails,
    trace_steps,
    trace_totals,
)


def is_multi(trace: dict) -> bool:
    """Whether ``trace`` is a question over several videos (its ``videos`` lists two or more)."""
    return isinstance(trace.get("videos"), list) and len(trace["videos"]) >= 2


def step_video(step: dict) -> str | None:
    """The video a step looked at: its ``video`` argument, else its observation's (None for a search over all
    videos, a stage switch or an answer)."""
    args = step.get("arguments") if isinstance(step.get("arguments"), dict) else {}
    data = step.get("observation_data") if isinstance(step.get("observation_data"), dict) else {}
    video = args.get("video") or data.get("video")
    return str(video) if video else None


def labelled_evidence(trace: dict) -> list[tuple[str, float, float]]:
    """The trace's evidence as ``(video, start_s, end_s)``; ranges without a valid video name are left out."""
    out = []
    for r in trace.get("evidence") or []:
        if isinstance(r, (list, tuple)) and len(r) >= 3:
            a, b = as_num(r[0]), as_num(r[1])
            if a is not None and b is not None:
                out.append((str(r[2]), min(a, b), max(a, b)))
    return out


def videos_timeline_svg(trace: dict, width: int = 1100) -> str:
    """One row per video: requested ranges (phase colour, translucent), frames looked at (ticks) and, in the
    lower half of the row, the evidence ranges; x is seconds over ``[0, longest duration]``."""
    videos = [v for v in trace.get("videos") or [] if isinstance(v, dict)]
    label_w, row_h, top, pad_r = 190, 34, 28, 24
    plot_w = width - label_w - pad_r
    dur = max([as_float(v.get("duration_s")) for v in videos] + [1e-3])
    height = top + len(videos) * row_h + 8

    def x(t: float) -> float:
        return label_w + plot_w * min(max(t, 0.0), dur) / dur

    parts = [f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="one timeline row per video, 0 to {dur:.1f} s">']
    t, step = 0.0, nice_step(dur)
    while t <= dur + 1e-9:
        parts.append(f'<line x1="{x(t):.1f}" y1="{top - 6}" x2="{x(t):.1f}" y2="{height - 6}" class="grid"/>'
                     f'<text x="{x(t):.1f}" y="{top - 10}" class="tick">{esc(fmt_t(t))}</text>')
        t += step
    evidence = labelled_evidence(trace)
    y = top
    for v in videos:
        name, vd = str(v.get("name")), as_float(v.get("duration_s"))
        parts.append(f'<text x="4" y="{y + 20}" class="rowlabel">{esc(name[:24])}<title>{esc(v.get("path"))} '
                     f'({vd:.1f} s)</title></text>'
                     f'<rect x="{label_w}" y="{y + 2}" width="{x(vd) - label_w:.1f}" height="{row_h - 4}" class="lane"/>')
        for s in trace_steps(trace):
            if step_video(s) != name or not s.get("tool"):
                continue
            colour, idx = PHASE_COLOURS.get(s.get("phase"), OTHER_COLOUR), s.get("index", "?")
            for a, b in argument_ranges(s.get("arguments")):
                parts.append(f'<a href="#step-{esc(idx)}"><rect x="{x(a):.1f}" y="{y + 3}" '
                             f'width="{max(x(b) - x(a), 2.0):.1f}" height="{row_h // 2 - 3}" fill="{colour}" '
                             f'fill-opacity="0.3" stroke="{colour}"><title>#{esc(idx)} {esc(s.get("tool"))} in '
                             f'{esc(name)}: {a:.1f}s–{b:.1f}s requested</title></rect></a>')
            for f in step_frames(s):
                parts.append(f'<line x1="{x(f):.1f}" y1="{y + 3}" x2="{x(f):.1f}" y2="{y + row_h // 2}" '
                             f'stroke="{colour}" stroke-width="2"><title>#{esc(idx)} looked at {esc(name)} '
                             f'{f:.2f}s</title></line>')
        for video, a, b in evidence:
            if video == name:
                parts.append(f'<rect x="{x(a):.1f}" y="{y + row_h // 2 + 1}" width="{max(x(b) - x(a), 3.0):.1f}" '
                             f'height="{row_h // 2 - 4}" fill="{EVIDENCE_COLOUR}"><title>evidence in {esc(name)}: '
                             f'{a:.1f}s–{b:.1f}s</title></rect>')
        y += row_h
    parts.append("</svg>")
    return "".join(parts)


def render_videos_html(trace: dict, out: Path, max_thumbs: int = 48) -> Path:
    """Write the page for a trace over several videos (:func:`is_multi`) and return its path.

    Thumbnails come from each video's ``path`` in the trace, ``max_thumbs`` shared equally by the videos; a video
    that cannot be read is named in a note and the rest of the page is shown.
    """
    out = Path(out)
    videos = [v for v in trace.get("videos") or [] if isinstance(v, dict)]
    steps, totals, notes, figures = trace_steps(trace), trace_totals(trace), [], []
    per = max(1, max_thumbs // max(1, len(videos))) if max_thumbs else 0
    for v in videos:
        name = str(v.get("name"))
        own = {"steps": [s for s in steps if step_video(s) == name], "settings": trace.get("settings") or {}}
        try:
            thumbs = thumbnails(own, Path(str(v.get("path"))), max_thumbs=per) if per else []
        except Exception as exc:  # noqa: BLE001 - the page is still useful without this video's thumbnails
            notes.append(f"Thumbnails of {name} unavailable: cannot read {v.get('path')} "
                         f"({' '.join(str(exc).split())[:200] or type(exc).__name__}).")
            continue
        for t in thumbs:
            steps_txt = ", ".join(f"#{i}" for i in t["steps"])
            figures.append(f'<figure><img src="{t["data_uri"]}" alt="{esc(name)} at {t["t_s"]:.2f} s"><figcaption>'
                           f"{esc(name)} {esc(fmt_t(t['t_s']))} ({t['t_s']:.2f} s) · steps {esc(steps_txt)}"
                           + (f" · {t['boxes']} boxes" if t["boxes"] else "") + "</figcaption></figure>")
    evidence = ", ".join(f"{v} {a:.1f} s – {b:.1f} s" for v, a, b in labelled_evidence(trace))
    ans_rows = [("answer videos", ", ".join(map(str, as_list(trace.get("answer_videos")))) or None),
                ("order", " → ".join(map(str, as_list(trace.get("order")))) or None), ("evidence", evidence or None),
                ("forced answer", "yes (iteration limit reached)" if trace.get("forced") else None)]
    llm = as_dict(trace.get("llm"))
    video_rows = [(str(v.get("name")), f"{as_float(v.get('duration_s')):.1f} s · {v.get('path')} · index "
                   f"{v.get('index_dir')}") for v in videos]
    info_rows = [("profile", trace.get("profile")), ("model", llm.get("model")), ("started", trace.get("started")),
                 ("iterations", trace.get("iterations")), ("prompts sha256", trace.get("prompts_sha256")),
                 ("settings", json.dumps(trace.get("settings"), ensure_ascii=False, default=str)
                  if trace.get("settings") else None)]
    tokens = totals["prompt_tokens"] + totals["completion_tokens"]
    boxes = [("videos", len(videos)), ("steps", len(steps)), ("tool calls", totals.get("tool_calls")),
             ("frames looked at", totals.get("frames_spent")), ("tokens", tokens),
             *[(f"{k} seconds", v) for k, v in as_dict(trace.get("seconds")).items()]]
    legend = "".join(f'<span><i style="background:{c}"></i>{esc(p)}</span>'
                     for p, c in [*PHASE_COLOURS.items(), ("evidence", EVIDENCE_COLOUR)])
    answer = trace.get("answer")
    html = [
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>",
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
        "style-src 'unsafe-inline'\">",
        "<meta name=viewport content=\"width=device-width, initial-scale=1\">",
        f"<title>avi trace: {esc(str(trace.get('question') or '')[:80])}</title><style>{CSS}</style></head><body>",
        f"<h1>avi trace over {len(videos)} videos</h1>",
        f"<div class=q>{esc(trace.get('question') or '(no question)')}</div>",
        f"<div class=ans>Answer: <b>{esc(answer if answer is not None else '(no answer)')}</b></div>",
        kv_table(ans_rows),
        "<div class=totals>" + "".join(f"<div>{esc(k)}<b>{esc(v)}</b></div>" for k, v in boxes) + "</div>",
        "<h2>Timeline, one row per video</h2>",
        f"<div class=legend>{legend} <span>upper half: requested ranges and frames looked at; lower half: "
        f"evidence; seconds from each video's start</span></div>",
        videos_timeline_svg(trace),
        f"<h2>Steps ({len(steps)})</h2>",
        "".join(step_html(s, set()) for s in steps) or "<p>No steps.</p>",
        f"<h2>Frames looked at ({len(figures)} shown)</h2>",
        "".join(f"<p class=note>{esc(n)}</p>" for n in notes),
        ("<div class=thumbs>" + "".join(figures) + "</div>") if figures else "",
        "<h2>Videos</h2>", kv_table(video_rows), "<h2>Run</h2>", kv_table(info_rows),
        "</body></html>\n",
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(html), encoding="utf-8")
    return out
