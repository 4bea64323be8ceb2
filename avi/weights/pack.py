"""One tarball to carry locked weights across an air gap: ``avi weights pack`` / ``avi weights unpack``.

Layout of the tarball (plain tar: the weights are already compressed data)::

    MANIFEST.json        format, avi version, sha256 of the weights.lock used, and per entry its
                         name, profile, path, revision and files (path under models/, size, sha256)
    weights.lock         a copy of the lock the pack was made with (for comparison; not trusted)
    models/<path>...     the entries' locked files, exactly as under the models directory

``unpack`` trusts only the *local* weights.lock (the reviewed one in the checkout):
every member must be a plain file or directory under ``models/`` (or one of the
two files above), with no absolute path and no ``..``; every file must be named
in the local lock with the same size and sha256. The files are extracted with
``tarfile``'s ``filter="data"`` into a staging directory inside the models
directory, hashed, and moved into place only when *all* of them match, so a bad
tarball installs nothing and never replaces a good file.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tarfile
import time
from pathlib import Path, PurePosixPath
from typing import Callable, Iterable

from avi.errors import InputError, WeightsError
from avi.hashing import sha256_file
from avi.weights.checks import record_verified, verify
from avi.weights.lock import UnpinnedWeightsError, WeightEntry, load_lock

FORMAT = "avi-weights-pack/1"
MANIFEST = "MANIFEST.json"
LOCK_COPY = "weights.lock"
PREFIX = "models/"


def _normalize(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mode = 0o644
    return info


def pack(entries: Iterable[WeightEntry], models_dir: Path, lock_path: Path, out: Path, *, explicit: bool = False,
         say: Callable[[str], None] = print) -> list[str]:
    """Write the locked files of ``entries`` (each verified first) into the tarball ``out``.

    Args:
        entries: candidates, in lock order.
        models_dir: where the files are.
        lock_path: the weights.lock they are verified against (copied into the tarball).
        out: tarball to write (``.tar``; ``.tar.gz``/``.tgz`` compress); written to ``out.partial`` and
            renamed when complete.
        explicit: the entries were named by the user: a missing or unpinned one is an error instead of
            being skipped with a note.
        say: receives one line per entry.

    Returns:
        names of the packed entries.

    Raises:
        WeightsError: a named entry is missing or unpinned, an entry fails verification, or nothing is left
            to pack.
    """
    models_dir, out = Path(models_dir), Path(out)
    chosen: list[WeightEntry] = []
    for e in entries:
        try:
            verify(e, models_dir)
        except UnpinnedWeightsError:
            if explicit:
                raise
            say(f"skip  {e.name}: unpinned in weights.lock (run avi weights lock {e.name} first)")
            continue
        except WeightsError:
            if explicit or e.local_path(models_dir).exists():
                raise
            say(f"skip  {e.name}: not present")
            continue
        chosen.append(e)
    if not chosen:
        raise WeightsError(f"nothing to pack from {models_dir}: no selected entry is present and pinned")
    lock_text = Path(lock_path).read_bytes()
    from avi import __version__

    manifest = {
        "format": FORMAT, "avi_version": __version__,
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "lock_sha256": hashlib.sha256(lock_text).hexdigest(),
        "entries": [{"name": e.name, "profile": e.profile, "path": e.path, "revision": e.revision or None,
                     "files": [{"path": rel, "size": size, "sha256": sha} for rel, size, sha in e.locked_files()]}
                    for e in chosen],
    }
    mode = "w:gz" if out.name.endswith((".gz", ".tgz")) else "w"
    partial = out.with_name(out.name + ".partial")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(partial, mode) as tar:
        for name, data in ((MANIFEST, json.dumps(manifest, indent=1).encode()), (LOCK_COPY, lock_text)):
            info = _normalize(tarfile.TarInfo(name))
            info.size, info.mtime = len(data), int(time.time())
            tar.addfile(info, io.BytesIO(data))
        for e in chosen:
            for rel, _, _ in e.locked_files():
                tar.add(models_dir / rel, arcname=PREFIX + rel, recursive=False, filter=_normalize)
            say(f"packed {e.name}  {len(e.locked_files())} files, {e.total_size / 1e9:.2f} GB")
    os.replace(partial, out)
    return [e.name for e in chosen]


def _member_problem(m: tarfile.TarInfo) -> str | None:
    name = m.name
    p = PurePosixPath(name)
    if not name or p.is_absolute() or name.startswith(("/", "\\")) or "\\" in name:
        return "absolute or odd path"
    if ".." in p.parts:
        return "path with '..'"
    if not (m.isfile() or m.isdir()):
        return "not a plain file or directory (link or device)"
    if m.isfile() and name not in (MANIFEST, LOCK_COPY) and not name.startswith(PREFIX):
        return "outside models/"
    return None


def unpack(tar_path: Path, models_dir: Path, lock_path: Path, say: Callable[[str], None] = print) -> list[str]:
    """Install the files of a tarball made by :func:`pack` into ``models_dir``, all or nothing.

    Args:
        tar_path: the tarball.
        models_dir: the models directory to fill.
        lock_path: the local weights.lock every file is checked against (the tarball's copy is not trusted).
        say: receives one line per installed entry.

    Returns:
        names of the entries that are complete and verified after unpacking.

    Raises:
        InputError: not a readable tarball, no manifest, an unsafe member (absolute path, ``..``, link,
            device, outside ``models/``) or a member missing from the tarball; nothing was extracted.
        WeightsError: a file is not in the local weights.lock or its size or sha256 differs (each named);
            nothing was installed.
    """
    tar_path, models_dir = Path(tar_path), Path(models_dir)
    try:
        tar = tarfile.open(tar_path, "r:*")
    except (OSError, tarfile.TarError) as exc:
        raise InputError(f"cannot read weights tarball {tar_path}: {exc}") from None
    with tar:
        members = tar.getmembers()
        for m in members:
            why = _member_problem(m)
            if why:
                raise InputError(f"refusing {tar_path}: member {m.name!r} is unsafe ({why}); nothing was extracted")
        names = {m.name: m for m in members}
        if MANIFEST not in names:
            raise InputError(f"refusing {tar_path}: no {MANIFEST} (not made by avi weights pack)")
        try:
            manifest = json.loads(tar.extractfile(names[MANIFEST]).read())
            assert manifest.get("format") == FORMAT
        except (ValueError, AssertionError, AttributeError):
            raise InputError(f"refusing {tar_path}: {MANIFEST} is not an {FORMAT} manifest") from None
        listed = {f["path"] for e in manifest.get("entries", []) for f in e.get("files", [])}
        absent = sorted(p for p in listed if PREFIX + p not in names)
        if absent:
            raise InputError(f"refusing {tar_path}: {len(absent)} file(s) listed in its manifest are missing from "
                             f"it (truncated?): {', '.join(absent[:5])}")
        entries = load_lock(lock_path)
        locked = {rel: (e, size, sha) for e in entries.values() for rel, size, sha in e.locked_files()}
        files = [m for m in members if m.isfile() and m.name.startswith(PREFIX)]
        problems = []
        for m in files:
            rel = m.name[len(PREFIX):]
            if rel not in locked:
                problems.append(f"{rel} is not in weights.lock")
            elif m.size != locked[rel][1]:
                problems.append(f"{rel} is {m.size} bytes, weights.lock says {locked[rel][1]}")
        hint = ""
        if LOCK_COPY in names and tar.extractfile(names[LOCK_COPY]).read() != Path(lock_path).read_bytes():
            hint = (f" (the tarball was made with a different weights.lock; compare: "
                    f"tar -xOf {tar_path} {LOCK_COPY} | diff - {lock_path})")
        if problems:
            raise WeightsError(f"refusing {tar_path}: {'; '.join(problems[:5])}"
                               f"{f'; and {len(problems) - 5} more' if len(problems) > 5 else ''}; "
                               f"nothing was installed{hint}")
        models_dir.mkdir(parents=True, exist_ok=True)
        staging = models_dir / f".unpack-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        try:
            try:
                tar.extractall(staging, members=files, filter="data")
            except (tarfile.TarError, OSError) as exc:
                raise InputError(f"refusing {tar_path}: {exc}; nothing was installed") from None
            for m in files:
                rel = m.name[len(PREFIX):]
                digest = sha256_file(staging / m.name)
                if digest != locked[rel][2]:
                    problems.append(f"{rel} has sha256 {digest[:12]}…, weights.lock says {locked[rel][2][:12]}…")
            if problems:
                raise WeightsError(f"refusing {tar_path}: {'; '.join(problems[:5])}"
                                   f"{f'; and {len(problems) - 5} more' if len(problems) > 5 else ''}; "
                                   f"nothing was installed{hint}")
            done = {}
            for m in files:
                rel = m.name[len(PREFIX):]
                dest = models_dir / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staging / m.name, dest)
                st = dest.stat()
                done[rel] = (st.st_size, st.st_mtime_ns, locked[rel][2])
            record_verified(models_dir, done)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    installed = []
    for name in dict.fromkeys(locked[m.name[len(PREFIX):]][0].name for m in files):
        e = entries[name]
        try:
            verify(e, models_dir)
        except WeightsError as exc:
            say(f"partial {e.name}: {exc}")
            continue
        installed.append(e.name)
        say(f"ok    {e.name}  {e.local_path(models_dir)}")
    return installed
