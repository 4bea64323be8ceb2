"""The ``--video`` arguments of a question over several videos, and the short name each video goes by."""

from __future__ import annotations

import glob
import re
from pathlib import Path

from avi.errors import InputError
from avi.input_paths import check_input_path

VIDEO_SUFFIXES = {".mp4", ".avi", ".mkv", ".mov", ".webm", ".m4v", ".mpg", ".mpeg", ".ts", ".flv", ".wmv"}
"""File name endings taken from a folder (a file named directly is taken whatever its ending)."""

_GLOB_CHARS = re.compile(r"[*?\[]")


def expand_videos(args: list[Path | str]) -> list[Path]:
    """The video files the ``--video`` arguments name, in the order given, each once.

    A file is taken as it is; a folder gives its video files (by :data:`VIDEO_SUFFIXES`, sorted by name, not
    recursive); an argument with ``*``, ``?`` or ``[`` that is not an existing path is a glob (sorted).

    Raises:
        InputError: an argument names nothing that exists, a folder or glob holds no video files, or cannot be
            opened by its name (a symbolic link loop, a name longer than the file system allows).
    """
    out: list[Path] = []
    for arg in args:
        p = check_input_path(Path(arg).expanduser(), "--video")
        if p.is_dir():
            found = sorted(f for f in p.iterdir() if f.is_file() and f.suffix.lower() in VIDEO_SUFFIXES)
            if not found:
                raise InputError(f"{p} is not a file, and as a folder it holds no video files "
                                 f"({', '.join(sorted(VIDEO_SUFFIXES))})")
        elif p.exists() or not _GLOB_CHARS.search(str(arg)):
            found = [p]  # a missing file is reported by the probe with its own message
        else:
            found = sorted(Path(f) for f in glob.glob(str(p)) if Path(f).is_file())
            if not found:
                raise InputError(f"no file matches {arg}")
        for f in found:
            if f.resolve() not in {x.resolve() for x in out}:
                out.append(f)
    return out


def video_names(paths: list[Path]) -> list[str]:
    """One short, unique name per video, in order: the file name without its ending (``vtest`` for
    ``…/vtest.avi``), with ``-2``, ``-3`` … for repeated names. Characters other than letters, digits, ``._-``
    become ``_`` so that a name is one word the model can copy."""
    names: list[str] = []
    for p in paths:
        base = re.sub(r"[^\w.-]+", "_", Path(p).stem).strip("_") or "video"
        name, k = base, 2
        while name.lower() in {n.lower() for n in names}:
            name, k = f"{base}-{k}", k + 1
        names.append(name)
    return names


def resolve_name(value: object, names: list[str]) -> str | None:
    """The video a model's ``video`` argument means, or None.

    Accepts the name in any case, with its file ending (``vtest.avi``) or a path ending in it, and
    ``video 2`` / ``2`` for the second video in the listed order.
    """
    if value is None:
        return None
    text = str(value).strip().strip("'\"`").strip()
    if not text:
        return None
    lower = {n.lower(): n for n in names}
    for cand in (text, Path(text).name, Path(text).stem):
        if cand.lower() in lower:
            return lower[cand.lower()]
    m = re.fullmatch(r"(?:video\s*#?\s*)?(\d{1,3})", text, re.I)
    if m and 1 <= int(m.group(1)) <= len(names):
        return names[int(m.group(1)) - 1]
    return None
