"""Chroma's native code failing on a damaged database, as one error instead of a crash (issue 55, item 1).

Chroma 1.x reads its SQLite file in Rust. A page of ``chroma.sqlite3`` zeroed by a disk or a careless hand makes
that code panic ("Expect it to be fetched: ... database disk image is malformed"); pyo3 hands the panic to Python
as ``pyo3_runtime.PanicException``, a ``BaseException`` that ``except Exception`` does not catch, and Rust's panic
hook writes its own lines straight to file descriptor 2 before Python sees anything. :func:`contain_panics` runs
Chroma calls with both handled:

* the panic becomes :class:`ChromaPanic` (an :class:`~avi.errors.AviError` with the panic's message), which the
  index check reports as a damaged database and rebuilds (:mod:`avi.index.stage_files`);
* whatever native code writes to file descriptor 2 meanwhile is held in a temporary file and written out
  afterwards, less the panic's own lines, so the user sees one ``avi:`` line and no Rust backtrace.

The redirection is process-wide, so it is taken under :data:`CHROMA_LOCK` (every Chroma call of avi holds it) and
only by the outermost of nested calls; output of other threads in that window is delayed, not lost.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import threading

from avi.errors import AviError

CHROMA_LOCK = threading.RLock()
"""Held around every Chroma call of this process. Chroma 1.x's client set-up is not thread-safe: it caches a path's
client system before starting it, so a second thread opening the same index in between (two questions of one video
answered at once by avi.jobs.local) fails with "'RustBindingsAPI' object has no attribute 'bindings'". Chroma calls
take milliseconds here; the embeddings are computed outside the lock."""

_depth = 0  # nesting of contain_panics in the thread holding CHROMA_LOCK

#: the lines Rust's default panic hook writes: the "thread ... panicked at" line, the message after it, the
#: backtrace hint and frames
_PANIC_LINE = re.compile(r"^(thread '.*' (\(\d+\) )?panicked at |note: run with `RUST_BACKTRACE|note: Some details "
                         r"are omitted|stack backtrace:|\s+\d+: |\s+at )")


class ChromaPanic(AviError):
    """Chroma's native code panicked (a damaged database); the message is the panic's (exit 1)."""


def is_panic(exc: BaseException) -> bool:
    """Whether ``exc`` is a Rust panic handed over by pyo3 (``pyo3_runtime.PanicException``)."""
    return type(exc).__name__ == "PanicException" and type(exc).__module__ == "pyo3_runtime"


def strip_panic_output(text: str) -> str:
    """``text`` written to stderr without the lines of a Rust panic report (the panic's message, the line after
    "panicked at", included)."""
    out, skip_next = [], False
    for line in text.splitlines(keepends=True):
        if skip_next:
            skip_next = False
            continue
        if _PANIC_LINE.match(line):
            while out and not out[-1].strip():  # the blank line the hook starts with
                out.pop()
            skip_next = "panicked at" in line and line.rstrip().endswith(":")
            continue
        out.append(line)
    return "".join(out)


@contextlib.contextmanager
def contain_panics():
    """Run Chroma calls: a Rust panic becomes :class:`ChromaPanic` and its report stays off stderr (module
    docstring). Holds :data:`CHROMA_LOCK`; nested uses redirect once.

    Raises:
        ChromaPanic: Chroma's native code panicked.
    """
    global _depth
    with CHROMA_LOCK:
        outer = _depth == 0
        _depth += 1
        held = saved = None
        try:
            if outer:
                with contextlib.suppress(OSError, ValueError):
                    sys.stderr.flush()
                    held = tempfile.TemporaryFile()
                    saved = os.dup(2)
                    os.dup2(held.fileno(), 2)
            try:
                yield
            except BaseException as exc:
                if is_panic(exc):
                    msg = " ".join(str(exc).split())[:300] or "no message"
                    raise ChromaPanic(f"Chroma's native code failed: {msg}") from None
                raise
        finally:
            _depth -= 1
            if saved is not None:
                os.dup2(saved, 2)
                os.close(saved)
            if held is not None:
                held.seek(0)
                rest = held.read().decode(errors="replace")
                held.close()
                if "panicked at" in rest:
                    rest = strip_panic_output(rest)
                if rest:
                    with contextlib.suppress(OSError):
                        os.write(2, rest.encode())
