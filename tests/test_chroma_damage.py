"""An index that opens is an index that works (issue 39, item 2), and Chroma's failures named.

A copy of the session's real ``sign_index`` gets its Chroma database damaged in the ways a disk or a careless
hand damages it; ``ensure_index`` (what ``avi index`` and every question call) must notice it, say why, and
rebuild it, taking over the transcript, captions, graph and summary of the damaged index (the stub captioner of
test_index_build.py counts zero calls; the captions stay the real ones). The batched writes and the full-disk
message are checked against Chroma and ``statvfs`` stand-ins.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from test_index_build import S, StubBackends, copy_index, hidden  # tests/ is on sys.path (conftest)

from avi.errors import AviError
from avi.index import chroma_io
from avi.index.build import ensure_index
from avi.index.chroma_io import add_batched, mount_of, verify_chroma, write_error
from avi.index.store import COLLECTION, VideoIndex, chroma_client, release_chroma


@pytest.fixture
def stub_backends(session_backends):
    return StubBackends(session_backends)


def _truncate(path: Path) -> None:
    db = path / "chroma" / "chroma.sqlite3"
    with open(db, "r+b") as f:
        f.truncate(db.stat().st_size // 2)


def _garbage(path: Path) -> None:
    db = path / "chroma" / "chroma.sqlite3"
    data = bytearray(db.read_bytes())
    data[4096:-4096] = os.urandom(len(data) - 8192)
    db.write_bytes(bytes(data))


def _header(path: Path) -> None:
    db = path / "chroma" / "chroma.sqlite3"
    data = bytearray(db.read_bytes())
    data[:100] = bytes(100)
    db.write_bytes(bytes(data))


def _deleted(path: Path) -> None:
    (path / "chroma" / "chroma.sqlite3").unlink()


def _one_vector_less(path: Path) -> None:
    client = chroma_client(path / "chroma")
    client.get_collection(COLLECTION).delete(ids=["clip-00001"])
    del client
    release_chroma(path / "chroma")


DAMAGE = {"truncated": (_truncate, "malformed"), "garbage": (_garbage, "malformed"),
          "header-zeroed": (_header, "not a database"), "deleted": (_deleted, "does not exist"),
          "one-vector-less": (_one_vector_less, "holds 3 vectors, the index has 4")}


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_damaged_chroma_is_reported_and_rebuilt(kind, sign_index, sign_video, stub_backends, tmp_path, caplog):
    root = tmp_path / "indexes"
    path = copy_index(sign_index, root)
    damage, cause = DAMAGE[kind]
    damage(path)
    VideoIndex(path)  # the manifest and captions still open: only the check finds it
    with caplog.at_level(logging.WARNING, logger="avi.index.build"):
        idx = ensure_index(sign_video, S(root), stub_backends, progress=False)
    warned = [r.getMessage() for r in caplog.records if "rebuilding" in r.getMessage()]
    assert len(warned) == 1 and cause in warned[0] and "Chroma database" in warned[0], warned
    manifest = json.loads((path / "manifest.json").read_text())
    assert cause in manifest["rebuilt_from_broken"]
    assert manifest["reused"]["salvaged"] and "captions" in manifest["reused"]["stages"]
    assert stub_backends.captioner.calls == 0  # the captions were taken over, not made again
    assert [c.text for c in idx.captions] == [c.text for c in sign_index.captions]
    assert "EXIT 42" in idx.search("EXIT 42", stub_backends.embedder)[0].caption.text
    assert hidden(root) == []
    assert ensure_index(sign_video, S(root), stub_backends, progress=False).path == path  # now it passes


def test_damaged_chroma_with_unreadable_captions_is_built_whole(sign_index, sign_video, stub_backends, tmp_path):
    """Captions that do not parse, in both files that hold them, are not taken over: the rebuild captions again
    (and so builds the graph)."""
    root = tmp_path / "indexes"
    path = copy_index(sign_index, root)
    _truncate(path)
    for name in ("captions.jsonl", "captions.partial.jsonl"):
        (path / name).write_text((path / name).read_text() + "{torn\n")
    with pytest.raises(AviError):
        VideoIndex(path)
    idx = ensure_index(sign_video, S(root), stub_backends, progress=False)
    assert stub_backends.captioner.calls == len(idx.captions) == 4


def test_unreadable_captions_are_taken_from_the_finished_clips_file(sign_index, sign_video, stub_backends, tmp_path):
    """captions.jsonl torn, captions.partial.jsonl (the same captions before the speech) intact: the captions are
    taken from it, nothing is captioned or embedded again, and captions.jsonl is whole again."""
    root = tmp_path / "indexes"
    path = copy_index(sign_index, root)
    (path / "captions.jsonl").write_text((path / "captions.jsonl").read_text()[:-40])
    idx = ensure_index(sign_video, S(root), stub_backends, progress=False)
    assert stub_backends.captioner.calls == 0
    assert [c.to_dict() for c in idx.captions] == [c.to_dict() for c in sign_index.captions]
    assert set(idx.manifest["broken_files"]) == {"captions.jsonl"}
    assert {"captions", "embeddings", "graph", "summary"} <= set(idx.manifest["reused"]["stages"])


def test_verify_refuses_a_count_that_differs(sign_index):
    with pytest.raises(AviError, match="holds 4 vectors, the index has 5"):
        verify_chroma(sign_index.chroma_dir(), 5, len(sign_index.transcript))


class _SmallClient:
    """Stands in for a Chroma client with a batch limit of 3; records the batch sizes added."""

    def __init__(self):
        self.sizes: list[int] = []

    def get_max_batch_size(self) -> int:
        return 3

    def add(self, ids, embeddings, metadatas, documents):
        assert len(ids) == len(embeddings) == len(metadatas) == len(documents)
        self.sizes.append(len(ids))


def test_add_batched_stays_under_the_clients_limit():
    c = _SmallClient()
    n = add_batched(c, c, [f"i{k}" for k in range(8)], np.zeros((8, 4), np.float32), [{"k": k} for k in range(8)],
                    [f"d{k}" for k in range(8)])
    assert n == 3 and c.sizes == [3, 3, 2]


@pytest.mark.parametrize("message", ["error returned from database: (code: 13) database or disk is full",
                                     "Error in compaction: Failed to apply logs to the hnsw segment writer"])
def test_full_disk_inside_chroma_is_named(message, tmp_path, monkeypatch):
    """Both ways a full disk surfaces from Chroma read "no space left on DEVICE (mounted at PATH ...)"."""
    monkeypatch.setattr(chroma_io, "free_bytes", lambda path: 12 * 1024)
    err = write_error(RuntimeError(message), tmp_path / "idx" / "chroma", "the clip embeddings")
    device, mount = mount_of(tmp_path)
    assert str(err).startswith(f"no space left on {device} (mounted at {mount}, 0.0 MiB free)"), str(err)
    assert "the clip embeddings could not be written" in str(err) and err.exit_code == 1


def test_other_chroma_write_failures_keep_their_cause(tmp_path, monkeypatch):
    monkeypatch.setattr(chroma_io, "free_bytes", lambda path: 50 * 2**30)
    err = write_error(ValueError("Expected IDs to be unique"), tmp_path / "chroma", "the clip embeddings")
    assert "no space" not in str(err) and "ValueError: Expected IDs to be unique" in str(err)


def test_mount_of_finds_the_file_system(tmp_path):
    device, mount = mount_of(tmp_path / "not" / "yet")
    assert device and Path(tmp_path).resolve().is_relative_to(mount)
    assert shutil.disk_usage(mount).total > 0


def _panic_type():
    """A stand-in for pyo3's ``pyo3_runtime.PanicException`` (a BaseException, as pyo3 makes it)."""
    return type("PanicException", (BaseException,), {"__module__": "pyo3_runtime"})


def test_a_panic_becomes_one_error_and_its_report_stays_off_stderr(capfd):
    """Issue 55, item 1: a Rust panic inside a Chroma call is a ChromaPanic (an AviError); the lines Rust's panic
    hook writes to file descriptor 2 are dropped, anything else written there meanwhile is kept."""
    from avi.index.chroma_panic import ChromaPanic, contain_panics, is_panic

    panic = _panic_type()
    assert is_panic(panic("x")) and not is_panic(RuntimeError("x"))
    with pytest.raises(ChromaPanic, match="Chroma's native code failed: Expect it to be fetched: malformed"):
        with contain_panics():
            os.write(2, b"\nthread '<unnamed>' (1) panicked at rust/sqlite/src/db.rs:245:14:\n"
                        b"Expect it to be fetched: malformed\nstack backtrace:\nnote: run with `RUST_BACKTRACE=1`\n"
                        b"kept line\n")
            raise panic("Expect it to be fetched: malformed")
    assert capfd.readouterr().err == "kept line\n"
    with contain_panics():  # no panic: everything written is kept, as written
        os.write(2, b"   3: a numbered line\n")
    assert capfd.readouterr().err == "   3: a numbered line\n"


def test_a_panic_in_verify_is_a_damaged_database(tmp_path, monkeypatch):
    """verify_chroma reports a panic as the database not working (the index check then rebuilds it)."""
    panic = _panic_type()

    def explode(path):
        raise panic("Expect it to be fetched: database disk image is malformed")
    monkeypatch.setattr(chroma_io, "chroma_client", explode)
    monkeypatch.setattr(chroma_io, "free_bytes", lambda path: 50 * 2**30)
    with pytest.raises(AviError, match="does not work: Chroma's native code failed: .*malformed"):
        verify_chroma(tmp_path / "chroma", 3, 0)


def test_a_full_disk_during_verify_is_no_damage(tmp_path, monkeypatch):
    """Issue 55, item 11: Chroma's 'database or disk is full' while checking is a DiskFullError, not damage."""
    def full(path):
        raise RuntimeError("error returned from database: (code: 13) database or disk is full")
    monkeypatch.setattr(chroma_io, "chroma_client", full)
    monkeypatch.setattr(chroma_io, "free_bytes", lambda path: 300 * 1024)
    with pytest.raises(chroma_io.DiskFullError, match=r"no space left on .*0\.3 MiB free.*could not be checked"):
        verify_chroma(tmp_path / "chroma", 3, 0)
