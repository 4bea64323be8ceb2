"""The perception memory as a stage of an index (issue 53): built with the index (:func:`avi.index.build.build_index`)
and, for an index without one or with a stale one, in place on first use, under the index's build lock
(:func:`ensure_memory`). The memory itself is :mod:`avi.memory.store`."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from avi.index.locking import IndexBusy, build_lock, index_writable
from avi.memory.store import MEMORY_FILE, MEMORY_VERSION, Memory, MemoryUnreadable, build_memory
from avi.video.decode import probe


def memory_stale(index_dir: Path, people: bool) -> str | None:
    """Why ``index_dir``'s memory must be (re)built, or None when it is there, readable and of this build."""
    path = Path(index_dir) / MEMORY_FILE
    if not path.exists():
        return "not built"
    try:
        mem = Memory(path)
    except MemoryUnreadable as exc:
        return f"unreadable ({exc})"
    try:
        requested = json.loads(mem.meta.get("people_requested", "false"))
        if mem.meta.get("version") != MEMORY_VERSION:
            return f"built by {mem.meta.get('version')}, not {MEMORY_VERSION}"
        if bool(requested) != bool(people):
            return "built with the people models switched differently"
        return None
    finally:
        mem.close()


def write_memory(index_dir: Path, info: Any, transcript_info: dict, settings: Any, backends: Any, *, people: bool,
                 progress: bool = False) -> dict:
    """:func:`avi.memory.store.build_memory` as a stage of a new index's build (into its work directory), from the
    video's probe ``info`` (:class:`avi.video.decode.VideoInfo`, probed once per build).

    Returns:
        build_memory's summary (rows per table, seconds, bytes, id).

    Raises:
        AviError: the memory could not be written; a full file system reads "no space left on DEVICE (mounted at
            PATH, N MiB free): ..." (:func:`avi.index.chroma_io.full_disk_error`); the finished stages are kept.
    """
    from avi.errors import AviError
    from avi.index.chroma_io import full_disk_error

    try:
        return build_memory(index_dir, info, info.duration_s, transcript_info, settings, backends, people=people,
                            progress=progress)
    except (OSError, sqlite3.Error) as exc:
        what = f"the perception memory could not be written to {index_dir}"
        full = full_disk_error(exc, index_dir, what, "the finished stages are kept", source="SQLite")
        if full is not None:
            raise full from exc
        raise AviError(f"{what}: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}") from exc


def ensure_memory(index: Any, settings: Any, backends: Any, *, progress: bool = False) -> tuple[Memory | None, str]:
    """The memory of ``index`` (an :class:`avi.index.store.VideoIndex`), built into its directory first when it is
    missing, unreadable or of another version (under the index's build lock, written atomically).

    Returns:
        ``(memory, note)``: the memory or None, and one line saying what was done (``"read"``, ``"built now
        (N s)"``) or why there is none (read-only index, another process building it, the build failed).

    Raises:
        WeightsError: a model's weights are missing or damaged (the run ends, exit 4).
    """
    from avi.errors import AviError, WeightsError

    people = bool(getattr(settings, "memory_people", True))
    why = memory_stale(index.path, people)
    if why is None:
        return Memory(index.path / MEMORY_FILE), "read"
    if not index_writable(index.path):
        return None, f"the perception memory of this index is {why} and cannot be built here (read-only index)"
    t0 = time.perf_counter()
    try:
        with build_lock(index.path.parent, index.path.name):
            if memory_stale(index.path, people) is None:
                return Memory(index.path / MEMORY_FILE), "read (built by another question meanwhile)"
            m = index.manifest
            video = Path(m["video"]["path"])
            build_memory(index.path, probe(video) if video.is_file() else None, float(m["video"]["duration_s"]),
                         m.get("transcript") or {}, settings, backends, people=people, progress=progress)
    except IndexBusy as exc:
        return None, f"the perception memory is {why} and another avi process (pid {exc.pid}) holds the index"
    except WeightsError:
        raise
    except (AviError, OSError, sqlite3.Error, ValueError, KeyError) as exc:
        return None, f"the perception memory could not be built ({type(exc).__name__}: {' '.join(str(exc).split())[:160]})"
    return Memory(index.path / MEMORY_FILE), f"built now ({time.perf_counter() - t0:.1f} s; it was {why})"
