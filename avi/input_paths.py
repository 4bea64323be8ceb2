"""Paths users give (videos, subtitles, manifests, questions files, config files), checked before they are opened.

Some paths fail inside the operating system in ways Python reports as internal errors: a symbolic link that
points back to itself (``ELOOP``; ``Path.resolve`` raises ``RuntimeError("Symlink loop ...")``), a file name
longer than the file system allows (``ENAMETOOLONG``; 255 bytes on ext4, XFS, tmpfs). :func:`check_input_path`
finds both and raises :class:`~avi.errors.InputError` with one line naming the path and the reason (exit 2); a
path that simply does not exist is left to the caller's own "not found" message.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from avi.errors import InputError

#: the usual limits where ``pathconf`` cannot say (Linux: NAME_MAX, PATH_MAX), in bytes
NAME_MAX, PATH_MAX = 255, 4096


def _limit(path: bytes, name: str, default: int) -> int:
    probe = path
    while probe and not os.path.isdir(probe):
        probe = os.path.dirname(probe.rstrip(b"/")) if probe.rstrip(b"/") else b""
    try:
        return int(os.pathconf(probe or b".", name))
    except (OSError, ValueError):
        return default


def input_path_problem(path: Path | str) -> str | None:
    """Why ``path`` cannot be opened although it might exist, or None.

    Returns:
        ``"its name is 300 bytes long; the file system allows 255"``, ``"it is 5000 bytes long; ..."`` or
        ``"it is a symbolic link loop (it points back to itself)"``; None for a usable or simply missing path.
    """
    raw = os.fsencode(os.path.expanduser(os.fspath(path)))
    name_max = _limit(raw, "PC_NAME_MAX", NAME_MAX)
    for part in raw.split(b"/"):
        if len(part) > name_max:
            return f"its name is {len(part)} bytes long; the file system allows {name_max}"
    path_max = _limit(raw, "PC_PATH_MAX", PATH_MAX)
    if len(raw) >= path_max:
        return f"it is {len(raw)} bytes long; the file system allows {path_max - 1}"
    try:
        os.stat(raw)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "it is a symbolic link loop (it points back to itself, or through too many links)"
        if exc.errno == errno.ENAMETOOLONG:
            return "its name is longer than the file system allows"
    return None


def check_input_path(path: Path | str, what: str) -> Path:
    """Raise unless ``path`` can be opened as far as its name goes (:func:`input_path_problem`).

    Args:
        path: the path as the user gave it.
        what: what it is, for the message (``"--video"``, ``"the config file"``).

    Returns:
        ``path`` as a :class:`~pathlib.Path` (unchanged).

    Raises:
        InputError: one line naming the path (shortened past 120 characters) and the reason (exit 2).
    """
    reason = input_path_problem(path)
    if reason is not None:
        shown = os.fspath(path)
        shown = shown if len(shown) <= 120 else f"{shown[:60]}…{shown[-40:]}"
        raise InputError(f"{what} {shown} cannot be opened: {reason}")
    return Path(path)
