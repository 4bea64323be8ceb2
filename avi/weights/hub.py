"""The Hugging Face Hub side of ``weights.lock``: ``avi weights lock`` and ``fetch`` of ``kind = "hf"`` entries.

For a *connected* machine only; the air-gapped side never imports this module
(``verify``, ``pack``/``unpack`` and the loaders work from the lock alone).
These are the only code paths of avi that contact a model hub, and only when
asked to: ``avi`` sets ``HF_HUB_OFFLINE=1`` for everything else, and these
functions lift it for the duration of their own calls (:func:`hub_online`).
``HF_ENDPOINT`` (read at call time) points them at a mirror; ``HF_TOKEN`` is
used by huggingface_hub as usual.

``lock``: ``HfApi().model_info(repo, revision, files_metadata=True)`` gives the
commit and every file's size; LFS files come with their sha256, other (small)
files are downloaded and hashed. Only the files matching the entry's
``include`` patterns (minus ``exclude``) are locked. The lock file is rewritten
with tomlkit, so its comments and layout survive.

``fetch``: ``snapshot_download`` at the pinned commit with ``allow_patterns``
naming exactly the locked files that are missing or bad, into a staging
directory ``<models_dir>/.download/<name>/`` (kept between runs, so an
interrupted download resumes); each file is checked against the lock before it
is moved into ``<models_dir>/<path>/``.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from avi.errors import WeightsError
from avi.hashing import sha256_file
from avi.weights.checks import file_problems, record_verified, verify
from avi.weights.lock import HEX40, WeightEntry, safe_relpath


def _hub():
    try:
        import huggingface_hub
    except ImportError:
        raise WeightsError("huggingface_hub is not installed (needed by avi weights lock/fetch for hf entries): "
                           "pip install -e '.[hub]'") from None
    return huggingface_hub


def hub_endpoint() -> str | None:
    """The hub to talk to: ``HF_ENDPOINT`` if set (a mirror, or a test's fake), else huggingface_hub's default."""
    return os.environ.get("HF_ENDPOINT") or None


@contextmanager
def hub_online() -> Iterator[None]:
    """Lift avi's ``HF_HUB_OFFLINE=1`` for the calls inside (huggingface_hub reads the flag at call time)."""
    hub = _hub()
    old_env = os.environ.get("HF_HUB_OFFLINE")
    old_flag = hub.constants.HF_HUB_OFFLINE
    os.environ["HF_HUB_OFFLINE"] = "0"
    hub.constants.HF_HUB_OFFLINE = False
    try:
        yield
    finally:
        hub.constants.HF_HUB_OFFLINE = old_flag
        if old_env is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = old_env


def matches(path: str, include: list[str] | None, exclude: list[str] | None) -> bool:
    """Whether a repo file is locked: it matches an ``include`` glob (default ``*``) and no ``exclude`` glob.

    Globs are fnmatch patterns over the whole POSIX path (``*`` also matches ``/``), as huggingface_hub's
    ``allow_patterns``.
    """
    if path == ".gitattributes":
        return False
    inc = include or ["*"]
    return (any(fnmatch.fnmatchcase(path, p) for p in inc)
            and not any(fnmatch.fnmatchcase(path, p) for p in (exclude or [])))


def _hub_error(what: str, exc: Exception) -> WeightsError:
    msg = " ".join(str(exc).split())[:300]
    return WeightsError(f"{what}: {type(exc).__name__}: {msg} (avi weights lock/fetch of hf entries need a "
                        f"connected machine; HF_ENDPOINT={hub_endpoint() or 'default'})")


def _lock_one(table, endpoint: str | None, update: bool, say: Callable[[str], None]) -> bool:
    """Fill one ``[[weight]]`` tomlkit table from the hub; returns True if it changed."""
    import tomlkit

    hub = _hub()
    name = str(table["name"])
    src = table["source"]
    repo = str(src["repo"])
    current = str(src.get("revision", "") or "")
    ref = current if HEX40.fullmatch(current) and not update else str(src.get("ref", "main"))
    include = [str(p) for p in src.get("include", [])] or None
    exclude = [str(p) for p in src.get("exclude", [])] or None
    api = hub.HfApi(endpoint=endpoint)
    try:
        with hub_online():
            info = api.model_info(repo, revision=ref, files_metadata=True)
    except Exception as exc:  # noqa: BLE001 - any hub failure is the user's to fix (network, name, auth)
        raise _hub_error(f"cannot read {repo}@{ref} for '{name}'", exc) from None
    commit = str(info.sha or "")
    if not HEX40.fullmatch(commit):
        raise WeightsError(f"hub answered {repo}@{ref} without a commit sha (got {commit!r})")
    siblings = sorted((s for s in (info.siblings or []) if matches(s.rfilename, include, exclude)),
                      key=lambda s: s.rfilename)
    if not siblings:
        raise WeightsError(f"'{name}': no file of {repo}@{commit[:12]} matches include={include} exclude={exclude}")
    for pattern in (str(p) for p in src.get("require", [])):
        if not any(fnmatch.fnmatchcase(s.rfilename, pattern) for s in siblings):
            raise WeightsError(f"'{name}': no locked file of {repo}@{commit[:12]} matches the required pattern "
                               f"{pattern!r} (locked would be: {', '.join(s.rfilename for s in siblings)[:300]}); "
                               f"fix include/require in weights.lock")
    files = []
    with tempfile.TemporaryDirectory(prefix="avi-lock-") as tmp:
        for s in siblings:
            rel = safe_relpath(s.rfilename, f"{repo} file")
            if s.lfs is not None and s.lfs.sha256:
                size, sha = int(s.lfs.size), str(s.lfs.sha256)
            else:  # not in LFS: the hub gives a git blob id, not a sha256; small files, hash them here
                try:
                    with hub_online():
                        local = hub.hf_hub_download(repo, s.rfilename, revision=commit, local_dir=tmp,
                                                    endpoint=endpoint)
                except Exception as exc:  # noqa: BLE001
                    raise _hub_error(f"cannot download {repo}/{s.rfilename}@{commit[:12]}", exc) from None
                size, sha = os.path.getsize(local), sha256_file(Path(local))
                if s.size is not None and int(s.size) != size:
                    raise WeightsError(f"{repo}/{s.rfilename}: downloaded {size} bytes, the hub lists {s.size}")
            files.append((rel, size, sha))
    old = [(str(f["path"]), int(f["size"]), str(f["sha256"])) for f in table.get("files", [])]
    changed = not (current == commit and old == files and table.get("pinned") is True)
    src["revision"] = commit
    table["pinned"] = True
    aot = tomlkit.aot()
    for rel, size, sha in files:
        t = tomlkit.table()
        t["path"], t["size"], t["sha256"] = rel, size, sha
        aot.append(t)
    aot[-1].add(tomlkit.nl())
    table["files"] = aot
    total = sum(size for _, size, _ in files)
    say(f"{'locked' if changed else 'same  '}  {name}  {repo}@{commit[:12]}  {len(files)} files, {total / 1e9:.2f} GB")
    return changed


def lock_entries(lock_path: Path, names: list[str], update: bool = False,
                 say: Callable[[str], None] = print) -> list[str]:
    """Fill or refresh the revision, file list, sizes and sha256 of the named ``hf`` entries in ``lock_path``.

    An entry whose ``revision`` is already a commit is re-read at that commit (idempotent) unless
    ``update``; otherwise ``source.ref`` (default ``main``) is resolved to its current commit. Entries of
    other kinds are left alone. The file is rewritten atomically, comments kept.

    Args:
        lock_path: the weights.lock to rewrite.
        names: entries to lock (non-hf names are skipped).
        update: move pinned entries to the current head of their ref.
        say: receives one progress line per entry.

    Returns:
        names of the entries whose pins changed.

    Raises:
        WeightsError: an entry could not be locked (hub unreachable or refusing, no file matches the
            patterns); the entries that could are written first. Or the lock is malformed.
    """
    import tomlkit

    lock_path = Path(lock_path)
    doc = tomlkit.parse(lock_path.read_text())
    wanted = set(names)
    changed, failed = [], []
    for table in doc.get("weight", []):
        if str(table.get("name")) in wanted and str(table.get("source", {}).get("kind")) == "hf":
            try:
                if _lock_one(table, hub_endpoint(), update, say):
                    changed.append(str(table["name"]))
            except WeightsError as exc:  # the others are still locked; the failures are reported at the end
                failed.append(str(exc))
    if changed:
        fd, tmp = tempfile.mkstemp(dir=lock_path.parent, prefix=lock_path.name, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(tomlkit.dumps(doc))
        os.replace(tmp, lock_path)
        from avi.weights.lock import load_lock

        load_lock(lock_path)  # what was written must parse and validate
    if failed:
        raise WeightsError(f"{len(failed)} entr{'y' if len(failed) == 1 else 'ies'} not locked"
                           f"{f' ({len(changed)} others were)' if changed else ''}: {'; '.join(failed)}")
    return changed


def fetch_hf(entry: WeightEntry, models_dir: Path) -> Path:
    """Download the locked files of an ``hf`` entry that are missing or bad, at its pinned commit, then verify.

    Good files already in place are kept; each downloaded file is checked (size, sha256) in the staging
    directory before it replaces anything, so a bad download never overwrites a good file.

    Returns:
        ``models_dir / entry.path``.

    Raises:
        WeightsError: the entry is unpinned, the hub is unreachable, or a downloaded file does not match.
    """
    if not entry.is_pinned:
        raise WeightsError(f"weights '{entry.name}' are unpinned in weights.lock: nothing to fetch against; "
                           f"run first: avi weights lock {entry.name}")
    models_dir = Path(models_dir)
    need = {rel: what for rel, what in file_problems(entry, models_dir)}
    if need:
        hub = _hub()
        repo_path_of = {rel: f.path for (rel, _, _), f in zip(entry.locked_files(), entry.files)}
        repo_paths = [repo_path_of[rel] for rel in need]
        staging = models_dir / ".download" / entry.name
        staging.mkdir(parents=True, exist_ok=True)
        try:
            with hub_online():
                hub.snapshot_download(entry.source["repo"], revision=entry.revision, local_dir=staging,
                                      allow_patterns=[glob.escape(p) for p in repo_paths], endpoint=hub_endpoint())
        except Exception as exc:  # noqa: BLE001
            raise _hub_error(f"cannot download {entry.source['repo']}@{entry.revision[:12]} for '{entry.name}'",
                             exc) from None
        locked = {rel: (size, sha) for rel, size, sha in entry.locked_files()}
        bad = []
        checked = {}
        for repo_path, rel in zip(repo_paths, need):
            f = staging / repo_path
            size, sha = locked[rel]
            if not f.is_file():
                bad.append(f"{repo_path} not downloaded")
                continue
            digest = sha256_file(f) if f.stat().st_size == size else None
            if digest != sha:
                f.unlink()
                bad.append(f"{repo_path} does not match weights.lock "
                           f"({'size' if digest is None else 'sha256 ' + digest[:12] + '…'})")
            else:
                checked[rel] = f
        if bad:
            raise WeightsError(f"weights '{entry.name}' from {entry.source['repo']}@{entry.revision[:12]}: "
                               f"{'; '.join(bad)}; nothing was replaced")
        done = {}
        for rel, f in checked.items():
            dest = models_dir / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(f, dest)
            st = dest.stat()
            done[rel] = (st.st_size, st.st_mtime_ns, locked[rel][1])
        record_verified(models_dir, done)
        shutil.rmtree(staging, ignore_errors=True)
        try:
            (models_dir / ".download").rmdir()
        except OSError:
            pass
    return verify(entry, models_dir)
