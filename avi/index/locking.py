"""The build lock of an index and whether an index can be written: what the build, the lazy LLM stages and the
perception memory's stage share (one builder per index at a time)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from avi.errors import AviError


class IndexBusy(AviError):
    """Another process holds the build lock of an index (:func:`build_lock`).

    Attributes:
        pid: the lock holder's process id as it wrote it ("?" when unreadable).
    """

    def __init__(self, message: str, pid: str):
        super().__init__(message)
        self.pid = pid


@contextlib.contextmanager
def build_lock(root: Path, key: str):
    """Exclusive lock for building ``key``; raises :class:`IndexBusy` if another process holds it."""
    path = root / f".{key}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise IndexBusy(f"another avi process (pid {other}) is building this index: {root / key}",
                            other) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
        path.unlink(missing_ok=True)  # still held: a builder that starts later creates a fresh lock file
    finally:
        os.close(fd)  # closing releases the lock


def index_writable(path: Path) -> bool:
    """Whether a pending stage can be built into the index at ``path``: its folder (the stage's file, the
    manifest) and the index root (the build lock file) can be written."""
    path = Path(path)
    return all(os.access(p, os.W_OK | os.X_OK) for p in (path, path.parent)) and \
        os.access(path / "manifest.json", os.W_OK)
