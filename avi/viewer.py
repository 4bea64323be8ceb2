"""``avi view``: one self-contained HTML page for a JSON trace (see :mod:`avi.trace`).

The page needs nothing but a browser: inline CSS, no scripts, no fonts, no
remote resources (a Content-Security-Policy forbids any), thumbnails embedded
as base64 JPEG ``data:`` URIs. It shows the question and answer, the totals, a
timeline of the video (inline SVG, seconds on the x axis) with one row per tool
call, every step in order, and thumbnails of the frames the tools looked at
with the detection and OCR boxes drawn on them.

Every string that comes from the trace (model output included) is escaped with
:func:`html.escape`.
"""

from __future__ import annotations

import base64
import io
import json
import math
from html import escape
from pathlib import Path

from avi.trace_values import (
    argument_ranges,
    as_dict,
    as_float,
    as_int,
    as_num,
    pair,
    step_frames,
    trace_steps,
    trace_totals,
)

__all__ = ["argument_ranges", "as_num", "render_trace_html", "load_trace", "step_frames", "trace_steps",
           "trace_totals"]

PHASE_COLOURS = {"retrieve": "#3b6fd4", "perceive": "#e07b16", "review": "#2e9d4f"}
"""Fill colour of each agent phase on the timeline and on step headers."""
OTHER_COLOUR = "#888888"
EVIDENCE_COLOUR = "#c0267d"
INTERVAL_COLOUR = "#6a3fc1"
THUMB_SIDE = 320
"""Long side of the embedded thumbnails in pixels."""


def esc(value) -> str:
    """Escape anything for HTML text or a quoted attribute."""
    return escape("" if value is None else str(value), quote=True)


def fmt_t(t_s: float) -> str:
    """``m:ss.s`` for a time in seconds."""
    m, s = divmod(max(0.0, t_s), 60)
    return f"{int(m)}:{s:04.1f}"


# ------------------------------------------------------------------ timeline


def nice_step(duration_s: float, target_ticks: int = 10) -> float:
    raw = max(duration_s, 1e-3) / target_ticks
    for step in (0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200):
        if step >= raw:
            return step
    return 3600 * math.ceil(raw / 3600)


def timeline_svg(trace: dict, duration_s: float, width: int = 1100) -> str:
    """The video timeline as inline SVG: x is time in seconds over ``[0, duration_s]``.

    One row per tool call: the argument time ranges as translucent bars and the
    frames the tool looked at (``frames_s``) as ticks, coloured by phase; the row
    links to its step. Then a row for the trace's evidence ranges and, if given,
    one for the answer interval.
    """
    calls = [s for s in trace_steps(trace) if s.get("tool")]
    label_w, row_h, top, pad_r = 190, 22, 28, 24
    plot_w = width - label_w - pad_r
    interval = pair(trace.get("interval"))
    rows = len(calls) + 1 + (1 if interval else 0)
    height = top + rows * row_h + 8
    dur = max(duration_s, 1e-3)

    def x(t: float) -> float:
        return label_w + plot_w * min(max(t, 0.0), dur) / dur

    parts = [f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="timeline of the video, 0 to {dur:.1f} s">']
    step = nice_step(dur)
    t = 0.0
    while t <= dur + 1e-9:
        xx = x(t)
        parts.append(f'<line x1="{xx:.1f}" y1="{top - 6}" x2="{xx:.1f}" y2="{height - 6}" class="grid"/>'
                     f'<text x="{xx:.1f}" y="{top - 10}" class="tick">{esc(fmt_t(t))}</text>')
        t += step
    y = top
    for s in calls:
        colour = PHASE_COLOURS.get(s.get("phase"), OTHER_COLOUR)
        idx = s.get("index", "?")
        label = f"#{idx} {s.get('tool')}" + (" (error)" if s.get("error") else "")
        parts.append(f'<a href="#step-{esc(idx)}"><text x="4" y="{y + 15}" class="rowlabel">{esc(label[:28])}'
                     f'<title>{esc(label)} ({esc(s.get("phase"))})</title></text></a>')
        parts.append(f'<rect x="{label_w}" y="{y + 2}" width="{plot_w}" height="{row_h - 4}" class="lane"/>')
        for a, b in argument_ranges(s.get("arguments")):
            w = max(x(b) - x(a), 2.0)
            parts.append(f'<rect x="{x(a):.1f}" y="{y + 3}" width="{w:.1f}" height="{row_h - 6}" fill="{colour}" '
                         f'fill-opacity="0.3" stroke="{colour}"><title>#{esc(idx)} {esc(s.get("tool"))}: '
                         f'{a:.1f}s–{b:.1f}s requested</title></rect>')
        for f in step_frames(s):
            parts.append(f'<line x1="{x(f):.1f}" y1="{y + 3}" x2="{x(f):.1f}" y2="{y + row_h - 3}" '
                         f'stroke="{colour}" stroke-width="2"><title>#{esc(idx)} looked at {f:.2f}s</title></line>')
        y += row_h

    def range_row(label: str, ranges: list[list[float]], colour: str) -> None:
        nonlocal y
        parts.append(f'<text x="4" y="{y + 15}" class="rowlabel">{esc(label)}</text>'
                     f'<rect x="{label_w}" y="{y + 2}" width="{plot_w}" height="{row_h - 4}" class="lane"/>')
        for a, b in ranges:
            w = max(x(b) - x(a), 3.0)
            parts.append(f'<rect x="{x(a) - (1.5 if b - a < 1e-9 else 0):.1f}" y="{y + 3}" width="{w:.1f}" '
                         f'height="{row_h - 6}" fill="{colour}"><title>{esc(label)}: {a:.1f}s–{b:.1f}s</title></rect>')
        y += row_h

    evidence = [p for p in (pair(v) for v in (trace.get("evidence") or [])) if p is not None]
    range_row("evidence", evidence, EVIDENCE_COLOUR)
    if interval:
        range_row("answer interval", [interval], INTERVAL_COLOUR)
    parts.append("</svg>")
    return "".join(parts)


# ------------------------------------------------------------------ thumbnails


def _overlays(trace: dict) -> dict[float, list[dict]]:
    """Boxes to draw, by frame time rounded to 1 ms: ``{t_s: [{kind, label, box, frame_size}]}``.

    Detection boxes come from ``observation_data.detections`` (pixel xyxy in a
    frame of ``frame_size`` (width, height)); OCR boxes from
    ``observation_data.lines`` (pixel xyxy of the analysed frame, size unknown:
    the caller assumes the video resized to the settings' ``max_side``).
    """
    out: dict[float, list[dict]] = {}
    for s in trace_steps(trace):
        data = s.get("observation_data")
        if not isinstance(data, dict):
            continue
        for d in data.get("detections") or []:
            if not isinstance(d, dict) or as_num(d.get("t_s")) is None:
                continue
            box = d.get("box")
            if not (isinstance(box, list) and len(box) == 4 and all(as_num(v) is not None for v in box)):
                continue
            score = as_num(d.get("score"))
            label = str(d.get("label", "")) + (f" {score:.2f}" if score is not None else "")
            size = d.get("frame_size")
            ok = isinstance(size, (list, tuple)) and len(size) == 2 and all((as_num(v) or 0) > 0 for v in size)
            size = [float(size[0]), float(size[1])] if ok else None
            out.setdefault(round(float(d["t_s"]), 3), []).append(
                {"kind": "det", "label": label, "box": [float(v) for v in box], "frame_size": size})
        for ln in data.get("lines") or []:
            if not isinstance(ln, dict) or as_num(ln.get("t_s")) is None:
                continue
            box = ln.get("box")
            if not (isinstance(box, list) and len(box) == 4 and all(as_num(v) is not None for v in box)):
                continue
            out.setdefault(round(float(ln["t_s"]), 3), []).append(
                {"kind": "ocr", "label": str(ln.get("text", "")), "box": [float(v) for v in box], "frame_size": None})
    return out


def thin_uniform(times: list[float], n: int) -> list[float]:
    """At most ``n`` of the sorted ``times`` (seconds), evenly spread, first and last kept."""
    if n <= 0:
        return []
    if len(times) <= n:
        return list(times)
    if n == 1:
        return [times[len(times) // 2]]
    return [times[round(i * (len(times) - 1) / (n - 1))] for i in range(n)]


def _draw(image, items: list[dict], analysed_size: tuple[float, float]):
    """Draw boxes on a PIL image; boxes are pixel xyxy of a frame of ``analysed_size`` (w, h)."""
    from PIL import ImageDraw

    draw = ImageDraw.Draw(image)
    tw, th = image.size
    for it in items:
        aw, ah = it["frame_size"] or analysed_size
        sx, sy = tw / max(aw, 1.0), th / max(ah, 1.0)
        x1, y1, x2, y2 = it["box"]
        box = [x1 * sx, y1 * sy, max(x2 * sx, x1 * sx + 1), max(y2 * sy, y1 * sy + 1)]
        colour = (255, 40, 40) if it["kind"] == "det" else (255, 220, 0)
        draw.rectangle(box, outline=colour, width=2)
        label = it["label"][:40]
        if label:
            ty = box[1] - 11 if box[1] >= 11 else box[3] + 1
            tl = draw.textbbox((box[0], ty), label)
            draw.rectangle(tl, fill=(0, 0, 0))
            draw.text((box[0], ty), label, fill=colour)
    return image


def thumbnails(trace: dict, video: Path, max_thumbs: int = 48, side: int = THUMB_SIDE) -> list[dict]:
    """Decode, annotate and JPEG-encode the frames the trace looked at.

    Args:
        trace: the trace as a dict.
        video: the video file.
        max_thumbs: at most this many frames, thinned uniformly over the distinct ``frames_s``.
        side: long side of each thumbnail in pixels.

    Returns:
        ``[{"t_s", "frame_t_s", "data_uri", "steps": [step index, ...], "boxes": int}]``.

    Raises:
        avi.errors.InputError (or a PyAV error): the video cannot be read.
    """
    from PIL import Image

    from avi.video.decode import VideoReader, probe, target_size

    info = probe(video)
    times = sorted({round(min(max(0.0, t), info.duration_s), 3) for s in trace_steps(trace) for t in step_frames(s)})
    times = thin_uniform(times, max_thumbs)
    if not times:
        return []
    settings = trace.get("settings") if isinstance(trace.get("settings"), dict) else {}
    max_side = as_int(settings.get("max_side"), 1280) or 1280
    analysed = target_size(info.width, info.height, max_side)
    overlays = _overlays(trace)
    by_time: dict[float, list[int]] = {}
    for s in trace_steps(trace):
        for t in step_frames(s):
            by_time.setdefault(round(min(max(0.0, t), info.duration_s), 3), []).append(s.get("index"))
    frames = VideoReader(info, max_side=side, cache_size=4).frames_at(times)
    out = []
    for t, frame in zip(times, frames):
        image = Image.fromarray(frame.image)
        items = overlays.get(t, []) or overlays.get(round(frame.t_s, 3), [])
        if items:
            _draw(image, items, (float(analysed[0]), float(analysed[1])))
        buf = io.BytesIO()
        image.save(buf, format="JPEG", quality=80, subsampling=0)  # 4:4:4 keeps thin box lines sharp
        out.append({"t_s": t, "frame_t_s": frame.t_s, "steps": sorted(set(by_time.get(t, [])), key=str),
                    "boxes": len(items),
                    "data_uri": "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")})
    return out


# ------------------------------------------------------------------ page

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1140px;padding:16px;
color:#1d1d1f;background:#fafafa}
h1{font-size:20px;margin:0 0 8px}h2{font-size:17px;margin:24px 0 8px;border-bottom:1px solid #ddd}
.q{font-size:18px;font-weight:600;background:#fff;border:1px solid #ddd;border-radius:6px;padding:10px 12px}
.ans{font-size:18px;background:#eef8f0;border:1px solid #9fd3ad;border-radius:6px;padding:10px 12px;margin-top:8px}
table.kv{border-collapse:collapse;margin-top:8px}table.kv td{padding:2px 12px 2px 0;vertical-align:top}
table.kv td:first-child{color:#666}
.totals{display:flex;flex-wrap:wrap;gap:8px;margin-top:10px}
.totals div{background:#fff;border:1px solid #ddd;border-radius:6px;padding:6px 10px}
.totals b{display:block;font-size:18px}
svg.timeline{background:#fff;border:1px solid #ddd;border-radius:6px;max-width:100%;height:auto}
svg .grid{stroke:#e4e4e4}svg .tick{font-size:10px;fill:#666;text-anchor:middle}
svg .rowlabel{font-size:11px;fill:#333;font-family:ui-monospace,monospace}svg .lane{fill:#f3f3f3}
.legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:12px;height:12px;
margin-right:4px;vertical-align:-2px;border-radius:2px}
.step{background:#fff;border:1px solid #ddd;border-left:6px solid #888;border-radius:6px;margin:10px 0;padding:8px 12px}
.step h3{font-size:14px;margin:0 0 6px}.step .meta{color:#666;font-size:12px}
pre{white-space:pre-wrap;word-break:break-word;background:#f5f5f7;border-radius:4px;padding:6px 8px;margin:4px 0;
font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}
.lbl{font-size:11px;color:#666;text-transform:uppercase;letter-spacing:.04em;margin-top:6px}
.err{color:#b00020;font-weight:600}
.thumbs{display:flex;flex-wrap:wrap;gap:10px}
.thumbs figure{margin:0;background:#fff;border:1px solid #ddd;border-radius:6px;padding:4px}
.thumbs img{display:block;max-width:320px}.thumbs figcaption{font-size:12px;color:#444;padding-top:3px}
.note{background:#fff8e1;border:1px solid #f0d98c;border-radius:6px;padding:8px 12px}
"""


def kv_table(rows: list[tuple[str, object]]) -> str:
    return "<table class=kv>" + "".join(f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in rows
                                        if v not in (None, "", [], {})) + "</table>"


def step_html(s: dict, thumb_times: set[float]) -> str:
    phase = s.get("phase") or ""
    colour = PHASE_COLOURS.get(phase, OTHER_COLOUR)
    idx = s.get("index", "?")
    title = f"#{idx} · {phase} · {s.get('kind') or ''}" + (f" · {s['tool']}" if s.get("tool") else "")
    meta = (f"iteration {s.get('iteration', '?')} · LLM {as_float(s.get('llm_seconds')):.2f} s · tool "
            f"{as_float(s.get('tool_seconds')):.2f} s · tokens {as_int(s.get('prompt_tokens'))} prompt + "
            f"{as_int(s.get('completion_tokens'))} completion")
    parts = [f'<section class="step" id="step-{esc(idx)}" style="border-left-color:{colour}">'
             f"<h3>{esc(title)}</h3><div class=meta>{esc(meta)}</div>"]
    if s.get("thought"):
        parts.append(f"<div class=lbl>thought</div><pre>{esc(s['thought'])}</pre>")
    if s.get("content") and s.get("content") != s.get("thought"):
        parts.append(f"<details><summary class=lbl>raw model reply</summary><pre>{esc(s['content'])}</pre></details>")
    if s.get("arguments") is not None:
        args = json.dumps(s["arguments"], ensure_ascii=False, default=str)
        if len(args) > 100:
            args = json.dumps(s["arguments"], indent=1, ensure_ascii=False, default=str)
        parts.append(f"<div class=lbl>arguments</div><pre>{esc(args)}</pre>")
    if s.get("observation") is not None:
        err = " <span class=err>(error)</span>" if s.get("error") else ""
        parts.append(f"<div class=lbl>observation{err}</div><pre>{esc(s['observation'])}</pre>")
    if s.get("switch_to"):
        parts.append(f"<div class=lbl>switch to</div><div>{esc(s['switch_to'])}</div>")
    if s.get("answer") is not None:
        parts.append(f"<div class=lbl>answer</div><pre>{esc(s['answer'])}</pre>")
    frames = step_frames(s)
    if frames:
        links = ", ".join(f'<a href="#frame-{t:.3f}">{t:.2f}s</a>' if round(t, 3) in thumb_times else f"{t:.2f}s"
                          for t in frames)
        parts.append(f"<div class=lbl>frames looked at ({len(frames)})</div><div>{links}</div>")
    notes = [n for n in (s.get("notes") or []) if n]
    if notes:
        parts.append("<div class=lbl>notes</div><ul>" + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>")
    parts.append("</section>")
    return "".join(parts)


def memory_html(memory: dict) -> str:
    """The perception-memory route of a trace (issue 53): the route and why, the typed query, the measured value
    and the rows it rests on; "" when the trace has none."""
    if not isinstance(memory, dict) or not memory.get("route"):
        return ""
    parse = memory.get("parse") if isinstance(memory.get("parse"), dict) else {}
    result = memory.get("result") if isinstance(memory.get("result"), dict) else {}
    rows = [("route", f"{memory.get('route')} ({memory.get('reason', '')})"), ("memory", memory.get("memory")),
            ("query", json.dumps(parse.get("query"), ensure_ascii=False, default=str) if parse.get("query") else
             parse.get("error")),
            ("measured", json.dumps(result.get("value"), ensure_ascii=False, default=str) if result else None),
            ("covered", result.get("covered") if result else None), ("why", result.get("why") if result else None)]
    table = result.get("rows") if isinstance(result.get("rows"), list) else []
    shown = json.dumps(table[:12], indent=1, ensure_ascii=False, default=str) if table else ""
    return ("<h2>Perception memory</h2>" + kv_table(rows)
            + (f"<details><summary class=lbl>rows the value rests on ({len(table)})</summary><pre>{esc(shown)}</pre>"
               "</details>" if shown else ""))


def _duration(trace: dict, video_duration_s: float | None) -> float:
    if video_duration_s:
        return video_duration_s
    ts = [t for s in trace_steps(trace) for t in step_frames(s)]
    ts += [v for s in trace_steps(trace) for r in argument_ranges(s.get("arguments")) for v in r]
    ts += [v for r in (trace.get("evidence") or []) for v in (pair(r) or [])]
    ts += pair(trace.get("interval")) or []
    return max(ts + [1.0]) * 1.05


def render_trace_html(trace: dict, out: Path, video: Path | None = None, max_thumbs: int = 48) -> Path:
    """Write one self-contained HTML page for a trace and return its path.

    Args:
        trace: the JSON trace as a dict (``Trace.to_dict()`` or the file's content).
        out: the HTML file to write (parent folders are created).
        video: the video file for the thumbnails (default: the trace's ``video``).
            When it is missing or unreadable the page says thumbnails are
            unavailable and shows everything else.
        max_thumbs: at most this many thumbnails (long side 320 px), thinned
            uniformly over the distinct frame times (seconds) in ``frames_s``.
    """
    out = Path(out)
    video_path = Path(video) if video else (Path(str(trace["video"])) if trace.get("video") else None)
    thumbs: list[dict] = []
    thumb_note = ""
    duration_s = None
    if video_path is None:
        thumb_note = "Thumbnails unavailable: the trace names no video file (use --video)."
    else:
        try:
            from avi.video.decode import probe

            duration_s = probe(video_path).duration_s
            thumbs = thumbnails(trace, video_path, max_thumbs=max_thumbs)
            if not thumbs:
                thumb_note = "No frames were looked at by any tool."
        except Exception as exc:  # noqa: BLE001 - the page is still useful without thumbnails
            thumb_note = (f"Thumbnails unavailable: cannot read the video {video_path} "
                          f"({' '.join(str(exc).split())[:300] or type(exc).__name__}).")
    duration = _duration(trace, duration_s)
    totals = trace_totals(trace)
    steps = trace_steps(trace)
    llm = as_dict(trace.get("llm"))
    seconds = as_dict(trace.get("seconds"))

    answer = trace.get("answer")
    interval = pair(trace.get("interval"))
    evidence = [p for p in (pair(v) for v in (trace.get("evidence") or [])) if p is not None]
    ans_rows = [("choice", trace.get("choice")),
                ("interval", f"{interval[0]:.1f} s – {interval[1]:.1f} s" if interval else None),
                ("evidence", ", ".join(f"{a:.1f} s – {b:.1f} s" for a, b in evidence) or None),
                ("forced answer", "yes (iteration limit reached)" if trace.get("forced") else None)]
    info_rows = [("video", trace.get("video")), ("video sha256", trace.get("video_sha256")),
                 ("video duration", f"{duration_s:.1f} s" if duration_s else None),
                 ("profile", trace.get("profile")), ("model", llm.get("model")), ("LLM endpoint", llm.get("base_url")),
                 ("started", trace.get("started")), ("iterations", trace.get("iterations")),
                 ("index", trace.get("index_dir")), ("prompts sha256", trace.get("prompts_sha256")),
                 ("settings", json.dumps(trace.get("settings"), ensure_ascii=False, default=str)
                  if trace.get("settings") else None)]
    tokens = totals["prompt_tokens"] + totals["completion_tokens"]
    boxes = [("steps", len(steps)), ("tool calls", totals.get("tool_calls")),
             ("frames looked at", f"{totals.get('frames_looked_at')} distinct / {totals.get('frames_spent', '?')}"),
             ("tokens", f"{tokens} ({totals.get('prompt_tokens')} + {totals.get('completion_tokens')})"),
             ("LLM seconds", totals.get("llm_seconds")), ("tool seconds", totals.get("tool_seconds"))]
    boxes += [(f"{k} seconds", v) for k, v in seconds.items()]
    legend = "".join(f'<span><i style="background:{c}"></i>{esc(p)}</span>' for p, c in
                     [*PHASE_COLOURS.items(), ("evidence", EVIDENCE_COLOUR)]
                     + ([("answer interval", INTERVAL_COLOUR)] if interval else []))
    thumb_times = {round(t["t_s"], 3) for t in thumbs}
    fig = []
    for t in thumbs:
        cap = f"{fmt_t(t['t_s'])} ({t['t_s']:.2f} s)"
        if abs(t["frame_t_s"] - t["t_s"]) > 1e-3:
            cap += f", nearest frame {t['frame_t_s']:.2f} s"
        steps_txt = ", ".join(f"#{i}" for i in t["steps"])
        fig.append(f'<figure id="frame-{t["t_s"]:.3f}"><img src="{t["data_uri"]}" alt="frame at {t["t_s"]:.2f} s">'
                   f"<figcaption>{esc(cap)} · steps {esc(steps_txt)}"
                   + (f" · {t['boxes']} boxes" if t["boxes"] else "") + "</figcaption></figure>")
    html = [
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>",
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
        "style-src 'unsafe-inline'\">",
        "<meta name=viewport content=\"width=device-width, initial-scale=1\">",
        f"<title>avi trace: {esc(str(trace.get('question') or '')[:80])}</title><style>{CSS}</style></head><body>",
        "<h1>avi trace</h1>",
        f"<div class=q>{esc(trace.get('question') or '(no question)')}</div>",
        f"<div class=ans>Answer: <b>{esc(answer if answer is not None else '(no answer)')}</b></div>",
        kv_table(ans_rows),
        memory_html(trace.get("memory") or {}),
        "<div class=totals>" + "".join(f"<div>{esc(k)}<b>{esc(v)}</b></div>" for k, v in boxes) + "</div>",
        "<h2>Timeline</h2>",
        f"<div class=legend>{legend} <span>bars: requested time ranges; ticks: frames looked at; "
        f"0 – {esc(fmt_t(duration))}</span></div>",
        timeline_svg(trace, duration),
        f"<h2>Steps ({len(steps)})</h2>",
        "".join(step_html(s, thumb_times) for s in steps) or "<p>No steps.</p>",
        f"<h2>Frames looked at ({len(thumbs)} shown of {esc(totals['frames_looked_at'])})</h2>",
        (f"<p class=note>{esc(thumb_note)}</p>" if thumb_note else ""),
        ("<p>Red boxes: object_detect; yellow boxes: text_extract (OCR).</p><div class=thumbs>" + "".join(fig)
         + "</div>") if fig else "",
        "<h2>Run</h2>", kv_table(info_rows),
        "</body></html>\n",
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(html), encoding="utf-8")
    return out


def load_trace(path: Path) -> dict:
    """Read a JSON trace file.

    Raises:
        avi.errors.InputError: missing, unreadable, not JSON, or not an avi trace.
    """
    from avi.errors import InputError

    path = Path(path)
    if not path.is_file():
        raise InputError(f"trace not found: {path}")
    try:
        trace = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read trace {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"trace is not valid JSON ({exc.msg} at line {exc.lineno}): {path}") from None
    if not isinstance(trace, dict) or "question" not in trace or not isinstance(trace.get("steps", []), list):
        raise InputError(f"not an avi trace (a JSON object with 'question' and 'steps'): {path}")
    return trace
