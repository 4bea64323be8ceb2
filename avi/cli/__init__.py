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

import sys
from pathlib import Path

from avi import __version__
from avi.cli.ask import add_ask_args, cmd_ask
from avi.cli.common import Parser, add_answer_rules, add_common, guard
from avi.cli.doctor import cmd_config, cmd_doctor
from avi.cli.index import cmd_index
from avi.cli.serve import cmd_serve
from avi.cli.tool import cmd_tool
from avi.cli.view import cmd_view
from avi.cli.weights import cmd_weights

__all__ = ["main", "run_main"]


def run_main(argv: list[str] | None = None) -> int:
    """``avi-run``: answer one question about one video."""
    p = Parser(prog="avi-run", description="Answer a question about a video with the AVI agent "
                                            "(Retrieve -> Perceive -> Review), fully offline.")
    p.add_argument("--version", action="version", version=f"avi {__version__}")
    add_ask_args(p)
    args = p.parse_args(argv)
    sys.exit(guard(cmd_ask, args))


def main(argv: list[str] | None = None) -> int:
    """``avi``: the command group."""
    p = Parser(prog="avi", description="Air-gapped agentic video question answering.")
    p.add_argument("--version", action="version", version=f"avi {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)

    a = sub.add_parser("ask", help="answer a question about a video (same as avi-run)")
    add_ask_args(a)
    a.set_defaults(fn=cmd_ask)

    i = sub.add_parser("index", help="build (or reuse, or resume) the database of videos or of a folder of videos")
    i.add_argument("videos", type=Path, nargs="+", metavar="VIDEO_OR_FOLDER")
    i.add_argument("--rebuild", action="store_true", help="build anew, even over a complete index or a partial build")
    i.add_argument("--json", action="store_true", help="print one JSON object")
    add_common(i)
    i.set_defaults(fn=cmd_index)

    t = sub.add_parser("tool", help="run one agent tool on a video (e.g. avi tool text_extract --video V "
                                    "--args '{\"time_ranges\": [[0, 5]]}'); `avi tool list` lists them")
    t.add_argument("name", help="tool name, or 'list'")
    t.add_argument("--video", type=Path, help="video file (its index is built or reused first)")
    t.add_argument("--args", default="{}", help="the tool's arguments as a JSON object (default {})")
    t.add_argument("--json", action="store_true", help="print the observation as one JSON object "
                                                       "(text, data, frames, evidence)")
    add_common(t)
    t.set_defaults(fn=cmd_tool)

    # conflict_handler="resolve": this --profile (an entry selection, with test and all) replaces the common one
    w = sub.add_parser("weights", help="list, lock, fetch, verify, pack or unpack local weights (weights.lock; "
                                       "see models/README.md)", conflict_handler="resolve")
    w.add_argument("action", choices=["list", "lock", "fetch", "verify", "pack", "unpack"])
    w.add_argument("names", nargs="*", help="weights.lock entries (default: the --profile selection); "
                                            "unpack: the tarball")
    w.add_argument("--out", type=Path, help="pack: tarball to write (default avi-weights-<profile>.tar)")
    w.add_argument("--update", action="store_true", help="lock: move pinned hf entries to their ref's current commit")
    add_common(w)
    w.add_argument("--profile", dest="weights_profile", choices=["cpu", "gpu", "test", "all"],
                   help="entries of this profile (cpu includes test); default: the settings' profile for fetch "
                        "and verify, all for list, lock and pack")
    w.set_defaults(fn=cmd_weights)

    d = sub.add_parser("doctor", help="check the install for its profile: packages, GPUs, weights, endpoints, "
                                      "tool calling, offline switches")
    d.add_argument("--serve", action="store_true", help="cpu profile: also start the embedded orchestrator, ask "
                                                        "it one thing and make one forced tool call")
    add_common(d)
    d.set_defaults(fn=cmd_doctor)

    s = sub.add_parser("serve", help="run the profile's servers until Ctrl-C: the embedded llama.cpp server "
                                     "(cpu) or the vLLM servers of the [serve] GPU layout (gpu)")
    s.add_argument("--dry-run", action="store_true", help="print the gpu layout's GPU placement and the exact "
                                                          "vLLM commands; start nothing")
    add_common(s)
    s.set_defaults(fn=cmd_serve)

    c = sub.add_parser("config", help="show the effective settings (config file, AVI_* environment, flags)")
    c.add_argument("action", choices=["show"])
    c.add_argument("--json", action="store_true", help="print JSON (settings, and the source of each "
                                                       "non-default value)")
    c.add_argument("--preset", choices=["paper"], help="show the settings under a preset (paper: every host step "
                                                       "that is not in AVI's Algorithm 1 off)")
    add_answer_rules(c)
    add_common(c)
    c.set_defaults(fn=cmd_config)

    v = sub.add_parser("view", help="write a self-contained HTML page for a JSON trace (timeline, steps, "
                                    "annotated frames); no network needed to open it")
    v.add_argument("trace", type=Path, metavar="TRACE", help="a JSON trace written by avi-run / avi ask")
    v.add_argument("--out", type=Path, help="HTML file to write (default: the trace's path with .html)")
    v.add_argument("--video", type=Path, help="video for the thumbnails (default: the path in the trace)")
    v.add_argument("--max-thumbs", type=int, default=48, help="at most this many frame thumbnails (default 48)")
    v.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    v.set_defaults(fn=cmd_view)

    from avi.cli.batch import add_batch_parser
    from avi.cli.evaluate import add_eval_parser

    add_batch_parser(sub, add_common)
    add_eval_parser(sub, add_common)

    args = p.parse_args(argv)
    sys.exit(guard(args.fn, args))
