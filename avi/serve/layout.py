"""One vLLM server per model role, and the exact command line that starts it.

The flags are the ones the stack relies on (docs/gpu.md, "Layout", which
lists them per server): the orchestrator needs tool calling with the hermes parser
and the qwen3 reasoning parser; the VLM takes images only; the embedder runs vLLM's
pooling runner (``--runner pooling``; vLLM before 0.10 spelled it ``--task embed``).
Every server binds 127.0.0.1: a server's ``host`` (or a ``--host`` in its ``extra_args``, however abbreviated) that is
not a loopback address is refused unless the layout says ``allow_remote = true`` (vLLM's API has no authentication of
its own); the command gives ``--host``/``--port`` last, so nothing before them can bind another address.

A :class:`ServeLayout` is the ``[serve]`` table of the config: the servers and the GPUs
of the in-process CV tools. :func:`default_layout` is the one for one 8-GPU node:

====  ==========================================  ===================================
GPU   what                                        why
====  ==========================================  ===================================
0,1   orchestrator Qwen3-32B, tensor parallel 2   bf16 weights ≈ 65 GB: two GPUs
2–6   Qwen3-VL-8B-Instruct, data parallel 5       caption throughput: 5 replicas, one endpoint
7     Qwen3-Embedding-4B (memory 0.45) + CV tools Grounding-DINO, PaddleOCR, CLIP in-process
====  ==========================================  ===================================
"""

from __future__ import annotations

import argparse
import ipaddress
import shlex
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from avi.errors import InputError

Role = Literal["orchestrator", "vlm", "embedder"]

# Flags per role that avi's client depends on (not tuning): changing them breaks the client.
ROLE_FLAGS: dict[str, list[str]] = {
    "orchestrator": ["--enable-auto-tool-choice", "--tool-call-parser", "hermes", "--reasoning-parser", "qwen3"],
    "vlm": ["--limit-mm-per-prompt", '{"image": 64, "video": 0}'],
    "embedder": ["--runner", "pooling"],
}

# The settings prefix of each role's endpoint (llm_base_url, vlm_base_url, embedder_base_url).
ROLE_SETTING: dict[str, str] = {"orchestrator": "llm", "vlm": "vlm", "embedder": "embedder"}

HOST = "127.0.0.1"
VLLM_DEFAULT_GPU_MEMORY = 0.9  # vLLM's --gpu-memory-utilization when the flag is not given


def split_endpoint_args(extra_args: list[str]) -> tuple[str | None, str | None, list[str]]:
    """Find the address a server would bind in its ``extra_args``, read the way its own argparse reads them.

    vLLM's ``FlexibleArgumentParser`` and llama.cpp's server parse with Python's argparse, which takes any
    unambiguous prefix of a long option (``--hos 0.0.0.0``, ``--ho=0.0.0.0``) and lets the last occurrence win.
    A parser with just ``--host`` and ``--port`` reads them the same way here (a prefix the server would find
    ambiguous, ``--h``, is taken as ``--host`` too: never less strict than the server); everything else is kept,
    in its order. :func:`vllm_command` then puts avi's own ``--host``/``--port`` last, so whatever the rest
    says (a ``--config`` file included: the command line wins over it), the server binds what the table shows.

    Args:
        extra_args: the server's extra arguments, as in the config.

    Returns:
        ``(host or None, port or None, the other arguments)``.

    Raises:
        ValueError: ``--host``/``--port`` (or a prefix of them) without a value.
    """
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=True, exit_on_error=False)
    parser.add_argument("--host", action="append")
    parser.add_argument("--port", action="append")
    try:
        found, rest = parser.parse_known_args(list(extra_args))
    except argparse.ArgumentError as exc:
        raise ValueError(f"extra_args: {exc}") from None
    return (found.host[-1] if found.host else None), (found.port[-1] if found.port else None), rest


class ServerSpec(BaseModel):
    """One vLLM server.

    Attributes:
        role: orchestrator, vlm or embedder.
        model: local model directory (never a hub id: the node is air-gapped); a relative path is
            relative to the models directory (see :meth:`ServeLayout.resolved`).
        served_model_name: the name clients ask for.
        port: TCP port (``--port``).
        host: the address the server binds (``--host``; default 127.0.0.1). Anything but a loopback address
            needs ``allow_remote = true`` in the layout. A ``--host`` or ``--port`` in ``extra_args``, however
            abbreviated (:func:`split_endpoint_args`), is taken into these fields (the last one given wins, as
            vLLM's parser does), and the command gives them last, so the table and the command show what will
            run.
        gpus: CUDA device indices (CUDA_VISIBLE_DEVICES); empty = no GPU pinning. With the ray
            backend across nodes: the GPUs of each node.
        tensor_parallel: --tensor-parallel-size.
        data_parallel: --data-parallel-size (replicas behind one endpoint).
        pipeline_parallel: --pipeline-parallel-size (multi-node: the number of nodes).
        distributed_executor_backend: --distributed-executor-backend: ``mp`` (one node, vLLM's
            default there) or ``ray`` (several nodes joined with ``ray start``).
        gpu_memory_utilization: --gpu-memory-utilization, the fraction of each GPU's memory this
            server may take (vLLM's default 0.9 when unset); lower it to share a GPU.
        max_model_len: --max-model-len in tokens.
        allowed_local_media_path: --allowed-local-media-path, a directory whose files the server may read
            as ``file://`` image URLs. For the VLM: avi writes the frames it sends there instead of putting
            base64 JPEGs in the request (setting ``vlm_media_dir``; same machine only). A relative path is
            relative to avi's home directory (see :meth:`ServeLayout.resolved`); ``avi serve`` creates it.
        extra_args: appended verbatim after the role's flags.
    """

    model_config = ConfigDict(extra="forbid")

    role: Role
    model: str
    served_model_name: str
    port: int = Field(ge=1, le=65535)
    host: str = Field(default=HOST, min_length=1)
    gpus: list[int] = Field(default_factory=list)
    tensor_parallel: int = Field(default=1, ge=1)
    data_parallel: int = Field(default=1, ge=1)
    pipeline_parallel: int = Field(default=1, ge=1)
    distributed_executor_backend: Literal["mp", "ray"] | None = None
    gpu_memory_utilization: float | None = Field(default=None, gt=0.0, le=1.0)
    max_model_len: int | None = None
    allowed_local_media_path: str | None = None
    extra_args: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _host_and_port_from_extra_args(self) -> "ServerSpec":
        """Take ``--host``/``--port`` out of ``extra_args`` into ``host``/``port``, spelled as the server's own
        argparse reads them (:func:`split_endpoint_args`: ``--hos 0.0.0.0``, ``--ho=0.0.0.0``)."""
        host, port, self.extra_args = split_endpoint_args(self.extra_args)
        if host is not None:
            self.host = host
        if port is not None:
            if not port.isdigit() or not 1 <= int(port) <= 65535:
                raise ValueError(f"extra_args --port {port}: not a port number (1..65535)")
            self.port = int(port)
        return self

    @property
    def loopback(self) -> bool:
        """Whether ``host`` is a loopback address (127.0.0.0/8, ::1, localhost): reachable from this machine only."""
        if self.host.lower() == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host.strip("[]")).is_loopback
        except ValueError:
            return False

    @property
    def address(self) -> str:
        """``HOST:PORT`` as the server binds it (an IPv6 host in brackets)."""
        host = self.host.strip("[]")
        return f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible endpoint avi processes on this machine use: ``http://HOST:PORT/v1``, with
        127.0.0.1 for a server bound to every interface (``0.0.0.0``, ``::``)."""
        host = self.host.strip("[]")
        if host in ("0.0.0.0", "::", ""):
            host = HOST
        return f"http://{f'[{host}]' if ':' in host else host}:{self.port}/v1"

    @property
    def memory_fraction(self) -> float:
        """The fraction of each of its GPUs' memory the server takes (vLLM's default when unset)."""
        return self.gpu_memory_utilization if self.gpu_memory_utilization is not None else VLLM_DEFAULT_GPU_MEMORY

    def gpus_needed(self) -> int:
        """GPUs the server occupies on this node: TP × DP (× PP unless ray spreads the stages over nodes)."""
        per_node_pp = 1 if self.distributed_executor_backend == "ray" else self.pipeline_parallel
        return self.tensor_parallel * self.data_parallel * per_node_pp


def vllm_command(spec: ServerSpec, *, python: str | None = None) -> list[str]:
    """argv that starts ``spec``: ``vllm serve MODEL …``, or ``PYTHON -m vllm.entrypoints.openai.api_server
    --model MODEL …`` when ``python`` is given (a venv without the ``vllm`` script on PATH)."""
    head = ([python, "-m", "vllm.entrypoints.openai.api_server", "--model", spec.model] if python
            else ["vllm", "serve", spec.model])
    argv = head + ["--served-model-name", spec.served_model_name]
    if spec.tensor_parallel > 1:
        argv += ["--tensor-parallel-size", str(spec.tensor_parallel)]
    if spec.pipeline_parallel > 1:
        argv += ["--pipeline-parallel-size", str(spec.pipeline_parallel)]
    if spec.data_parallel > 1:
        argv += ["--data-parallel-size", str(spec.data_parallel)]
    if spec.distributed_executor_backend:
        argv += ["--distributed-executor-backend", spec.distributed_executor_backend]
    if spec.max_model_len:
        argv += ["--max-model-len", str(spec.max_model_len)]
    if spec.gpu_memory_utilization is not None:
        argv += ["--gpu-memory-utilization", f"{spec.gpu_memory_utilization:g}"]
    if spec.allowed_local_media_path:
        argv += ["--allowed-local-media-path", spec.allowed_local_media_path]
    # the address last: no spelling in extra_args (nor a --config file) can bind another (split_endpoint_args)
    return argv + ROLE_FLAGS[spec.role] + list(spec.extra_args) + ["--host", spec.host, "--port", str(spec.port)]


def server_env(spec: ServerSpec) -> dict[str, str]:
    """Environment for ``spec``'s process on top of the caller's: GPU pinning and the offline switches."""
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}
    if spec.gpus:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in spec.gpus)
    return env


def command_line(spec: ServerSpec, *, python: str | None = None) -> str:
    """The shell line that starts ``spec``: ``CUDA_VISIBLE_DEVICES=… vllm serve …`` (quoted for a POSIX shell)."""
    prefix = f"CUDA_VISIBLE_DEVICES={','.join(str(g) for g in spec.gpus)} " if spec.gpus else ""
    return prefix + shlex.join(vllm_command(spec, python=python))


def _default_servers() -> list[ServerSpec]:
    return [
        ServerSpec(role="orchestrator", model="llm/Qwen3-32B", served_model_name="qwen3-32b", port=8000,
                   gpus=[0, 1], tensor_parallel=2, max_model_len=32768),
        ServerSpec(role="vlm", model="vlm/Qwen3-VL-8B-Instruct", served_model_name="qwen3-vl-8b", port=8001,
                   gpus=[2, 3, 4, 5, 6], data_parallel=5, max_model_len=65536, allowed_local_media_path="vlm-media"),
        ServerSpec(role="embedder", model="embedder/Qwen3-Embedding-4B", served_model_name="qwen3-embedding-4b",
                   port=8002, gpus=[7], gpu_memory_utilization=0.45, max_model_len=8192),
    ]


class ServeLayout(BaseModel):
    """The gpu profile's GPU layout: the ``[serve]`` table of the config.

    Attributes:
        servers: the vLLM servers ``avi serve`` starts (``[[serve.servers]]``).
        tools_gpus: GPUs of the in-process CV tools (Grounding-DINO, PaddleOCR, CLIP, Whisper) that run
            inside avi processes: ``avi serve`` prints ``export CUDA_VISIBLE_DEVICES=…`` for them.
        tools_memory_fraction: memory those tools need on each of their GPUs, reserved when checking that
            the servers sharing the GPU fit.
        start_timeout_s: seconds each server has to list its model at ``GET /v1/models``.
        python: start vLLM as ``PYTHON -m vllm.entrypoints.openai.api_server`` instead of the ``vllm``
            script on PATH (a separate venv).
        allow_remote: let a server bind a host that is not loopback (``host = "0.0.0.0"``, a LAN address). Off by
            default: vLLM's API has no authentication, so anyone who reaches the port can use the models.
    """

    model_config = ConfigDict(extra="forbid")

    servers: list[ServerSpec] = Field(default_factory=_default_servers)
    tools_gpus: list[int] = Field(default_factory=lambda: [7])
    tools_memory_fraction: float = Field(default=0.35, ge=0.0, le=1.0)
    start_timeout_s: float = Field(default=1200.0, gt=0)
    python: str | None = None
    allow_remote: bool = False

    def server(self, role: str) -> ServerSpec | None:
        """The server of ``role``, or None if the layout has none."""
        return next((s for s in self.servers if s.role == role), None)

    def resolved(self, models_dir: Path, home: Path | None = None) -> "ServeLayout":
        """A copy whose relative model paths are made absolute under ``models_dir`` and relative
        ``allowed_local_media_path`` values under ``home`` (avi's home directory; left as they are if None)."""
        servers = []
        for s in self.servers:
            update = {}
            if not Path(s.model).is_absolute():
                update["model"] = str(Path(models_dir) / s.model)
            media = s.allowed_local_media_path
            if media and home is not None and not Path(media).is_absolute():
                update["allowed_local_media_path"] = str(Path(home) / media)
            servers.append(s.model_copy(update=update) if update else s)
        return self.model_copy(update={"servers": servers})

    def validate_layout(self) -> "ServeLayout":
        """Check the layout can run; return it.

        Raises:
            InputError: two servers on one port or for one role; a server whose parallelism does not
                match its GPU count, or that lists a GPU twice; a GPU whose servers (and CV tools) take
                more than all of its memory; a server bound to a host that is not loopback without
                ``allow_remote = true``.
        """
        seen_port: dict[int, str] = {}
        seen_role: set[str] = set()
        for s in self.servers:
            if not s.loopback and not self.allow_remote:
                raise InputError(f"serve layout: the {s.role} server would listen on {s.address}, not on this "
                                 f"machine only (loopback); vLLM's API has no authentication, so this needs "
                                 f"allow_remote = true in [serve]")
            if s.port in seen_port:
                raise InputError(f"serve layout: port {s.port} is used by both {seen_port[s.port]} and {s.role}")
            seen_port[s.port] = s.role
            if s.role in seen_role:
                raise InputError(f"serve layout: two servers for role {s.role} (one endpoint per role)")
            seen_role.add(s.role)
            if len(set(s.gpus)) != len(s.gpus):
                raise InputError(f"serve layout: {s.role} lists a GPU twice: gpus = {s.gpus}")
            if s.gpus and s.gpus_needed() != len(s.gpus):
                pp = "" if s.distributed_executor_backend == "ray" else f" × pipeline_parallel {s.pipeline_parallel}"
                raise InputError(f"serve layout: {s.role} needs tensor_parallel {s.tensor_parallel} × data_parallel "
                                 f"{s.data_parallel}{pp} = {s.gpus_needed()} GPUs but gpus lists {len(s.gpus)} "
                                 f"({','.join(map(str, s.gpus))})")
        for gpu, users in sorted(self._gpu_users().items()):
            total = sum(f for _, f in users)
            if len(users) > 1 and total > 1.0 + 1e-9:
                who = " and ".join(f"{name} ({f:.2f})" for name, f in users)
                raise InputError(f"serve layout: GPU {gpu} is shared by {who}: {total:.2f} of its memory > 1; "
                                 f"lower gpu_memory_utilization (vLLM's default is {VLLM_DEFAULT_GPU_MEMORY})")
        return self

    def _gpu_users(self) -> dict[int, list[tuple[str, float]]]:
        users: dict[int, list[tuple[str, float]]] = {}
        for s in self.servers:
            for g in s.gpus:
                users.setdefault(g, []).append((s.role, s.memory_fraction))
        for g in self.tools_gpus:
            users.setdefault(g, []).append(("the CV tools", self.tools_memory_fraction))
        return users

    def gpu_count(self) -> int:
        """GPUs this node needs: one past the highest index the layout names (0 if none)."""
        return max([g for s in self.servers for g in s.gpus] + list(self.tools_gpus), default=-1) + 1

    def exports(self) -> list[tuple[str, str]]:
        """``(variable, value)`` pairs an avi process needs to use these servers: ``AVI_PROFILE=gpu``, each
        role's ``AVI_*_BASE_URL`` and ``AVI_*_MODEL``, ``AVI_VLM_MEDIA_DIR`` when the VLM server reads frames
        from a local directory, and ``CUDA_VISIBLE_DEVICES`` for the CV tools."""
        out = [("AVI_PROFILE", "gpu")]
        for s in self.servers:
            key = ROLE_SETTING[s.role].upper()
            out += [(f"AVI_{key}_BASE_URL", s.base_url), (f"AVI_{key}_MODEL", s.served_model_name)]
            if s.role == "vlm" and s.allowed_local_media_path:
                out.append(("AVI_VLM_MEDIA_DIR", s.allowed_local_media_path))
        if self.tools_gpus:
            out.append(("CUDA_VISIBLE_DEVICES", ",".join(map(str, self.tools_gpus))))
        return out

    def placement_table(self) -> str:
        """One row per GPU: what runs there, with its parallelism and memory fraction (plain text)."""
        rows = [("GPU", "server", "model", "parallelism", "memory", "endpoint")]
        by_gpu: dict[int, list[tuple[str, ...]]] = {}
        unpinned = []
        for s in self.servers:
            par = [f"TP {s.tensor_parallel}"] if s.tensor_parallel > 1 else []
            par += [f"PP {s.pipeline_parallel}"] if s.pipeline_parallel > 1 else []
            par += [f"DP {s.data_parallel}"] if s.data_parallel > 1 else []
            par += [s.distributed_executor_backend] if s.distributed_executor_backend else []
            row = (s.role, s.served_model_name, " ".join(par) or "-", f"{s.memory_fraction:.2f}", s.address)
            if not s.gpus:
                unpinned.append(row)
            for g in s.gpus:
                by_gpu.setdefault(g, []).append(row)
        for g in self.tools_gpus:
            by_gpu.setdefault(g, []).append(("CV tools", "Grounding-DINO, PaddleOCR, CLIP", "in-process",
                                             f"{self.tools_memory_fraction:.2f}", "-"))
        for g in sorted(by_gpu):
            rows += [(str(g),) + r for r in by_gpu[g]]
        rows += [("any",) + r for r in unpinned]
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def default_layout() -> ServeLayout:
    """The layout for one 8-GPU node (see the module docstring); model paths relative to the models directory."""
    return ServeLayout()
