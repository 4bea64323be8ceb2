"""A FAKE ``vllm`` executable (TEST DOUBLE, not vLLM): ``vllm serve MODEL --served-model-name NAME --port PORT …``
serves ``GET /v1/models`` (listing NAME) on 127.0.0.1:PORT until SIGTERM.

Tests copy it to ``<tmp>/bin/vllm`` (see :func:`install_fake_vllm`) and put that folder first on PATH, so
``avi serve`` really starts processes, health-checks them, writes their logs and stops them. It logs its argv,
CUDA_VISIBLE_DEVICES and HF_HUB_OFFLINE, and writes its pid to ``$FAKE_VLLM_PIDS/<name>.pid``.
Behaviour by environment: ``FAKE_VLLM_FAIL=<name>`` exits 1 with an error for that server,
``FAKE_VLLM_IGNORE_TERM=<name>`` ignores SIGTERM, ``FAKE_VLLM_DELAY_S`` waits before listening.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path


def install_fake_vllm(bin_dir: Path) -> Path:
    """Write an executable ``vllm`` into ``bin_dir`` that runs this file with the test's Python."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    exe = bin_dir / "vllm"
    exe.write_text(f"#!{sys.executable}\n" + Path(__file__).read_text())
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return exe


def main(argv: list[str]) -> int:
    """Run the fake server for ``vllm`` argv (see the module docstring); returns the exit status."""
    if not argv or argv[0] != "serve":
        print(f"fake vllm: only 'serve' is faked, got {argv}", flush=True)
        return 2
    name = argv[argv.index("--served-model-name") + 1]
    port = int(argv[argv.index("--port") + 1])
    print("fake vllm argv: " + json.dumps(argv), flush=True)
    print(f"fake vllm env: CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '')} "
          f"HF_HUB_OFFLINE={os.environ.get('HF_HUB_OFFLINE', '')}", flush=True)
    pids = os.environ.get("FAKE_VLLM_PIDS")
    if pids:
        Path(pids, f"{name}.pid").write_text(str(os.getpid()))
    if os.environ.get("FAKE_VLLM_FAIL") == name:
        print("INFO loading weights", flush=True)
        print(f"ValueError: fake vllm cannot load {argv[1]}", flush=True)
        return 1
    if os.environ.get("FAKE_VLLM_IGNORE_TERM") == name:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        def on_term(signum, frame):
            print("fake vllm: SIGTERM, shutting down", flush=True)
            raise SystemExit(0)

        signal.signal(signal.SIGTERM, on_term)
    time.sleep(float(os.environ.get("FAKE_VLLM_DELAY_S", "0")))

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            ok = self.path.rstrip("/") == "/v1/models"
            blob = json.dumps({"object": "list", "data": [{"id": name, "object": "model"}]} if ok
                              else {"error": "no route"}).encode()
            self.send_response(200 if ok else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(blob)))
            self.end_headers()
            self.wfile.write(blob)

    httpd = HTTPServer(("127.0.0.1", port), Handler)
    print(f"fake vllm: serving {name} on 127.0.0.1:{port}", flush=True)
    httpd.serve_forever(poll_interval=0.1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
