"""Start, health-check, watch and stop the gpu profile's vLLM servers (``avi serve``).

Each server of the layout runs as ``subprocess.Popen(vllm_command(spec), env=os.environ | server_env(spec))``
in its own process group (vLLM's tensor-parallel and data-parallel workers are its children), with stdout
and stderr in ``<home>/logs/serve/<role>.log``. A server is ready when ``GET /v1/models`` lists its served
model name. Stopping sends SIGTERM to each group, waits, then SIGKILLs what is left.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TextIO

import httpx

from avi.errors import AviError, InputError
from avi.serve.layout import HOST, ServeLayout, ServerSpec, command_line, server_env, vllm_command


def log_tail(path: Path, lines: int = 6, chars: int = 400) -> str:
    """The last non-empty lines of a log file as one line (`` | ``-joined, at most ``chars`` characters)."""
    try:
        text = Path(path).read_bytes()[-16384:].decode("utf-8", "replace")
    except OSError:
        return "(no log)"
    tail = " | ".join(" ".join(ln.split()) for ln in text.splitlines() if ln.strip())
    kept = " | ".join(tail.split(" | ")[-lines:]) if tail else "(log is empty)"
    return kept[-chars:]


def lists_model(spec: ServerSpec, timeout_s: float = 2.0) -> bool:
    """True when the server answers ``GET /v1/models`` and lists ``spec.served_model_name``."""
    try:
        with httpx.Client(trust_env=False, timeout=timeout_s) as client:
            r = client.get(f"{spec.base_url}/models")
        return r.status_code == 200 and spec.served_model_name in [m.get("id") for m in r.json().get("data", [])]
    except (httpx.HTTPError, ValueError, AttributeError):
        return False


def _port_busy(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex((HOST, port)) == 0


@dataclass
class RunningServer:
    """A started server: its spec, process and log file."""

    spec: ServerSpec
    proc: subprocess.Popen
    log_path: Path
    log: TextIO


class ServerGroup:
    """The servers of one layout, started together and stopped together (a context manager).

    Args:
        layout: the layout, model paths already resolved (:meth:`ServeLayout.resolved`) and validated.
        log_dir: where ``<role>.log`` files go.
        stop_timeout_s: seconds each server has to exit after SIGTERM before it is killed.
        poll_s: seconds between health checks.
    """

    def __init__(self, layout: ServeLayout, log_dir: Path, *, stop_timeout_s: float = 30.0, poll_s: float = 0.5):
        self.layout = layout
        self.log_dir = Path(log_dir)
        self.stop_timeout_s = stop_timeout_s
        self.poll_s = poll_s
        self.running: list[RunningServer] = []

    def start(self) -> None:
        """Start every server (nothing is waited for). On failure the ones already started are stopped.

        Raises:
            InputError: a model directory is missing or a port is already taken.
            AviError: the vLLM executable cannot be run.
        """
        for spec in self.layout.servers:
            if Path(spec.model).is_absolute() and not Path(spec.model).exists():
                raise InputError(f"{spec.role} server: model directory {spec.model} not found (put the weights "
                                 f"there, or set model in its [[serve.servers]] table)")
            if _port_busy(spec.port):
                raise InputError(f"{spec.role} server: port {spec.port} on {HOST} is already in use (another avi "
                                 f"serve or vLLM?); stop it or change port in its [[serve.servers]] table")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for spec in self.layout.servers:  # vLLM refuses to start when this directory does not exist
            if spec.allowed_local_media_path:
                Path(spec.allowed_local_media_path).mkdir(parents=True, exist_ok=True)
        try:
            for spec in self.layout.servers:
                self._start_one(spec)
        except BaseException:
            self.stop()
            raise

    def _start_one(self, spec: ServerSpec) -> None:
        argv = vllm_command(spec, python=self.layout.python)
        log_path = self.log_dir / f"{spec.role}.log"
        log = open(log_path, "w", encoding="utf-8")  # noqa: SIM115 - closed in stop()
        log.write(f"# avi serve: {command_line(spec, python=self.layout.python)}\n")
        log.flush()
        try:
            proc = subprocess.Popen(argv, env=os.environ | server_env(spec), stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as exc:
            log.close()
            hint = ("install vLLM (pip install vllm) or set python in [serve] to a venv's python that has it"
                    if isinstance(exc, FileNotFoundError) else "")
            raise AviError(f"cannot start the {spec.role} server ({argv[0]}: {exc.strerror or exc}); {hint}"
                           .rstrip("; ")) from None
        self.running.append(RunningServer(spec, proc, log_path, log))

    def wait_ready(self, timeout_s: float | None = None, on_ready: Callable[[RunningServer, float], None] | None = None
                   ) -> None:
        """Wait until every server lists its model at ``GET /v1/models``.

        Args:
            timeout_s: seconds for all of them (default the layout's ``start_timeout_s``).
            on_ready: called with each server and its start-up seconds as it becomes ready.

        Raises:
            AviError: a server exited, or was not ready in time: one line naming it, with its log's tail.
        """
        timeout_s = self.layout.start_timeout_s if timeout_s is None else timeout_s
        t0 = time.monotonic()
        pending = list(self.running)
        while pending:
            for r in list(pending):
                if r.proc.poll() is not None:
                    raise AviError(f"{r.spec.role} server exited with status {r.proc.returncode} before it was "
                                   f"ready (log {r.log_path}): {log_tail(r.log_path)}")
                if lists_model(r.spec):
                    pending.remove(r)
                    if on_ready:
                        on_ready(r, time.monotonic() - t0)
            if pending and time.monotonic() - t0 > timeout_s:
                r = pending[0]
                raise AviError(f"{r.spec.role} server did not list model '{r.spec.served_model_name}' at "
                               f"{r.spec.base_url}/models within {timeout_s:.0f} s (log {r.log_path}): "
                               f"{log_tail(r.log_path)}")
            if pending:
                time.sleep(self.poll_s)

    def watch(self) -> None:
        """Block while every server runs.

        Raises:
            AviError: one exited (naming it, its status and its log's tail).
        """
        while True:
            for r in self.running:
                if r.proc.poll() is not None:
                    raise AviError(f"{r.spec.role} server exited with status {r.proc.returncode} "
                                   f"(log {r.log_path}): {log_tail(r.log_path)}")
            time.sleep(self.poll_s)

    def stop(self) -> None:
        """SIGTERM every server's process group, wait up to ``stop_timeout_s``, SIGKILL what is left."""
        for r in self.running:
            if r.proc.poll() is None:
                _signal_group(r.proc, signal.SIGTERM)
        deadline = time.monotonic() + self.stop_timeout_s
        for r in self.running:
            try:
                r.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(r.proc, signal.SIGKILL)
                r.proc.wait()
            _signal_group(r.proc, signal.SIGKILL)  # workers the main process left behind
            r.log.close()
        self.running = []

    def __enter__(self) -> "ServerGroup":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)  # start_new_session: the group id is the leader's pid
    except (ProcessLookupError, PermissionError):
        pass


def serve_gpu(layout: ServeLayout, log_dir: Path, out: Callable[[str], None] = print, *,
              weights: tuple[Path, Path] | None = None) -> int:
    """``avi serve`` on the gpu profile: start the layout's servers, wait until each is ready, print the
    endpoints and the ``export AVI_…`` lines, stay up until Ctrl-C or SIGTERM, then stop them all.

    Args:
        weights: ``(models_dir, weights_lock)``: every server's model directory that weights.lock names is
            verified first (:func:`avi.weights.check_model_dir`), so a tampered model is never served.

    Raises:
        InputError: the layout is invalid, a model directory is missing, a port is taken.
        WeightsError: a locked model file is missing or does not match weights.lock.
        AviError: a server could not start, was not ready in time, or exited while serving.
    """
    layout.validate_layout()
    if weights is not None:
        from avi.weights import check_model_dir

        for spec in layout.servers:
            if Path(spec.model).exists():
                state = check_model_dir(spec.model, *weights)
                out(f"weights {spec.role:12s} {spec.model}: {state}")
    group = ServerGroup(layout, log_dir)
    out(f"avi serve: starting {len(layout.servers)} vLLM server(s); logs in {log_dir}")
    try:
        group.start()
        group.wait_ready(on_ready=lambda r, s: out(
            f"ready  {r.spec.role:12s} {r.spec.served_model_name:20s} {r.spec.base_url}  "
            f"GPUs {','.join(map(str, r.spec.gpus)) or 'any'}  ({s:.0f} s)"))
        out("# for avi processes (ask, index, batch):")
        for key, value in layout.exports():
            out(f"export {key}={value}")
        out("serving; Ctrl-C or SIGTERM stops every server")
        group.watch()
    except (KeyboardInterrupt, SystemExit):  # Ctrl-C, or SIGTERM through the CLI's handler
        pass
    finally:
        n = len(group.running)
        group.stop()
    out(f"avi serve: stopped {n} server(s)")
    return 0


def dry_run_text(layout: ServeLayout, log_dir: Path, source: str) -> str:
    """What ``avi serve --dry-run`` prints: the GPU placement table, the exact commands with their
    CUDA_VISIBLE_DEVICES, and the ``export`` lines for avi processes.

    Args:
        layout: resolved layout (validated by the caller).
        source: where the layout comes from, for the header line.
    """
    offline = " ".join(f"{k}={v}" for k, v in server_env(ServerSpec(role="vlm", model="-", served_model_name="-",
                                                                    port=1)).items())
    lines = [f"# gpu profile layout: {source}; {layout.gpu_count()} GPUs",
             f"# logs: {log_dir}/<role>.log", "", layout.placement_table(), "",
             f"# commands (each also gets {offline})"]
    lines += [command_line(s, python=layout.python) for s in layout.servers]
    lines += ["", "# then, for avi processes (ask, index, batch):"]
    lines += [f"export {k}={v}" for k, v in layout.exports()]
    return "\n".join(lines)
