"""Lifecycle of the embedded llama.cpp server (cpu profile orchestrator).

avi starts llama-cpp-python's OpenAI-compatible server on 127.0.0.1 at a free
port, waits until it answers ``GET /v1/models``, reuses it for every request
of the run, and stops it at exit (also when avi is killed: the server asks
Linux for a parent-death signal). avi talks to it only through
:class:`avi.backends.llm.ChatClient`, the same client it uses for vLLM.
"""

from __future__ import annotations

import atexit
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from avi.errors import LLMUnavailableError


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class LlamaCppServer:
    """One ``llama_cpp.server`` subprocess serving one GGUF on loopback.

    Args:
        gguf: path of the (verified) GGUF file.
        n_ctx: context length in tokens.
        n_threads: CPU threads for prefill and decode.
        start_timeout_s: how long to wait for the server to answer.
        host: bind address; loopback only.
        state_dir: where the prompt-prefix KV state persists between runs (None: off);
            see :mod:`avi.backends.llama_prefix_cache`.
        model_key: identifies the weights for that state (their sha256).

    Attributes:
        base_url: ``http://127.0.0.1:<port>/v1`` once started.
        model_alias: the model name the server answers to.
        log_path: file holding the server's stdout and stderr.
    """

    model_alias = "avi-orchestrator"

    def __init__(self, gguf: Path, n_ctx: int = 8192, n_threads: int | None = None,
                 start_timeout_s: float = 180.0, host: str = "127.0.0.1", state_dir: Path | None = None,
                 model_key: str = ""):
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("the embedded server binds to loopback only")
        self.gguf = Path(gguf)
        self.n_ctx = n_ctx
        self.n_threads = n_threads or max(1, os.cpu_count() or 1)
        self.start_timeout_s = start_timeout_s
        self.host = host
        self.state_dir = state_dir
        self.model_key = model_key
        self.port: int | None = None
        self.proc: subprocess.Popen | None = None
        self.log_path: Path | None = None
        self._log = None
        self._ready = False

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def launch(self) -> "LlamaCppServer":
        """Start the subprocess and return at once (it loads the model meanwhile); :meth:`start` then waits.

        Lets a caller overlap the server's start (about 2 s on 2 cores) with its own work. Idempotent.
        """
        if self.proc is not None:
            return self
        self.port = free_port(self.host)
        fd, name = tempfile.mkstemp(prefix="avi-llama-server-", suffix=".log")
        os.close(fd)
        self.log_path = Path(name)
        self._log = open(self.log_path, "wb")
        cmd = [sys.executable, "-m", "avi.backends.llama_server_main", "--model", str(self.gguf),
               "--alias", self.model_alias, "--host", self.host, "--port", str(self.port),
               "--n_ctx", str(self.n_ctx), "--n_threads", str(self.n_threads), "--parent-pid", str(os.getpid())]
        if self.state_dir is not None:
            cmd += ["--state-dir", str(self.state_dir), "--model-key", self.model_key]
        env = dict(os.environ, HF_HUB_OFFLINE="1", NO_PROXY="127.0.0.1,localhost")
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=env)
        atexit.register(self.stop)
        return self

    def start(self) -> "LlamaCppServer":
        """Start the subprocess (unless :meth:`launch` did) and block until it serves.

        Raises:
            LLMUnavailableError: it exited or did not answer within the timeout
                (the message quotes the end of its log).
        """
        self.launch()
        if self._ready:
            return self
        deadline = time.monotonic() + self.start_timeout_s
        with httpx.Client(trust_env=False, timeout=2.0) as client:
            while time.monotonic() < deadline:
                code = self.proc.poll()
                if code is not None:
                    tail = self._log_tail()
                    self.stop()
                    raise LLMUnavailableError(f"the embedded llama.cpp server exited with code {code}: {tail}")
                try:
                    if client.get(f"{self.base_url}/models").status_code == 200:
                        self._ready = True
                        return self
                except httpx.HTTPError:
                    pass
                time.sleep(0.1)
        tail = self._log_tail()
        self.stop()
        raise LLMUnavailableError(f"the embedded llama.cpp server did not answer within "
                                  f"{self.start_timeout_s:.0f}s: {tail}")

    def _log_tail(self, n: int = 300) -> str:
        try:
            text = self.log_path.read_text(errors="replace").strip() if self.log_path else ""
        except OSError:
            return ""
        return " | ".join(text[-n:].splitlines()[-3:]) or "(no output)"

    def stop(self) -> None:
        """Terminate the server (SIGTERM, then SIGKILL after 10 s). Safe to call twice."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.log_path is not None and proc is not None and proc.returncode in (0, -15, None):
            self.log_path.unlink(missing_ok=True)

    def __enter__(self) -> "LlamaCppServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
