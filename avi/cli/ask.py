"""``avi ask`` / ``avi-run``: answer one question about one video and print the answer (or one JSON object)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from avi.cli.common import add_answer_rules, add_common, settings_from_args
from avi.errors import AviError, InputError
from avi.input_paths import check_input_path
from avi.places import check_places, permission_message, question_places
from avi.videos.naming import expand_videos
from avi.videos.output import evidence_text, many_json


def add_ask_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--video", required=True, type=Path, action="append",
                   help="video file (anything FFmpeg reads); repeat it, or name a folder or a glob, to ask about "
                        "several videos at once (each indexed as on its own; tools then take a video argument)")
    p.add_argument("--question", required=True, help="the question; put multiple-choice options in it "
                                                     "as 'A. …  B. …'")
    p.add_argument("--json", action="store_true", help="print one JSON object (answer, choice, interval, "
                                                       "evidence, trace)")
    p.add_argument("--trace", type=Path, help="where to write the JSON trace (default ~/.cache/avi/traces/)")
    p.add_argument("--rebuild-index", action="store_true", help="build the index anew even if one exists")
    p.add_argument("--max-iterations", type=int, help="agent iterations before a forced answer (default 10)")
    p.add_argument("--answer-type", choices=["auto", "choice", "multi", "interval", "order", "text"],
                   help="answer type (default auto: inferred from the question; multi = select all that apply, "
                        "order = a sequence of letters or items)")
    p.add_argument("--preset", choices=["paper"],
                   help="paper: the AVI paper's agent, Algorithm 1 alone: every host step that is not in it off "
                        "(the memory route, the host search, Perceive first, places from time words, the gates, the "
                        "extraction pass, the OCR frame cap and script choice) and no answer rules; avi config show "
                        "--preset paper lists them")
    add_answer_rules(p)
    add_common(p)


def cmd_ask(args) -> int:
    from avi.backends import Backends
    from avi.pipeline import ask

    if args.max_iterations is not None and args.max_iterations < 1:
        raise InputError("--max-iterations must be at least 1")
    if not (args.question or "").strip():
        raise InputError("the question is empty")
    if args.trace is not None:  # a name the file system refuses is found now, not after the question ran
        check_input_path(args.trace, "--trace")
    settings = settings_from_args(args)
    check_places(question_places(settings, args.trace))  # before any work: the answer must not be lost
    videos = expand_videos(args.video)
    backends = Backends(settings)
    # the question waits only for the captions and embeddings; an LLM stage (entity graph, summary) is built
    # when a tool of this or a later question first needs it (avi/index/lazy.py), never after the answer
    stages = "search" if settings.index_llm_stages == "after" else "all"
    try:
        if len(videos) == 1:
            result = ask(videos[0], args.question, settings, backends, rebuild_index=args.rebuild_index,
                         progress=not args.quiet, stages=stages)
        else:
            from avi.videos.pipeline import ask_many

            result = ask_many(videos, args.question, settings, backends, rebuild_index=args.rebuild_index,
                              progress=not args.quiet, stages=stages)
        status = _print_result(args, result, settings)
    finally:
        backends.close()
    return status


def _print_result(args, result, settings) -> int:
    """Write the trace and print the answer (text, or one JSON object with ``--json``); returns 0.

    Raises:
        AviError: the trace could not be written (the answer is printed first)."""
    from avi.pipeline import default_trace_path

    trace = result.trace
    try:
        trace_path = trace.write(args.trace or default_trace_path(settings, trace))
        unwritten = None
    except OSError as exc:  # the folder was checked before the run; it can still fill up or vanish
        trace_path, unwritten = None, permission_message(exc) or f"cannot write the trace: {exc}"
    if args.json:
        print(json.dumps({"answer": result.answer, "choice": result.choice, "interval": result.interval,
                          "choices": result.choices, "order": result.order, "answer_type": result.answer_type,
                          "note": result.note, "cannot_tell": result.cannot_tell,
                          "choice_method": result.choice_method, "rules": result.rules,
                          "evidence": result.evidence, "memory": _memory_json(trace),
                          "trace": str(trace_path) if trace_path else None,
                          "question": trace.question,
                          "video": trace.video, "iterations": trace.iterations, "forced": trace.forced,
                          "seconds": trace.seconds, "frames": _frames_line(trace), "telemetry": trace.totals(),
                          "fallbacks": getattr(trace, "fallbacks", {}), **many_json(trace)},
                         ensure_ascii=False))
    else:
        print(f"Answer: {result.answer if result.answer is not None else '(no answer)'}")
        if result.choice:
            print(f"Choice: {result.choice}")
        if result.interval:
            print(f"Interval: [{result.interval[0]:.1f}s, {result.interval[1]:.1f}s]")
        if result.choices:
            print(f"Choices: {', '.join(result.choices)}")
        if result.order:
            print(f"Order: {' -> '.join(result.order)}")
        if result.note:
            print(f"Note: {result.note}")
        ev = ", ".join(evidence_text(e) for e in result.evidence) or "none"
        print(f"Evidence: {ev}")
        f = _frames_line(trace)
        print(f"Frames: {f['spent']} looked at ({f['distinct']} distinct)"
              + (f" of a budget of {f['budget']}" if f["budget"] else "")
              + (f" (alpha {f['alpha']:g})" if f["budget"] and f.get("alpha") else "")
              + (": " + ", ".join(f"{k} {n}" for k, n in f["per_tool"].items()) if f["per_tool"] else ""))
        print(f"Trace: {trace_path}" if trace_path else "Trace: not written")
    if unwritten:  # the answer is printed above; the failure still ends the run non-zero
        raise AviError(unwritten)
    return 0


def _memory_json(trace) -> dict | None:
    """The perception-memory route for ``--json``: the route, why, the typed query, the measured value and the rows
    it rests on (the trace's ``memory`` has the parse and the examples too); None when the route was off."""
    m = getattr(trace, "memory", None) or {}
    if not m:
        return None
    result = m.get("result") or {}
    parse = m.get("parse") or {}
    return {"route": m.get("route"), "reason": m.get("reason"), "query": parse.get("query"),
            "value": result.get("value"), "covered": result.get("covered"), "rows": result.get("rows")}


def _frames_line(trace) -> dict:
    """The question's frame budget use: frames looked at by perceive calls, distinct frames, the budget."""
    totals = trace.totals()
    return {"spent": totals["frames_spent"], "distinct": totals["frames_looked_at"],
            "budget": trace.settings.get("frame_budget") or None, "alpha": trace.settings.get("frame_alpha"),
            "per_tool": totals.get("frames_per_tool", {})}
