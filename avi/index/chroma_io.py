"""Writing and checking an index's Chroma database (issue 39).

* :func:`add_batched`: every insert goes in batches of at most the client's ``get_max_batch_size()`` items
  (5,461 with Chroma's default SQLite limits), through Chroma's own ``create_batches``; a single ``add`` of more
  refuses, which capped an index at about 7.6 hours of 5 s clips or 5,461 transcript segments.
* :func:`verify_chroma`: an index that opens is an index that works: each collection holds as many vectors as
  the index has clips and transcript segments, and one query answers. ``avi index`` and every question run it
  when they open an index (:func:`avi.index.build.ensure_index`); a database that fails is reported with its
  cause and rebuilt, as an unreadable manifest is.
* :func:`write_error`: a failed Chroma write as one line. A full disk shows up inside Chroma as "database or
  disk is full" or as "Error in compaction: Failed to apply logs to the hnsw segment writer"; both are named
  "no space left on DEVICE (mounted at PATH)" with the free space, when the file system is (nearly) full.
  The check of :func:`verify_chroma` writes too (Chroma writes to its database when it opens it): a full disk
  met there is the same :class:`DiskFullError`, never taken for a damaged database (issue 55, item 11).

Every Chroma call here runs under :func:`avi.index.chroma_panic.contain_panics`: a panic of Chroma's native code
on a damaged page is a :class:`~avi.index.chroma_panic.ChromaPanic`, reported as a damaged database (item 1).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from avi.errors import AviError
from avi.index.chroma_panic import contain_panics
from avi.index.store import (
    COLLECTION,
    TRANSCRIPT_COLLECTION,
    ChromaEmbeddingFunction,
    chroma_client,
    release_chroma,
)

#: phrases of Chroma's and SQLite's messages that mean the disk is full
_FULL_WORDS = ("disk is full", "no space left", "os error 28", "enospc", "quota exceeded")
#: a file system with less free space than this after a failed write is taken as full (bytes)
FULL_BELOW_BYTES = 64 * 2**20
#: phrases that mean the database itself is damaged (never taken for a full disk, whatever the free space)
_DAMAGE_WORDS = ("malformed", "not a database", "does not exist", "native code failed", "holds ")


class DiskFullError(AviError):
    """The file system holding an index filled up while Chroma wrote to it (exit 1; nothing is rebuilt: the
    finished stages are kept and the next run resumes or checks again)."""


def add_batched(client, collection, ids: Sequence[str], embeddings, metadatas: Sequence[dict],
                documents: Sequence[str]) -> int:
    """``collection.add`` in batches of at most ``client.get_max_batch_size()`` items.

    Args:
        client: the Chroma client the collection belongs to (it knows its batch limit).
        collection: the Chroma collection.
        ids, embeddings, metadatas, documents: one entry per item, in the same order; ``embeddings`` may be a
            2-d numpy array.

    Returns:
        the number of ``add`` calls made.

    Raises:
        whatever Chroma raises (callers turn it into one line with :func:`write_error`).
    """
    from chromadb.utils.batch_utils import create_batches

    batches = create_batches(api=client, ids=list(ids), embeddings=embeddings, metadatas=list(metadatas),
                             documents=list(documents))
    for b_ids, b_vecs, b_meta, b_docs in batches:
        collection.add(ids=b_ids, embeddings=b_vecs, metadatas=b_meta, documents=b_docs)
    return len(batches)


def verify_chroma(folder: Path, clips: int, segments: int) -> None:
    """Check the Chroma database at ``folder`` answers: the clip collection holds ``clips`` vectors, the
    transcript collection ``segments`` (none when 0), and a query with a stored vector finds one item.

    Nothing is embedded (the query reuses a stored vector), so no model is needed. Chroma's cached client for
    ``folder`` is dropped after a failure, so a rebuild opens the new database afresh.

    Args:
        folder: the ``chroma/`` folder of an index (or its private read-only copy).
        clips: the index's clip count (its manifest's ``counts.clips``).
        segments: its transcript segment count.

    Raises:
        DiskFullError: the file system is full (Chroma writes to its database when it opens it).
        AviError: the database cannot be opened, a collection is missing, holds another count, a query fails or
            Chroma's native code panics; the message gives the cause (e.g. "database disk image is malformed").
    """
    want = [(COLLECTION, clips)] + ([(TRANSCRIPT_COLLECTION, segments)] if segments else [])
    try:
        with contain_panics():
            client = chroma_client(folder)
            for name, n in want:
                col = client.get_collection(name, embedding_function=ChromaEmbeddingFunction(None))
                have = col.count()
                if have != n:
                    raise AviError(f"its '{name}' collection holds {have} vectors, the index has {n}")
                if n:
                    got = col.get(limit=1, include=["embeddings"])
                    res = col.query(query_embeddings=got["embeddings"], n_results=1, include=["distances"])
                    if not res["ids"] or len(res["ids"][0]) != 1:
                        raise AviError(f"a query of its '{name}' collection found nothing")
    except Exception as exc:  # noqa: BLE001 - Chroma raises many kinds; each is reported with its cause
        release_chroma(folder)
        full = full_disk_error(exc, folder, f"the index's Chroma database {folder} could not be checked",
                               "nothing was changed")
        if full is not None:
            raise full from None
        cause = str(exc) if isinstance(exc, AviError) else f"{type(exc).__name__}: {exc}"
        raise AviError(f"the index's Chroma database {folder} does not work: {' '.join(cause.split())}") from None


def verify_index(index) -> None:
    """:func:`verify_chroma` of an opened index against its manifest: ``captions.jsonl`` holds the manifest's
    clip count, the clip collection as many vectors, the transcript collection one per transcript segment.

    Args:
        index: a :class:`avi.index.store.VideoIndex` (a read-only one is checked in its private copy).

    Raises:
        AviError: what does not match or answer, with the cause.
    """
    clips = int((index.manifest.get("counts") or {}).get("clips", len(index.captions)))
    if clips != len(index.captions):
        raise AviError(f"its captions.jsonl holds {len(index.captions)} clips, its manifest counts {clips}")
    verify_chroma(index.chroma_dir(), clips, len(index.transcript))


def mount_of(path: Path) -> tuple[str, str]:
    """``(device, mount point)`` of the file system holding ``path`` (the longest mount point above it in
    ``/proc/self/mounts``); ``("?", nearest existing folder)`` where that table cannot be read."""
    real = Path(path).absolute()
    while not real.exists() and real.parent != real:
        real = real.parent
    real = real.resolve()
    best = ("?", str(real))
    try:
        with open("/proc/self/mounts") as f:
            rows = [line.split()[:2] for line in f if len(line.split()) >= 2]
    except OSError:
        return best
    length = -1
    for device, mount in rows:
        mount = mount.replace("\\040", " ")
        if (str(real) == mount or str(real).startswith(mount.rstrip("/") + "/")) and len(mount) > length:
            best, length = (device, mount), len(mount)
    return best


def free_bytes(path: Path) -> int | None:
    """Bytes an unprivileged process may still write on the file system holding ``path`` (None: unknown)."""
    probe = Path(path).absolute()
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    try:
        st = os.statvfs(probe)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def full_disk_error(exc: BaseException, folder: Path, what: str, after: str,
                    source: str = "Chroma") -> DiskFullError | None:
    """The one line for ``exc`` when it means the file system holding ``folder`` is full, else None.

    Full: Chroma's or SQLite's message says so, or (unless the message names a damaged database) fewer than
    :data:`FULL_BELOW_BYTES` are free after the failure.

    Args:
        what: what failed ("the clip embeddings could not be written to PATH").
        after: what the user should know about the index ("the finished stages are kept").
        source: whose message ``exc`` carries ("Chroma", "SQLite").

    Returns:
        "no space left on DEVICE (mounted at PATH, N MiB free): WHAT (SOURCE: ...); free some space and run
        again: AFTER", or None.
    """
    msg = " ".join(str(exc).split())
    low = msg.lower()
    free = free_bytes(folder)
    full = any(w in low for w in _FULL_WORDS) or (
        not any(w in low for w in _DAMAGE_WORDS) and free is not None and free < FULL_BELOW_BYTES)
    if not full:
        return None
    device, mount = mount_of(folder)
    left = f"{free / 2**20:.1f} MiB free" if free is not None else "free space unknown"
    return DiskFullError(f"no space left on {device} (mounted at {mount}, {left}): {what} ({source}: {msg[:160]}); "
                         f"free some space and run again: {after}")


def write_error(exc: BaseException, folder: Path, what: str) -> AviError:
    """One line for a failed write of ``what`` (e.g. "the clip embeddings") into the Chroma database ``folder``.

    A full file system (:func:`full_disk_error`) reads "no space left on DEVICE (mounted at PATH, N MiB free):
    ..."; anything else names Chroma's own error.

    Returns:
        the :class:`AviError` to raise (exit 1; the build's finished stages are kept and a rerun resumes).
    """
    full = full_disk_error(exc, folder, f"{what} could not be written to {folder}", "the finished stages are kept")
    if full is not None:
        return full
    msg = " ".join(str(exc).split())
    return AviError(f"{what} could not be written to the Chroma database {folder}: {type(exc).__name__}: "
                    f"{msg[:300]}")
