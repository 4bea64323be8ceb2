"""A FAKE of the Hugging Face Hub's HTTP API, on 127.0.0.1, for tests of ``avi weights lock`` / ``fetch``.

Not the hub: it serves only what huggingface_hub's ``HfApi.model_info(files_metadata=True)``,
``list_repo_tree``, ``hf_hub_download`` and ``snapshot_download`` ask for, from repos held in memory:

* ``GET /api/models/<owner>/<name>/revision/<rev>``: repo info with ``sha`` and ``siblings`` (size, blobId and,
  for "LFS" files, ``lfs.sha256``);
* ``GET /api/models/<owner>/<name>/tree/<rev>[/<dir>]``: the file listing (one page);
* ``HEAD|GET /<owner>/<name>/resolve/<rev>/<path>``: a file, with ``X-Repo-Commit`` and ``ETag`` headers.

Tests point ``HF_ENDPOINT`` at :attr:`FakeHub.url`. :meth:`FakeHub.tamper` makes the fake serve other bytes
for a file than its metadata announces (a compromised mirror), to test that fetch refuses them.
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

LFS_SUFFIXES = (".safetensors", ".bin", ".pth", ".pdiparams", ".gguf")


def _git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class FakeHub:
    """Repos in memory, served over HTTP on 127.0.0.1 (see module docstring).

    Attributes:
        url: the endpoint (``http://127.0.0.1:PORT``).
        requests: ``(method, path)`` of every request, in order.
    """

    def __init__(self):
        self.repos: dict[str, dict] = {}  # repo -> {"refs": {ref: commit}, "commits": {commit: {path: bytes}}}
        self.tampered: dict[tuple[str, str], bytes] = {}
        self.requests: list[tuple[str, str]] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_HEAD(self):
                hub._serve(self, head=True)

            def do_GET(self):
                hub._serve(self, head=False)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # ------------------------------------------------------------- content

    def commit(self, repo: str, files: dict[str, bytes], ref: str = "main") -> str:
        """Add a commit holding ``files`` to ``repo`` and move ``ref`` to it; returns the 40-hex commit id."""
        r = self.repos.setdefault(repo, {"refs": {}, "commits": {}})
        sha = hashlib.sha1(json.dumps([repo, len(r["commits"]), sorted(files)]).encode()).hexdigest()
        r["commits"][sha] = dict(files)
        r["refs"][ref] = sha
        return sha

    def tamper(self, repo: str, path: str, data: bytes) -> None:
        """Serve ``data`` for ``path`` (any commit) while the metadata still describes the real file."""
        self.tampered[(repo, path)] = data

    def _files(self, repo: str, rev: str) -> tuple[str, dict[str, bytes]] | None:
        r = self.repos.get(repo)
        if r is None:
            return None
        commit = r["refs"].get(rev, rev)
        return (commit, r["commits"][commit]) if commit in r["commits"] else None

    # ------------------------------------------------------------- HTTP

    def _send(self, h, status: int, body: bytes = b"", headers: dict | None = None, head: bool = False) -> None:
        h.send_response(status)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if not head:
            h.wfile.write(body)

    def _json(self, h, obj, head: bool = False) -> None:
        self._send(h, 200, json.dumps(obj).encode(), {"Content-Type": "application/json"}, head)

    def _serve(self, h, head: bool) -> None:
        path = unquote(urlsplit(h.path).path)
        self.requests.append((h.command, path))
        parts = path.strip("/").split("/")
        not_found = {"X-Error-Code": "RepoNotFound", "Content-Type": "application/json"}
        if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] in ("revision", "tree"):
            repo, kind, rev = "/".join(parts[2:4]), parts[4], parts[5]
            found = self._files(repo, rev)
            if found is None:
                return self._send(h, 404, b'{"error": "Repository not found"}', not_found, head)
            commit, files = found
            if kind == "revision":
                siblings = []
                for name, data in sorted(files.items()):
                    s = {"rfilename": name, "size": len(data), "blobId": _git_blob_id(data)}
                    if name.endswith(LFS_SUFFIXES):
                        s["lfs"] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "pointerSize": 134}
                    siblings.append(s)
                return self._json(h, {"id": repo, "modelId": repo, "sha": commit, "private": False,
                                      "siblings": siblings}, head)
            prefix = "/".join(parts[6:])
            items = []
            for name, data in sorted(files.items()):
                if prefix and not name.startswith(prefix + "/"):
                    continue
                item = {"type": "file", "oid": _git_blob_id(data), "size": len(data), "path": name}
                if name.endswith(LFS_SUFFIXES):
                    item["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
                items.append(item)
            return self._json(h, items, head)
        if len(parts) >= 5 and parts[2] == "resolve":
            repo, rev, name = "/".join(parts[:2]), parts[3], "/".join(parts[4:])
            found = self._files(repo, rev)
            if found is None or name not in found[1]:
                return self._send(h, 404, b'{"error": "Entry not found"}',
                                  {"X-Error-Code": "EntryNotFound", "Content-Type": "application/json"}, head)
            commit, files = found
            real = files[name]
            etag = hashlib.sha256(real).hexdigest() if name.endswith(LFS_SUFFIXES) else _git_blob_id(real)
            body = self.tampered.get((repo, name), real)
            return self._send(h, 200, body, {"X-Repo-Commit": commit, "ETag": f'"{etag}"',
                                             "Content-Type": "application/octet-stream"}, head)
        return self._send(h, 404, b"{}", {"Content-Type": "application/json"}, head)
