"""Places avi writes: checked before work starts, and private to the user.

* :func:`check_writable` proves, before a command does any work, that each folder it will write to (the index
  root when an index must be built, the traces folder, the saved LLM state, a results file's folder) can be
  written, so a read-only ``AVI_HOME`` ends with one line naming the folder instead of an internal error, and an
  unwritable traces folder is found before the question is answered, not after (losing the answer).
* :func:`apply_private_umask` makes the files and folders avi creates readable by the user only (umask 077:
  files 0600, folders 0700), since indexes, traces and saved LLM state describe videos that may be sensitive.
  The setting ``private_files = false`` (``AVI_PRIVATE_FILES=false``) keeps the process umask instead, e.g. for an
  index root shared by a group.

Nothing here writes: a folder that does not exist yet is judged by the nearest folder above it that does.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from avi.errors import InputError

#: umask bits :func:`apply_private_umask` adds: nothing for the group, nothing for others.
PRIVATE_UMASK = 0o077


def unwritable_reason(folder: Path | str) -> str | None:
    """Why avi could not create files in ``folder`` (creating it and its parents first if needed), or None.

    Args:
        folder: a folder path; it need not exist yet.

    Returns:
        a short reason (``"read-only file system"``, ``"permission denied"``, ``"/x is a file, not a folder"``),
        or None when the folder, or the nearest existing folder above it, is writable by this process.
    """
    path = Path(folder).expanduser().absolute()
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            return "no existing folder above it"
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is a file, not a folder"
    if os.access(probe, os.W_OK | os.X_OK):
        return None
    try:
        if os.statvfs(probe).f_flag & os.ST_RDONLY:
            return "read-only file system"
    except OSError:
        pass
    return "permission denied" if probe == path else f"permission denied in {probe}"


def check_writable(folder: Path | str, what: str, hint: str = "") -> Path:
    """Raise unless avi can create files in ``folder`` (see :func:`unwritable_reason`).

    Args:
        folder: the folder avi will write to.
        what: what goes there, for the message ("the traces folder").
        hint: how to choose another place ("set AVI_TRACE_DIR or --trace").

    Returns:
        ``folder`` as an absolute path.

    Raises:
        InputError: the folder cannot be written; the one-line message names the folder and why (exit 2).
    """
    path = Path(folder).expanduser().absolute()
    reason = unwritable_reason(path)
    if reason is not None:
        raise InputError(f"cannot write {what} to {path}: {reason}" + (f"; {hint}" if hint else ""))
    return path


def permission_message(exc: OSError) -> str | None:
    """One line for an OSError about a place (permission denied, read-only file system, no space left), naming
    the path; None for other errors."""
    if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT):
        return None
    where = exc.filename if exc.filename is not None else "a file avi writes"
    return f"cannot write {where}: {os.strerror(exc.errno).lower()}"


_STARTING_UMASK: int | None = None


def apply_private_umask(private: bool = True) -> int:
    """Set the process umask to the one it started with plus :data:`PRIVATE_UMASK` when ``private`` (setting
    ``private_files``), or back to the one it started with when not; calling it again with the other value
    undoes the first call.

    Files and folders created afterwards by this process and its children (the embedded LLM server, Chroma's
    database) are then 0600 / 0700 at most. Folders that already exist keep their modes.

    Returns:
        the umask now in force.
    """
    global _STARTING_UMASK
    current = os.umask(0o077)
    if _STARTING_UMASK is None:
        _STARTING_UMASK = current
    mask = _STARTING_UMASK | PRIVATE_UMASK if private else _STARTING_UMASK
    os.umask(mask)
    return mask


def question_places(settings, trace_path: Path | str | None = None) -> list[tuple[Path, str, str]]:
    """The folders answering a question writes besides the index: ``(folder, what, hint)`` for
    :func:`check_writable`.

    Args:
        settings: :class:`avi.config.Settings`.
        trace_path: the trace file when given (``--trace``), else the traces folder is used.
    """
    trace_dir = Path(trace_path).expanduser().absolute().parent if trace_path else settings.traces_dir()
    places = [(trace_dir, "the trace", "choose another place with --trace or AVI_TRACE_DIR")]
    if settings.llm_prefix_cache and not settings.llm_base_url and not settings.llm_embedded_url:
        places.append((settings.home / "llm-state", "the embedded LLM's saved state",
                       "set AVI_HOME to a writable folder, or AVI_LLM_PREFIX_CACHE=false"))
    return places


def job_places(settings, out: Path | str, traces_dir: Path | str) -> list[tuple[Path, str, str]]:
    """The folders a batch or eval run writes besides the indexes (its results file's folder, its traces
    folder, the embedded LLM's saved state): ``(folder, what, hint)`` for :func:`check_writable`."""
    out = Path(out).expanduser().absolute()
    places = [(out.parent, "the results", "choose another --out"),
              (Path(traces_dir), "the traces", "choose another --out (traces go beside it)")]
    return places + question_places(settings, Path(traces_dir) / "trace.json")[1:]


def check_not_an_input(out: Path | str, inputs, flag: str = "--out") -> None:
    """Refuse, before any work, a results file that is one of the run's inputs (``avi batch M --out M`` would
    append answers to the manifest it reads, and its job file, then read back as results, fails every question).

    Args:
        out: the results file.
        inputs: ``(path, what)`` pairs: the manifest, the questions file, the annotations, each video and
            subtitle file.
        flag: how the message names ``out``.

    Raises:
        InputError: ``out`` is the same file as an input (the same path, or the same file through a link).
    """
    out_path = Path(out).expanduser().absolute()
    for path, what in inputs:
        if path is None:
            continue
        p = Path(path).expanduser().absolute()
        try:
            same = p == out_path or (out_path.exists() and p.exists() and os.path.samefile(p, out_path))
        except OSError:
            same = False
        if same:
            raise InputError(f"{flag} {out} is {what}: the results would be written into it; choose another {flag}")


def check_places(places) -> None:
    """:func:`check_writable` for each ``(folder, what, hint)``; the first that fails raises InputError."""
    for folder, what, hint in places:
        check_writable(folder, what, hint)
