"""Chroma used from several threads at once, as avi.jobs.local's question threads do.

Chroma 1.x caches one client system per path and puts it in its cache before starting it: a second thread opening
the same path in between gets a system not yet started and fails with "'RustBindingsAPI' object has no attribute
'bindings'". Two questions of one video answered at once (a batch with ``--concurrency 2``) open that video's
index together; before :data:`avi.index.store.CHROMA_LOCK` the host search of one of them failed now and then
(2 of 24 questions in a 12-run loop of test_batch's job; CI failed on it once).
"""

from __future__ import annotations

import threading

import numpy as np


def test_one_index_opened_and_searched_from_threads_at_once(tmp_path):
    from avi.index.store import CHROMA_LOCK, chroma_client, release_chroma

    paths = [tmp_path / f"index{i}" for i in range(8)]
    for path in paths:
        col = chroma_client(path).create_collection("clips", metadata={"hnsw:space": "cosine"})
        col.add(ids=["a", "b"], embeddings=np.eye(2, 4, dtype=np.float32), documents=["x", "y"])
        release_chroma(path)  # a later open starts a fresh client system, as in a new process
    errors: list[str] = []

    def search(path, start) -> None:
        start.wait()
        try:
            col = chroma_client(path).get_collection("clips")
            with CHROMA_LOCK:
                got = col.query(query_embeddings=np.eye(1, 4, dtype=np.float32), n_results=1)
            assert got["ids"][0] == ["a"]
        except Exception as exc:  # noqa: BLE001 - every failure of every thread is reported
            errors.append(f"{type(exc).__name__}: {exc}")

    for path in paths:
        start = threading.Barrier(4)
        threads = [threading.Thread(target=search, args=(path, start)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
