"""One video's database on disk: manifest, captions, Chroma collection, entity graph.

Layout of an index directory (AVI §3.2: captions, embeddings, entity graph;
raw frames are read from the video itself by timestamp)::

    <index_root>/<video sha256[:16]>-<fingerprint[:12]>/
        manifest.json    video facts, settings, captioner and embedder, "complete": true
        captions.jsonl   one Caption per clip, in time order (with the speech said during it)
        transcript.jsonl transcript segments (subtitles and/or ASR), in time order
        chroma/          Chroma PersistentClient; collections "clips" and "transcript" (cosine space)
        subjects.json    the subject registry merged across clips (global ids S1, S2, ...)
        tracks.json      object tracks over the sampled frames (ids T1, T2, ...; cpu captioner); person tracks
                         carry their person subject (P1, P2, ...)
        person_faces.npz face descriptors of the person subjects that showed a face (for linking across videos)
        graph.json       entity graph, networkx node-link JSON (subjects keyed by the registry on load)

A directory is trusted only when its manifest says ``"complete": true``; the
builder writes that manifest last and moves the directory into place atomically.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import networkx as nx
import numpy as np
from pydantic import ValidationError

from avi.backends.asr import TranscriptSegment
from avi.backends.embedder import Embedder, embed_query
from avi.backends.types import Caption
from avi.errors import AviError
from avi.index.chroma_panic import CHROMA_LOCK, ChromaPanic, contain_panics
from avi.index.person_subjects import FACES_FILE, load_subject_faces
from avi.index.stage_schemas import Graph, validation_cause

log = logging.getLogger(__name__)

SCHEMA_VERSION = 2
COLLECTION = "clips"
TRANSCRIPT_COLLECTION = "transcript"


class ChromaEmbeddingFunction:
    """Adapter from our :class:`Embedder` to Chroma's embedding-function protocol.

    Chroma must never fall back to its default embedding function: that one
    downloads an ONNX model at run time and fails on an air-gapped machine.
    """

    def __init__(self, embedder: Embedder | None):
        self._embedder = embedder

    def __call__(self, input: Sequence[str]) -> list[np.ndarray]:  # noqa: A002 - Chroma's name
        if self._embedder is None:
            raise AviError("this Chroma collection was opened without avi's embedder")
        return list(self._embedder.embed(list(input)))

    def embed_query(self, input: Sequence[str]) -> list[np.ndarray]:  # noqa: A002
        return self(input)

    def embed_documents(self, input: Sequence[str]) -> list[np.ndarray]:  # noqa: A002
        return self(input)

    @staticmethod
    def name() -> str:
        return "avi"

    def is_legacy(self) -> bool:
        return False

    def default_space(self) -> str:
        return "cosine"

    def supported_spaces(self) -> list[str]:
        return ["cosine"]

    def get_config(self) -> dict:
        if self._embedder is None:
            return {}
        return {"embedder": self._embedder.name, "dim": self._embedder.dim}

    @staticmethod
    def build_from_config(config: dict) -> "ChromaEmbeddingFunction":
        # Chroma rebuilds stored embedding functions when it lists collections; avi always
        # passes the real one when it opens a collection, so an unbound one is enough here.
        return ChromaEmbeddingFunction(None)

    @staticmethod
    def validate_config(config: dict) -> None:
        return None

    def validate_config_update(self, old_config: dict, new_config: dict) -> None:
        return None


def chroma_client(path: Path):
    """A Chroma ``PersistentClient`` at ``path`` with anonymized telemetry off (made under :data:`CHROMA_LOCK`).

    Raises:
        ChromaPanic: Chroma's native code panicked opening a damaged database (:mod:`avi.index.chroma_panic`).
    """
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    with contain_panics():
        return chromadb.PersistentClient(path=str(path), settings=ChromaSettings(anonymized_telemetry=False,
                                                                                 allow_reset=False))


def release_chroma(path: Path) -> None:
    """Drop Chroma's cached client system for ``path`` (before moving or deleting it)."""
    with CHROMA_LOCK:
        try:
            from chromadb.api.shared_system_client import SharedSystemClient

            SharedSystemClient._identifier_to_system.pop(str(path), None)  # noqa: SLF001
        except Exception:  # pragma: no cover - internal layout differs between Chroma versions
            try:
                from chromadb.api.client import SharedSystemClient as S

                S.clear_system_cache()
            except Exception:
                pass


def _tree_writable(folder: Path) -> bool:
    """Whether this process may write every folder and file under ``folder`` (True when it does not exist:
    Chroma then fails on its own with its message)."""
    if not folder.exists():
        return True
    for dirpath, _dirs, files in os.walk(folder):
        if not os.access(dirpath, os.W_OK | os.X_OK):
            return False
        if any(not os.access(os.path.join(dirpath, f), os.W_OK) for f in files):
            return False
    return True


def _private_copy(folder: Path) -> Path:
    """A copy of ``folder`` in a new private temporary folder (0700 folders, 0600 files), for opening a read-only
    Chroma database.

    Raises:
        AviError: ``folder`` cannot be read or the copy cannot be written (names the folder).
    """
    tmp = Path(tempfile.mkdtemp(prefix="avi-chroma-ro-"))
    dst = tmp / folder.name
    try:
        for dirpath, _dirs, files in os.walk(folder):
            rel = Path(dirpath).relative_to(folder)
            (dst / rel).mkdir(mode=0o700, parents=True, exist_ok=True)
            for f in files:
                target = dst / rel / f
                shutil.copyfile(os.path.join(dirpath, f), target)
                os.chmod(target, 0o600)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise AviError(f"the index's Chroma database {folder} is read-only and could not be copied to "
                       f"{tmp} to be opened: {exc.strerror or exc}") from None
    return dst


def _drop_copy(tmp: Path) -> None:
    release_chroma(tmp / "chroma")
    shutil.rmtree(tmp, ignore_errors=True)


@dataclass
class RetrievedClip:
    """A clip returned by :meth:`VideoIndex.search`.

    Attributes:
        caption: the clip's caption.
        similarity: cosine similarity to the query in [-1, 1].
    """

    caption: Caption
    similarity: float


class VideoIndex:
    """Read access to a complete index directory.

    Nothing in the directory is written, so a read-only index (folder or file system) can be queried: its Chroma
    database, which Chroma writes to when it opens it, is then opened from a private temporary copy.

    Args:
        path: the index directory.

    Raises:
        AviError: the directory is missing, incomplete or from another schema.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        manifest_path = self.path / "manifest.json"
        try:
            self.manifest = json.loads(manifest_path.read_text())
        except (OSError, ValueError):
            raise AviError(f"not a complete avi index: {self.path}") from None
        if not isinstance(self.manifest, dict) or not self.manifest.get("complete") \
                or self.manifest.get("schema") != SCHEMA_VERSION:
            raise AviError(f"index is incomplete or from another avi version: {self.path}")
        try:
            self.captions: list[Caption] = [
                Caption.from_dict(json.loads(line))
                for line in (self.path / "captions.jsonl").read_text().splitlines() if line.strip()
            ]
        except (OSError, ValueError, TypeError, AttributeError):
            raise AviError(f"index is damaged (captions unreadable): {self.path}") from None
        tpath = self.path / "transcript.jsonl"
        try:
            self.transcript: list[TranscriptSegment] = [
                TranscriptSegment.from_dict(json.loads(line))
                for line in (tpath.read_text().splitlines() if tpath.exists() else []) if line.strip()
            ]
        except (OSError, ValueError, TypeError, AttributeError):
            raise AviError(f"index is damaged (transcript unreadable): {self.path}") from None
        #: LLM stages not built yet (``avi index`` builds them, or the first tool call that needs one;
        #: avi/index/build.py, finish_index; avi/index/lazy.py)
        self.pending: list[str] = list(self.manifest.get("pending") or [])
        self._graph: nx.DiGraph | None = None
        self._subjects: list[dict] | None = None
        self._tracks: list[dict] | None = None
        self._person_faces: dict[str, np.ndarray] | None = None
        self._collections: dict[str, object] = {}
        self._chroma: Path | None = None
        # What of this index could not be used, and why (part -> cause): see note_problem.
        self.problems: dict[str, str] = {}

    def reload_manifest(self) -> list[str]:
        """Read the manifest again: a pending stage may have been built since this index was opened (by a tool that
        needed it, :mod:`avi.index.lazy`, or by another process). A stage built since is read from disk on its
        next use. An unreadable manifest leaves everything as it was.

        Returns:
            the stages built since the manifest was last read.
        """
        try:
            manifest = json.loads((self.path / "manifest.json").read_text())
        except (OSError, ValueError):
            return []
        if not isinstance(manifest, dict) or not isinstance(manifest.get("pending") or [], list):
            return []
        pending = list(manifest.get("pending") or [])
        built = [s for s in self.pending if s not in pending]
        self.manifest, self.pending = manifest, pending
        if "graph" in built:
            self._graph = None
        return built

    def note_problem(self, part: str, cause: str, consequence: str) -> None:
        """Record that ``part`` of this index could not be used (``problems[part] = cause``), logged once per part.

        Args:
            part: e.g. ``"entity graph (graph.json)"``.
            cause: the error, as text.
            consequence: what avi does instead, for the log line.
        """
        if part not in self.problems:
            log.warning("index %s: the %s cannot be used (%s); %s", self.path, part, cause, consequence)
        self.problems[part] = cause

    def chroma_dir(self) -> Path:
        """The Chroma folder this index reads (:meth:`_chroma_dir`)."""
        return self._chroma_dir()

    def _chroma_dir(self) -> Path:
        """The Chroma folder to open: the index's own, or, when any of it cannot be written (a read-only index
        root or file system), a private temporary copy, since Chroma writes to its database when it opens it.
        The copy is removed when this object is collected or the process ends."""
        if self._chroma is None:
            src = self.path / "chroma"
            self._chroma = src if _tree_writable(src) else _private_copy(src)
            if self._chroma != src:
                weakref.finalize(self, _drop_copy, self._chroma.parent)
        return self._chroma

    @property
    def duration_s(self) -> float:
        return float(self.manifest["video"]["duration_s"])

    @property
    def graph(self) -> nx.DiGraph:
        """The entity graph (``graph.json``), loaded on first use, its subjects keyed by the subject registry.

        Subject nodes the registry accounts for become ``subject:<global id>`` with the registry's
        name and the per-clip mentions linked (:func:`avi.index.graph.registry.key_by_registry`);
        this happens in memory at load, so indexes built before it are used without a rebuild.

        Raises:
            AviError: it cannot be read (recorded in :attr:`problems` first).
        """
        if self._graph is None:
            from avi.index.graph import load_graph
            from avi.index.graph.registry import key_by_registry

            if "graph" in self.pending and not (self.path / "graph.json").exists():
                raise AviError(f"the entity graph of {self.path} is not built yet (avi index builds it, or "
                               f"the first graph_retrieve call)")
            try:
                Graph.model_validate_json((self.path / "graph.json").read_bytes())  # shape and types first
                g = load_graph(self.path / "graph.json")
            except ValidationError as exc:
                cause = f"graph.json: {validation_cause(exc)}"
                self.note_problem("entity graph (graph.json)", cause, "graph_retrieve is not offered")
                raise AviError(f"the entity graph of {self.path} cannot be read: {cause}") from None
            except (OSError, ValueError, TypeError, KeyError, AttributeError, nx.NetworkXError) as exc:
                cause = f"{type(exc).__name__}: {exc}"
                self.note_problem("entity graph (graph.json)", cause, "graph_retrieve is not offered")
                raise AviError(f"the entity graph of {self.path} cannot be read: {cause}") from exc
            try:
                g = key_by_registry(g, self.subjects, self.captions)
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                self.note_problem("subject registry in the graph", f"{type(exc).__name__}: {exc}",
                                  "the graph keeps its per-clip subject names")
            self._graph = g
        return self._graph

    @property
    def subjects(self) -> list[dict]:
        """The subject registry (``subjects.json``, :func:`avi.index.subjects.merge_subjects`), loaded on first use.

        ``[{id, name, appearance, identity, first_seen, spans, clips}]`` in order of first
        appearance (times in seconds). [] when the index has none (an unreadable file is
        recorded in :attr:`problems`).
        """
        if self._subjects is None:
            self._subjects = self._read_records("subjects.json", "subject registry (subjects.json)",
                                                "the graph keeps its per-clip subject names")
        return self._subjects

    @property
    def tracks(self) -> list[dict]:
        """The object tracks (``tracks.json``, :func:`avi.index.tracks.build_tracks`), loaded on first use.

        ``[{id, label, first_s, last_s, frames, boxes[[t_s, x1, y1, x2, y2]], entry, exit, score}]`` in order of
        first appearance (seconds; pixels of the analysed frame). [] when the index has none (a gpu-profile index,
        one built before tracks; an unreadable file is recorded in :attr:`problems`).
        """
        if self._tracks is None:
            self._tracks = self._read_records("tracks.json", "object tracks (tracks.json)", "no tracks are used")
        return self._tracks

    @property
    def person_faces(self) -> dict[str, np.ndarray]:
        """The person subjects' face descriptors (``person_faces.npz``,
        :func:`avi.index.person_subjects.save_subject_faces`): subject id (``P1``) -> float32 (K, 1024), rows
        L2-normalised; loaded on first use. {} when the index has none (no face large enough, a gpu-profile index,
        one built before they were kept; an unreadable file is recorded in :attr:`problems`).
        """
        if self._person_faces is None:
            try:
                self._person_faces = load_subject_faces(self.path / FACES_FILE)
            except (OSError, ValueError) as exc:
                self.note_problem("person face descriptors (person_faces.npz)", f"{type(exc).__name__}: {exc}",
                                  "people are not linked across videos")
                self._person_faces = {}
        return self._person_faces

    def _read_records(self, name: str, part: str, consequence: str) -> list[dict]:
        """The list of records with an ``id`` in the JSON file ``name`` of the index; [] when it is missing or
        unreadable (then noted in :attr:`problems` as ``part`` with ``consequence``)."""
        path = self.path / name
        if not path.exists():
            return []
        try:
            got = json.loads(path.read_text())
            if not isinstance(got, list):
                raise ValueError(f"expected a list, got {type(got).__name__}")
            return [r for r in got if isinstance(r, dict) and r.get("id")]
        except (OSError, ValueError) as exc:
            self.note_problem(part, f"{type(exc).__name__}: {exc}", consequence)
            return []

    def collection(self, embedder: Embedder, name: str = COLLECTION):
        """A Chroma collection of this index, after checking the embedder matches the one that built it.

        Args:
            name: ``"clips"`` or ``"transcript"``.

        Raises:
            AviError: embedder name or dimension differs from the manifest's.
        """
        want = self.manifest["embedder"]
        if embedder.name != want["name"] or embedder.dim != want["dim"]:
            raise AviError(f"index {self.path.name} was embedded with {want['name']} (dim {want['dim']}), "
                           f"not {embedder.name} (dim {embedder.dim}); rebuild it with `avi index`")
        with CHROMA_LOCK:
            if name not in self._collections:
                with self._chroma_errors():
                    client = chroma_client(self._chroma_dir())
                    self._collections[name] = client.get_collection(
                        name, embedding_function=ChromaEmbeddingFunction(embedder))
            return self._collections[name]

    @contextlib.contextmanager
    def _chroma_errors(self):
        """Chroma's own errors (a database damaged after the index was opened and checked) as one AviError naming
        the index and the cause; ``avi index`` rebuilds such an index (avi/index/build.py, open_checked)."""
        try:
            with contain_panics():
                yield
        except ChromaPanic as exc:
            raise AviError(f"the Chroma database of index {self.path} does not work ({exc}); `avi index` rebuilds "
                           f"it") from None
        except AviError:
            raise
        except Exception as exc:  # noqa: BLE001 - chromadb raises many kinds
            raise AviError(f"the Chroma database of index {self.path} does not work ({type(exc).__name__}: "
                           f"{' '.join(str(exc).split())[:200]}); `avi index` rebuilds it") from None

    def search(self, query: str, embedder: Embedder, top_k: int = 16) -> list[RetrievedClip]:
        """Top-k clips by cosine similarity of caption and query embeddings (AVI §3.3.1).

        Returns:
            at most ``top_k`` clips, most similar first.
        """
        col = self.collection(embedder)
        n = min(max(1, top_k), len(self.captions))
        vec = embed_query(embedder, [query])
        with CHROMA_LOCK, self._chroma_errors():
            res = col.query(query_embeddings=vec, n_results=n, include=["distances", "metadatas"])
        out = []
        for meta, dist in zip(res["metadatas"][0], res["distances"][0]):
            cap = self.captions[int(meta["clip_index"])]
            out.append(RetrievedClip(cap, 1.0 - float(dist)))
        return out

    def search_transcript(self, query: str, embedder: Embedder, top_k: int = 8) -> list[tuple[TranscriptSegment, float]]:
        """Top-k transcript segments by cosine similarity to ``query``, most similar first.

        Returns:
            ``[(segment, similarity)]``; empty when the video has no transcript.
        """
        if not self.transcript:
            return []
        col = self.collection(embedder, TRANSCRIPT_COLLECTION)
        n = min(max(1, top_k), len(self.transcript))
        vec = embed_query(embedder, [query])
        with CHROMA_LOCK, self._chroma_errors():
            res = col.query(query_embeddings=vec, n_results=n, include=["distances", "metadatas"])
        return [(self.transcript[int(m["segment_index"])], 1.0 - float(d))
                for m, d in zip(res["metadatas"][0], res["distances"][0])]

    def clip_at(self, t_s: float) -> Caption | None:
        """Caption of the clip containing time ``t_s`` (seconds)."""
        for cap in self.captions:
            if cap.start_s <= t_s < cap.end_s:
                return cap
        return self.captions[-1] if self.captions and t_s >= self.captions[-1].start_s else None
