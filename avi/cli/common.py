"""What every avi command shares: the one-line-error parser, the guard that turns failures into exit statuses,
the common flags, and the one place where settings are assembled from flags, ``AVI_*`` and the config file.
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import signal
import sys
import traceback
import warnings
from pathlib import Path

from avi.errors import AviError


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def quiet_libraries() -> None:
    warnings.filterwarnings("ignore")
    for name in ("chromadb", "sentence_transformers", "transformers", "httpx", "urllib3", "RapidOCR",
                 "rapidocr", "onnxruntime", "huggingface_hub"):
        logging.getLogger(name).setLevel(logging.ERROR)
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("ORT_LOG_LEVEL", "3")


class Terminated(SystemExit):
    """SIGTERM arrived (:func:`guard` says so in one line and exits 143). A ``SystemExit``, so that code which
    cleans up on the way out (``finally``, context managers) runs and nothing catches it as an error."""


def _on_sigterm(signum, frame):  # pragma: no cover - exercised by signal tests
    raise Terminated(128 + signum)


class StderrLines(logging.Handler):
    """Warnings (and errors) logged by avi and its libraries as one ``avi: warning: ...`` line each on stderr,
    what the user sees with or without ``--quiet`` (Python's own last-resort output has no prefix)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            print(f"avi: {record.levelname.lower()}: {' '.join(record.getMessage().split())}", file=sys.stderr,
                  flush=True)
        except Exception:  # noqa: BLE001 - logging must never end the command
            self.handleError(record)


def guard(fn, args) -> int:
    """Run a command; turn every failure into one stderr line and an exit status; log warnings as ``avi:
    warning:`` lines while it runs (:class:`StderrLines`)."""
    lines = StderrLines(logging.WARNING)
    logging.getLogger().addHandler(lines)
    try:
        return _guarded(fn, args)
    finally:
        logging.getLogger().removeHandler(lines)


def _guarded(fn, args) -> int:
    from avi.offline import enforce_offline_env
    from avi.places import apply_private_umask, permission_message

    enforce_offline_env()
    quiet_libraries()
    apply_private_umask(True)  # until the settings say otherwise (private_files; settings_from_args)
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return fn(args) or 0
    except AviError as exc:
        print(f"avi: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return exc.exit_code
    except Terminated as exc:
        print("avi: terminated (SIGTERM); what was finished is kept (an index build resumes where it stopped)",
              file=sys.stderr)
        return int(exc.code)
    except KeyboardInterrupt:
        print("avi: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # a place that became unwritable after the checks before work (full disk, ...)
        if exc.errno in (errno.ELOOP, errno.ENAMETOOLONG):  # a path the checks before work did not see
            print(f"avi: error: cannot open {exc.filename}: {os.strerror(exc.errno).lower()}", file=sys.stderr)
            return 2
        msg = permission_message(exc)
        if msg is None:
            return _internal_error(exc, args)
        if getattr(args, "debug", False):
            traceback.print_exc()
        print(f"avi: error: {' '.join(msg.split())}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - last line of defence for the user
        return _internal_error(exc, args)
    except BaseException as exc:  # a Rust panic of a native library (pyo3's PanicException) is no Exception
        from avi.index.chroma_panic import is_panic

        if not is_panic(exc):
            raise
        return _internal_error(exc, args)


def _internal_error(exc: BaseException, args) -> int:
    if getattr(args, "debug", False):
        traceback.print_exc()
    msg = " ".join(f"{type(exc).__name__}: {exc}".split())[:400]
    print(f"avi: internal error: {msg} (rerun with --debug for a traceback)", file=sys.stderr)
    return 1


def add_common(p: argparse.ArgumentParser) -> None:
    """The paths-and-models flags every command takes, and --quiet / --debug."""
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


def add_answer_rules(p: argparse.ArgumentParser) -> None:
    """The ``--answer-rules`` flag (avi-run / avi ask, avi batch, avi eval)."""
    from avi.config_agent import ANSWER_RULES

    p.add_argument("--answer-rules", metavar="RULES",
                   help="host rules that may change the delivered answer: default (cpu: all; gpu: video_length, "
                        "structured_answer), all, none, or names separated by commas, -name removing "
                        "one from the default (write --answer-rules=-option_scores,-cannot_tell); AVI_ANSWER_RULES; "
                        "names: "
                        f"{', '.join(ANSWER_RULES)}")


def settings_from_args(args):
    """Settings from the parsed flags (flags > AVI_* > config file > defaults; :meth:`avi.config.Settings.load`)."""
    from avi.config import Settings

    overrides = {"llm_progress_s": 0.0} if getattr(args, "quiet", False) else {}  # --quiet: no "still waiting"
    for arg, key in (("profile", "profile"), ("index_root", "index_root"), ("models_dir", "models_dir"),
                     ("llm_url", "llm_base_url"),
                     ("llm_model", "llm_model"), ("llm_gguf", "llm_gguf"), ("max_iterations", "max_iterations"),
                     ("subtitles", "subtitles"), ("transcript", "transcript"), ("answer_type", "answer_type"),
                     ("answer_rules", "answer_rules")):
        value = getattr(args, arg, None)
        if value is not None:
            overrides[key] = value
    if getattr(args, "preset", None) == "paper":
        from avi.config_agent import paper_agent_overrides
        from avi.errors import InputError

        given = overrides.get("answer_rules")
        if given is not None and given != "none":
            raise InputError(f"--preset paper runs no answer rules; drop --answer-rules {given}")
        overrides.update(paper_agent_overrides())  # the paper's agent: every host step off (HOST_STEPS)
    settings = Settings.load(getattr(args, "config", None), **overrides)
    from avi.places import apply_private_umask

    apply_private_umask(settings.private_files)
    return settings
