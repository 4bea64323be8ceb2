"""``avi doctor``: is this install ready for its profile?

Checks, per profile (``cpu``: the embedded stack; ``gpu``: the paper's models behind vLLM endpoints):

* Python packages the profile imports (gpu: ``vllm`` only when the endpoints are this node's ``avi serve``
  servers); optional ones that are missing are warnings;
* GPUs (``nvidia-smi``, else ``torch.cuda`` on the gpu profile): none is fine on the cpu profile;
* where each in-process model runs (``<role>_device``, ``<role>_dtype``; ``auto`` resolved) and that it can;
* OpenCV's HOG and Haar detectors, the ffmpeg CLI;
* weights against ``weights.lock`` (an entry for the other profile is skipped; an unpinned entry, one
  without a sha256, is reported as ``unpinned``);
* every configured endpoint answers ``GET /v1/models`` and serves the expected model;
* one real forced tool call against the orchestrator (a tiny strict tool schema, ``tool_choice`` as
  ``llm_constrain`` says): a valid call must come back;
* the offline switches (HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE, Chroma telemetry off).
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Callable, Literal

from avi.config import Settings
from avi.errors import AviError
from avi.serve.layout import ROLE_SETTING, ServerSpec

Status = Literal["ok", "warn", "skip", "FAIL"]

# A tiny strict tool: the arguments are constrained to exactly {"status": "ready"}.
PROBE_TOOL = {"type": "function", "function": {
    "name": "report_status", "description": "Report that the assistant is ready.", "strict": True,
    "parameters": {"type": "object", "properties": {"status": {"type": "string", "enum": ["ready"]}},
                   "required": ["status"], "additionalProperties": False}}}

CPU_PACKAGES = ("av", "opencv-python-headless", "chromadb", "networkx", "openai", "sentence-transformers",
                "rapidocr", "onnxruntime", "llama_cpp_python", "torch", "faster-whisper", "ctranslate2", "trackers")
GPU_PACKAGES = ("av", "opencv-python-headless", "chromadb", "networkx", "openai", "torch", "transformers",
                "faster-whisper", "ctranslate2")

ENDPOINTS = (("orchestrator", "LLM server"), ("vlm", "VLM server"), ("embedder", "embedding server"))


@dataclass
class Check:
    """One row of the doctor's table.

    Attributes:
        name: what was checked.
        status: ``ok``, ``warn`` (works, with a caveat), ``skip`` (not applicable) or ``FAIL``.
        detail: version, path, answer or the reason of a failure (one line).
    """

    name: str
    status: Status
    detail: str = ""


def _one_line(text: object, n: int = 240) -> str:
    return " ".join(str(text).split())[:n]


def _run(name: str, fn: Callable[[], object]) -> Check:
    try:
        out = fn()
    except Exception as exc:  # noqa: BLE001 - a failed check is a row, never a traceback
        return Check(name, "FAIL", _one_line(exc))
    if isinstance(out, Check):
        return out
    return Check(name, "ok", _one_line(out or ""))


def local_servers(settings: Settings) -> list[ServerSpec]:
    """The ``[serve]`` servers whose endpoint is the one configured for their role (``avi serve`` on this
    node provides them: derived from the layout, or the exported ``AVI_*_BASE_URL``)."""
    return [s for s in settings.serve.servers if getattr(settings, f"{ROLE_SETTING[s.role]}_base_url") == s.base_url]


def _package_version(name: str) -> str:
    return md.version(name)


def package_checks(settings: Settings, version: Callable[[str], str] | None = None) -> list[Check]:
    """Python packages the profile needs (required: FAIL when missing; optional: warn).

    Args:
        version: package name -> version, raising ``importlib.metadata.PackageNotFoundError``
            (default: the installed distributions).
    """
    version = version or _package_version
    required: list[str]
    optional: dict[str, str] = {}
    if settings.resolved_profile() == "cpu":
        required = list(CPU_PACKAGES)
    else:
        required = list(GPU_PACKAGES)
        if not settings.embedder_base_url:
            required.append("sentence-transformers")
        if settings.vlm_model_dir and not settings.vlm_base_url:
            required.append("qwen-vl-utils")
        if settings.open_clip_model:
            required.append("open_clip_torch")
        else:
            optional["open_clip_torch"] = "boundary_detect uses transformers CLIP or the colour-histogram fallback"
        if settings.ocr_paddle_det_dir:
            required += ["paddleocr", "paddlepaddle"]
        else:
            required += ["rapidocr", "onnxruntime"]
    rows = []
    for pkg in required:
        rows.append(_run(f"package {pkg}", lambda pkg=pkg: version(pkg)))
    for pkg, why in optional.items():
        try:
            rows.append(Check(f"package {pkg}", "ok", version(pkg)))
        except md.PackageNotFoundError:
            rows.append(Check(f"package {pkg}", "warn", f"not installed (optional: {why})"))
    if settings.resolved_profile() == "gpu":
        rows.append(vllm_check(settings, version))
    return rows


def vllm_check(settings: Settings, version: Callable[[str], str] | None = None) -> Check:
    """vLLM is needed only where ``avi serve`` starts this node's servers."""
    version = version or _package_version
    if not local_servers(settings):
        return Check("package vllm", "skip", "endpoints are not this node's [serve] servers")
    python = settings.serve.python
    if python:
        r = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('vllm'))"],
                           capture_output=True, text=True, timeout=60)
        if r.returncode == 0:
            return Check("package vllm", "ok", f"{r.stdout.strip()} ({python})")
        return Check("package vllm", "FAIL", f"not importable by [serve] python {python}")
    try:
        return Check("package vllm", "ok", version("vllm"))
    except md.PackageNotFoundError:
        exe = shutil.which("vllm")
        if exe:
            return Check("package vllm", "ok", f"vllm on PATH: {exe}")
        return Check("package vllm", "FAIL", "not installed and no vllm on PATH (avi serve starts the [serve] "
                                             "servers with it)")


def gpu_check(settings: Settings) -> Check:
    """GPUs seen by ``nvidia-smi`` (else ``torch.cuda`` on the gpu profile), against what the layout needs."""
    names: list[str] = []
    exe = shutil.which("nvidia-smi")
    if exe:
        try:
            r = subprocess.run([exe, "--query-gpu=name,memory.total", "--format=csv,noheader"], capture_output=True,
                               text=True, timeout=20)
            names = [ln.strip() for ln in r.stdout.splitlines() if ln.strip()] if r.returncode == 0 else []
        except (OSError, subprocess.TimeoutExpired):
            names = []
    elif settings.resolved_profile() == "gpu":
        try:
            import torch

            names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        except Exception:  # noqa: BLE001 - no torch or no CUDA: no GPUs
            names = []
    if settings.resolved_profile() == "cpu":
        return Check("GPUs", "ok", f"{len(names)}: {names[0]}" if names else "none (the cpu profile needs none)")
    local = local_servers(settings)
    need = 1 + max([g for s in local for g in s.gpus] + list(settings.serve.tools_gpus)) if local else 0
    detail = f"{len(names)} × {names[0]}" if names else "none"
    if len(names) < need:
        return Check("GPUs", "FAIL", f"{detail}; the [serve] layout uses GPUs 0–{need - 1}")
    if not names:
        return Check("GPUs", "warn", "none: the in-process CV tools (Grounding-DINO, PaddleOCR, CLIP) run on the CPU")
    return Check("GPUs", "ok", detail)


def device_checks(settings: Settings) -> list[Check]:
    """Where each in-process model runs (``<role>_device`` / ``<role>_dtype``, ``auto`` resolved here) and whether
    it can: the device exists, the GPU has bfloat16, no float16 on the cpu (:mod:`avi.backends.devices`)."""
    from avi.backends.devices import check_placement, describe, in_process_roles, placement

    rows = []
    for role in in_process_roles(settings):
        def probe(role=role):
            device, dtype = placement(settings, role)
            problem = check_placement(device, dtype)
            if problem:
                raise AviError(f"{problem} ({role}_device {getattr(settings, role + '_device')}, "
                               f"{role}_dtype {getattr(settings, role + '_dtype')})")
            return describe(device, dtype)

        rows.append(_run(f"device {role}", probe))
    return rows


def cv_checks() -> list[Check]:
    """OpenCV's HOG + Haar detectors and the ffmpeg CLI (audio fallback)."""

    def cv():
        import cv2

        if not hasattr(cv2, "HOGDescriptor") or not os.path.exists(
                cv2.data.haarcascades + "haarcascade_frontalface_default.xml"):
            raise AviError(f"OpenCV {cv2.__version__} lacks HOG or the Haar cascades: need <5")
        return cv2.__version__

    def ffmpeg_cli():
        exe = shutil.which("ffmpeg")
        if exe is None:
            raise AviError("not installed: audio that PyAV cannot decode (AC3 in AVI) will fail; apt install ffmpeg")
        return exe

    return [_run("opencv HOG + Haar", cv), _run("ffmpeg CLI (audio fallback)", ffmpeg_cli)]


def _entry_profiles(entry) -> set[str]:
    prof = getattr(entry, "profile", None) or entry.source.get("profile")
    if not prof:
        return set()
    profiles = {prof} if isinstance(prof, str) else set(prof)
    return {"cpu" if p == "test" else p for p in profiles} - {"both", "any", "all"}  # test entries: cpu setup


def weight_checks(settings: Settings) -> list[Check]:
    """Every ``weights.lock`` entry of the profile verified; other-profile entries skipped; unpinned reported."""
    from avi.weights import load_lock, verify

    profile = settings.resolved_profile()
    try:
        entries = load_lock(settings.weights_lock)
    except AviError as exc:
        return [Check("weights.lock", "FAIL", _one_line(exc))]
    return [weight_check(e, profile, settings.models_dir, verify) for e in entries.values()]


def weight_check(entry, profile: str, models_dir, verify: Callable) -> Check:
    """One entry: skip (other profile), optional and absent, unpinned (present or not), else verified.

    Works with entries with or without ``profile`` / ``pinned`` / ``is_pinned`` (an entry without a profile
    belongs to every profile; without pin information it is pinned when it has a sha256)."""
    name = f"weights {entry.name}"
    profiles = _entry_profiles(entry)
    if profiles and profile not in profiles:
        return Check(name, "skip", f"{'/'.join(sorted(profiles))} profile only")
    where = entry.local_path(models_dir)
    present = entry.checked_file(models_dir).is_file() or (where.is_dir() and any(where.iterdir()))
    optional = getattr(entry, "optional", None)
    if not isinstance(optional, bool):
        optional = bool(entry.source.get("optional"))
    if optional and not present:
        return Check(name, "ok", "not fetched (optional)")
    pinned = getattr(entry, "is_pinned", None)
    if not isinstance(pinned, bool):
        pinned = getattr(entry, "pinned", None)
        pinned = bool(entry.sha256) if pinned is None else bool(pinned)
    if not pinned:
        return (Check(name, "ok", f"unpinned (nothing to verify against in weights.lock); present at {where}")
                if present else Check(name, "warn", f"unpinned; not found at {where}"))
    return _run(name, lambda: verify(entry, models_dir))


def _openai_client(url: str, api_key: str):
    import httpx
    import openai

    from avi.backends.llm import is_loopback

    return openai.OpenAI(base_url=url, api_key=api_key, max_retries=0, timeout=10.0,
                         http_client=httpx.Client(trust_env=not is_loopback(url), timeout=10.0)), openai


def endpoint_checks(settings: Settings) -> tuple[list[Check], dict[str, str]]:
    """Each configured endpoint answers ``GET /v1/models`` and serves the expected model.

    Returns:
        the rows, and ``{role: served model}`` for the healthy ones.
    """
    from avi.backends.llm import served_model

    rows, healthy = [], {}
    gpu = settings.resolved_profile() == "gpu"
    for role, label in ENDPOINTS:
        prefix = ROLE_SETTING[role]
        url = getattr(settings, f"{prefix}_base_url")
        name = f"endpoint {role}"
        if not url:
            if not gpu:
                continue
            model_dir = getattr(settings, f"{prefix}_model_dir", None)
            if model_dir:
                rows.append(Check(name, "ok", f"in-process model {model_dir}"))
            elif role == "orchestrator":
                rows.append(Check(name, "FAIL", "no endpoint: set llm_base_url, or an orchestrator in [serve]"))
            else:
                rows.append(Check(name, "warn", "not configured: " + ("perception captions, no VLM"
                                                                      if role == "vlm" else "local embedder")))
            continue
        expected = getattr(settings, f"{prefix}_model")

        def probe(url=url, expected=expected, label=label):
            client, openai = _openai_client(url, settings.llm_api_key)
            return served_model(client, openai, url, expected, label, AviError)

        row = _run(name, probe)
        if row.status == "ok":
            healthy[role] = row.detail
            row.detail = f"{url} serves {row.detail}"
        rows.append(row)
    return rows, healthy


def media_dir_check(settings: Settings) -> Check:
    """``vlm_media_dir`` (frames as files for the VLM server's --allowed-local-media-path) can be written:
    a file is created there and removed again."""
    import tempfile

    media = settings.vlm_media_dir

    def probe():
        media.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=media, prefix="doctor-", suffix=".jpg"):
            pass
        return f"{media} is writable (frames go to the VLM as file:// URLs)"

    return _run("vlm media dir", probe)


def tool_call_check(client) -> Check:
    """ONE real forced tool call (``client`` is an :class:`avi.backends.llm.ChatClient`): the reply must
    call ``report_status`` with ``{"status": "ready"}``. Native ``tool_calls`` are read; with the
    ``json_schema`` constraint (llama.cpp) the call is the reply's JSON content."""
    name = "tool calling"
    try:
        r = client.chat([{"role": "system", "content": "You check that tool calling works."},
                         {"role": "user", "content": "Call report_status with status ready."}],
                        tools=[PROBE_TOOL], require_tool=["report_status"], max_tokens=256, temperature=0.0)
    except Exception as exc:  # noqa: BLE001
        return Check(name, "FAIL", _one_line(exc))
    calls = list(r.tool_calls)
    if not calls and client.constrain == "json_schema":
        try:
            obj = json.loads(r.content)
            calls = [(obj["name"], json.dumps(obj["arguments"]))]
        except (ValueError, KeyError, TypeError):
            calls = []
    how = f"constrain {client.constrain}"
    if not calls:
        return Check(name, "FAIL", f"no tool call came back ({how}; finish_reason {r.finish_reason}; content "
                                   f"{_one_line(r.content, 80)!r}); vLLM needs --enable-auto-tool-choice "
                                   f"--tool-call-parser hermes")
    fn, raw = calls[0]
    try:
        args = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        args = None
    if fn != "report_status" or args != {"status": "ready"}:
        return Check(name, "FAIL", f"invalid call {fn}({_one_line(raw, 80)}) ({how}); expected "
                                   f"report_status({{\"status\": \"ready\"}})")
    return Check(name, "ok", f"{fn}({json.dumps(args)}) in {r.seconds:.1f} s ({how})")


def offline_check() -> Check:
    """The air-gap switches are on in this process (avi sets them unless the environment overrides)."""
    truthy, falsy = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}
    want = {"HF_HUB_OFFLINE": truthy, "TRANSFORMERS_OFFLINE": truthy, "ANONYMIZED_TELEMETRY": falsy}
    bad = [f"{k}={os.environ.get(k, '(unset)')}" for k, ok in want.items()
           if os.environ.get(k, "").strip().lower() not in ok]
    if bad:
        return Check("offline environment", "FAIL", f"{' '.join(bad)}: unset them or set HF_HUB_OFFLINE=1 "
                                                    f"TRANSFORMERS_OFFLINE=1 ANONYMIZED_TELEMETRY=False")
    return Check("offline environment", "ok", " ".join(f"{k}={os.environ[k]}" for k in want)
                 + " (Chroma clients also get anonymized_telemetry=False)")


def run_doctor(settings: Settings, *, serve: bool = False) -> list[Check]:
    """All checks for ``settings``' profile, in table order.

    Args:
        serve: without an orchestrator endpoint (cpu profile): also start the embedded server, ask it one
            thing and make one forced tool call (a configured endpoint is always checked that way).
    """
    rows = package_checks(settings)
    rows.append(gpu_check(settings))
    rows += device_checks(settings)
    rows += cv_checks()
    rows += weight_checks(settings)
    eps, healthy = endpoint_checks(settings)
    rows += eps
    if settings.vlm_base_url and settings.vlm_media_dir is not None:
        rows.append(media_dir_check(settings))
    if "orchestrator" in healthy:
        rows.append(_endpoint_tool_call(settings, healthy["orchestrator"]))
    elif settings.llm_base_url:
        rows.append(Check("tool calling", "skip", "the orchestrator endpoint is not healthy"))
    elif serve:
        rows += _embedded_checks(settings)
    rows.append(offline_check())
    return rows


def _endpoint_tool_call(settings: Settings, model: str) -> Check:
    from avi.backends.llm import ChatClient

    constrain = settings.llm_constrain if settings.llm_constrain != "auto" else "tool_choice"
    try:
        client = ChatClient.connect(settings.llm_base_url, model=model, api_key=settings.llm_api_key,
                                    timeout_s=min(settings.llm_timeout_s, 120.0), enable_thinking=False,
                                    constrain=constrain)
    except AviError as exc:
        return Check("tool calling", "FAIL", _one_line(exc))
    return tool_call_check(client)


def _embedded_checks(settings: Settings) -> list[Check]:
    from avi.backends import Backends

    b = Backends(settings)
    try:
        def ask():
            r = b.llm.chat([{"role": "user", "content": "Reply with the single word: ready"}], max_tokens=8)
            return f"{b.llm.base_url} answered {r.content.strip()!r} in {r.seconds:.1f}s"

        row = _run("orchestrator server", ask)
        return [row, tool_call_check(b.llm) if row.status == "ok" else
                Check("tool calling", "skip", "the orchestrator server did not answer")]
    finally:
        b.close()


def format_table(rows: list[Check]) -> str:
    """The rows as an aligned plain-text table (status, check, detail)."""
    width = max([len(r.name) for r in rows] + [5])
    return "\n".join(f"{r.status:4s}  {r.name:{width}s}  {r.detail}".rstrip() for r in rows)
