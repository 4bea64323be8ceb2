"""Checking local weights against ``weights.lock`` (size, then sha256, with a record of the last full check),
and the verified path of an entry (:func:`resolve`)."""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path

from avi.errors import WeightsError
from avi.hashing import sha256_file
from avi.weights.lock import (
    CACHE_NAME,
    UnpinnedWeightsError,
    WeightEntry,
    load_lock,
)

log = logging.getLogger("avi.weights")

# ----------------------------------------------------------------- the verification record

# Verified digests per (path, size, mtime) within a process, so a 1 GB GGUF is hashed once per run at most.
_VERIFIED: dict[tuple[str, int, int], str] = {}


def _read_record(models_dir: Path) -> dict:
    try:
        data = json.loads((Path(models_dir) / CACHE_NAME).read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def record_verified(models_dir: Path, checked: dict[str, tuple[int, int, str]]) -> None:
    """Remember fully hashed files in ``<models_dir>/.avi-verified.json``.

    Args:
        checked: ``{path relative to models_dir: (size, mtime_ns, sha256)}`` of files whose hash matched.

    A read-only models directory is fine: nothing is recorded and later loads hash again.
    """
    if not checked:
        return
    models_dir = Path(models_dir)
    data = _read_record(models_dir)
    data.update({rel: list(v) for rel, v in checked.items()})
    try:
        fd, tmp = tempfile.mkstemp(dir=models_dir, prefix=CACHE_NAME, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=0, sort_keys=True)
        os.replace(tmp, models_dir / CACHE_NAME)
    except OSError:
        pass


def file_problems(entry: WeightEntry, models_dir: Path, full: bool = False) -> list[tuple[str, str]]:
    """Check every locked file of ``entry``: sizes first (all of them), then sha256.

    Args:
        models_dir: the models directory.
        full: hash every file; otherwise skip files whose ``(size, mtime)`` match the verification record.

    Returns:
        ``[(path relative to models_dir, what is wrong)]``; empty when all files match. Files that matched
        are added to the verification record.
    """
    models_dir = Path(models_dir)
    problems: list[tuple[str, str]] = []
    todo = []
    for rel, size, sha in entry.locked_files():
        f = models_dir / rel
        if not f.is_file():
            problems.append((rel, "missing"))
            continue
        st = f.stat()
        if st.st_size != size:
            problems.append((rel, f"is {st.st_size} bytes, weights.lock says {size}"))
            continue
        todo.append((rel, f, st, sha))
    record = {} if full else _read_record(models_dir)
    checked: dict[str, tuple[int, int, str]] = {}
    for rel, f, st, sha in todo:
        key = (str(f), st.st_size, st.st_mtime_ns)
        if not full and (_VERIFIED.get(key) == sha or record.get(rel) == [st.st_size, st.st_mtime_ns, sha]):
            continue
        digest = sha256_file(f)
        if digest != sha:
            _VERIFIED.pop(key, None)
            problems.append((rel, f"has sha256 {digest[:12]}…, weights.lock says {sha[:12]}…"))
            continue
        _VERIFIED[key] = digest
        checked[rel] = (st.st_size, st.st_mtime_ns, digest)
    record_verified(models_dir, checked)
    return problems


def _fetch_hint(entry: WeightEntry) -> str:
    if entry.kind == "hf" and not entry.is_pinned:
        return (f"it is also unpinned in weights.lock: on a connected machine run avi weights lock {entry.name}, "
                f"then avi weights fetch {entry.name}")
    if entry.kind == "hf":
        return (f"run: avi weights fetch {entry.name} (connected machine), or carry it over with "
                f"avi weights pack / avi weights unpack")
    return f"run: avi weights fetch {entry.name}"


def verify(entry: WeightEntry, models_dir: Path, *, full: bool = False) -> Path:
    """Return the local path of ``entry`` after checking the size and sha256 of every locked file.

    Args:
        models_dir: the models directory.
        full: re-hash every file (``avi weights verify``); otherwise files unchanged since the last
            successful check (same size and mtime in the verification record) are not hashed again.

    Raises:
        WeightsError: missing (with the command that fetches it), or a file of wrong size or sha256
            (each bad file named).
        UnpinnedWeightsError: present, but weights.lock has no pins for it: nothing was verified.
    """
    target = entry.local_path(models_dir)
    if not entry.checked_file(models_dir).exists():
        raise WeightsError(f"weights '{entry.name}' not found at {target}; {_fetch_hint(entry)}")
    if not entry.is_pinned:
        raise UnpinnedWeightsError(f"weights '{entry.name}' at {target} are unpinned in weights.lock: not verified; "
                                   f"run: avi weights lock {entry.name} (connected machine)")
    problems = file_problems(entry, models_dir, full=full)
    if problems:
        shown = "; ".join(f"{rel} {what}" for rel, what in problems[:5])
        more = f"; and {len(problems) - 5} more" if len(problems) > 5 else ""
        raise WeightsError(f"weights '{entry.name}' at {target} failed verification: {shown}{more}; "
                           f"delete the bad file(s) and {_fetch_hint(entry)}")
    return target


def entry_state(entry: WeightEntry, models_dir: Path) -> tuple[str, bool]:
    """What ``avi weights list`` shows, without hashing anything.

    Returns:
        ``(state, verified)``: state is ``missing``, ``partial`` (some locked files absent) or ``present``;
        verified is True only for a pinned entry whose every file has the size and mtime recorded by the
        last successful check.
    """
    models_dir = Path(models_dir)
    files = entry.locked_files()
    if not files:  # unpinned: only the directory can be looked at
        p = entry.local_path(models_dir)
        present = p.is_file() or (p.is_dir() and any(p.iterdir()))
        return ("present" if present else "missing"), False
    record = _read_record(models_dir)
    seen = verified = 0
    for rel, size, sha in files:
        f = models_dir / rel
        if f.is_file():
            seen += 1
            st = f.stat()
            if st.st_size == size and (record.get(rel) == [st.st_size, st.st_mtime_ns, sha]
                                       or _VERIFIED.get((str(f), st.st_size, st.st_mtime_ns)) == sha):
                verified += 1
    state = "present" if seen == len(files) else ("partial" if seen else "missing")
    return state, verified == len(files)


def check_model_dir(model_dir: Path | str | None, models_dir: Path, lock_path: Path) -> str:
    """Refuse a configured model directory that weights.lock names but that does not match it.

    Called by the backends before they load a gpu-profile model directory (``vlm_model_dir``,
    ``detector_model_dir``, ``clip_model_dir``, ``embedder_model_dir``, ``ocr_paddle_*_dir``). The directory
    is matched to the lock entry whose ``models_dir/<path>`` it is (symlinks resolved); entries nested
    inside it (e.g. ``bert-base-uncased/`` of the original Grounding-DINO release) are checked too when
    present. Sizes are always checked, hashes as :func:`verify` with ``full=False`` does.

    Args:
        model_dir: the configured directory; None means the role is not configured.
        models_dir: the models directory (``settings.models_dir``).
        lock_path: ``settings.weights_lock``.

    Returns:
        ``verified``; ``unpinned`` (the entry has no pins yet: a warning is logged, nothing is claimed);
        ``unlocked`` (no entry names this directory: a directory of the user's own, not checked);
        ``unset`` (``model_dir`` is None).

    Raises:
        WeightsError: a locked file is missing, or has the wrong size or sha256 (named in the message).
    """
    if model_dir is None:
        return "unset"
    d = Path(model_dir).resolve()
    root = Path(models_dir).resolve()
    matched = []
    for e in load_lock(lock_path).values():
        p = (root / e.path).resolve()
        if p == d or (d in p.parents and p.exists()):
            matched.append(e)
    if not matched:
        return "unlocked"
    status = "verified"
    for e in sorted(matched, key=lambda e: len(e.path)):
        try:
            verify(e, models_dir)
        except UnpinnedWeightsError:
            log.warning("weights '%s' at %s are unpinned in weights.lock: not verified "
                        "(run `avi weights lock %s` on a connected machine)", e.name, e.local_path(models_dir), e.name)
            status = "unpinned"
    return status


def resolve(name: str, models_dir: Path, lock_path: Path) -> Path:
    """Local, verified path of the locked weights called ``name``.

    An unpinned entry (an ``hf`` entry before ``avi weights lock``) that is present is returned with a
    logged warning "unpinned: not verified".

    Raises:
        WeightsError: unknown name, missing or mismatching weights.
    """
    entries = load_lock(lock_path)
    if name not in entries:
        raise WeightsError(f"no weights named '{name}' in {lock_path} (known: {', '.join(sorted(entries))})")
    try:
        return verify(entries[name], models_dir)
    except UnpinnedWeightsError as exc:
        log.warning("%s", exc)
        return entries[name].local_path(models_dir)
