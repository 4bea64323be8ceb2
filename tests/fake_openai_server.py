"""A local OpenAI-compatible TEST DOUBLE server (not a model, not part of avi).

It listens on 127.0.0.1 at a free port in a background thread
(``http.server.ThreadingHTTPServer``: one thread per request, so concurrent
clients are served concurrently), records every request, and serves:

* ``GET /v1/models``: the configured model names;
* ``POST /v1/chat/completions``: the next scripted reply (or ``reply_fn(body)``
  once the script is used up), with usage counts;
* ``POST /v1/embeddings``: deterministic pseudo-random vectors seeded by the
  sha256 of each input text (deliberately *not* unit length, so clients must
  normalise), as ``float`` lists or ``base64`` float32 per ``encoding_format``.

Scripted replies are a string (the message content), or a dict with
``content`` and optionally ``status`` (an HTTP error status with that code),
``finish_reason``, ``delay_s``, or a callable ``body -> str | dict``.

Usage::

    with FakeOpenAIServer(replies=['{"a": 1}']) as srv:
        client = ChatClient.connect(srv.base_url)
        ...
        srv.chat_requests[0]["messages"]
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import numpy as np


def fake_embedding(text: str, dim: int) -> np.ndarray:
    """The fake server's vector for ``text``: float32 (dim,), seeded by sha256, not normalised."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    return (np.random.default_rng(seed).standard_normal(dim) * 3.0).astype(np.float32)


class FakeOpenAIServer:
    """OpenAI-compatible test double on 127.0.0.1 (see module docstring).

    Args:
        replies: scripted chat replies, consumed in order (thread-safe).
        reply_fn: called with the request body when the script is empty; without
            it an empty script answers HTTP 500 (so a test notices extra calls).
        models: names listed by ``/v1/models`` (the first is the default model).
        embedding_dim: length of the fake embedding vectors.

    Attributes:
        requests: every request as ``{"method", "path", "body"}`` (body parsed JSON or None).
        max_in_flight: most chat requests that were being answered at the same time.
        base_url: ``http://127.0.0.1:<port>/v1`` once started.
    """

    def __init__(self, replies: list | None = None, reply_fn: Callable[[dict], Any] | None = None,
                 models: tuple[str, ...] | list[str] = ("fake-vlm",), embedding_dim: int = 16):
        self._script: deque = deque(replies or [])
        self.reply_fn = reply_fn
        self.models = list(models)
        self.embedding_dim = embedding_dim
        self.requests: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.base_url = ""

    # -------------------------------------------------------------- control

    def add_replies(self, *replies: Any) -> None:
        """Append scripted chat replies."""
        with self._lock:
            self._script.extend(replies)

    @property
    def chat_requests(self) -> list[dict]:
        """Bodies of the chat completion requests, in arrival order."""
        return [r["body"] for r in self.requests if r["path"].endswith("/chat/completions")]

    @property
    def embedding_requests(self) -> list[dict]:
        """Bodies of the embeddings requests, in arrival order."""
        return [r["body"] for r in self.requests if r["path"].endswith("/embeddings")]

    def start(self) -> "FakeOpenAIServer":
        handler = _make_handler(self)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        port = self._httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -------------------------------------------------------------- behaviour

    def _next_reply(self, body: dict) -> Any:
        with self._lock:
            item = self._script.popleft() if self._script else None
        if item is None:
            if self.reply_fn is None:
                return {"status": 500, "content": "fake server: no scripted reply left"}
            item = self.reply_fn
        return item(body) if callable(item) else item

    def chat(self, body: dict) -> tuple[int, dict]:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return self._chat(body)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _chat(self, body: dict) -> tuple[int, dict]:
        reply = self._next_reply(body)
        if isinstance(reply, str):
            reply = {"content": reply}
        if reply.get("delay_s"):
            time.sleep(reply["delay_s"])
        if reply.get("status"):
            return reply["status"], {"error": {"message": reply.get("content", "error"), "type": "fake_error",
                                               "code": reply["status"]}}
        content = reply.get("content", "")
        n_prompt = 0
        for m in body.get("messages", []):
            c = m.get("content")
            if isinstance(c, str):
                n_prompt += len(c.split())
            elif isinstance(c, list):
                n_prompt += sum(len(p.get("text", "").split()) if p.get("type") == "text" else 64 for p in c)
        return 200, {
            "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model") or self.models[0],
            "choices": [{"index": 0, "finish_reason": reply.get("finish_reason", "stop"),
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": n_prompt, "completion_tokens": len(content.split()),
                      "total_tokens": n_prompt + len(content.split())},
        }

    def embeddings(self, body: dict) -> tuple[int, dict]:
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not all(isinstance(t, str) for t in inputs):
            return 400, {"error": {"message": "input must be a string or a list of strings", "type": "fake_error"}}
        if body.get("model") not in self.models:
            return 404, {"error": {"message": f"model {body.get('model')!r} not found", "type": "fake_error"}}
        data = []
        for i, text in enumerate(inputs):
            vec = fake_embedding(text, self.embedding_dim)
            emb: Any = (base64.b64encode(vec.astype("<f4").tobytes()).decode()
                        if body.get("encoding_format") == "base64" else vec.tolist())
            data.append({"object": "embedding", "index": i, "embedding": emb})
        n = sum(len(t.split()) for t in inputs)
        return 200, {"object": "list", "model": body["model"], "data": data,
                     "usage": {"prompt_tokens": n, "total_tokens": n}}


def _make_handler(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # keep pytest output clean
            pass

        def _send(self, status: int, payload: dict) -> None:
            blob = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(blob)))
            self.send_header("Connection", "close")  # no keep-alive: a stopped server really is gone
            self.end_headers()
            self.close_connection = True
            self.wfile.write(blob)

        def _record(self, body: Any) -> None:
            with server._lock:
                server.requests.append({"method": self.command, "path": self.path, "body": body})

        def do_GET(self) -> None:  # noqa: N802
            self._record(None)
            if self.path.rstrip("/").endswith("/v1/models"):
                self._send(200, {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "fake"}
                                                            for m in server.models]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._record(None)
                self._send(400, {"error": {"message": "body is not JSON"}})
                return
            self._record(body)
            if self.path.endswith("/chat/completions"):
                self._send(*server.chat(body))
            elif self.path.endswith("/embeddings"):
                self._send(*server.embeddings(body))
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

    return Handler
