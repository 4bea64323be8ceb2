"""Vision-language model role: clip captions and frame analysis with Qwen3-VL (gpu profile).

Frames always travel as a list of images, each preceded by a text label with
its time (``Frame at 12.5s``), never as a ``video_url``: the agent chooses the
exact moments, and vLLM's video path resamples frames and mangles timestamps
(research/anchors.md §2.2; VideoSeek and DVD do the same).

Backends (:class:`VlmBackend`):
    * :class:`OpenAIVlmBackend`: any OpenAI-compatible server (Qwen3-VL-8B on
      vLLM with ``--limit-mm-per-prompt '{"image": 64, "video": 0}'``), through
      the one :class:`~avi.backends.llm.ChatClient`; JSON replies are
      schema-constrained (structured output).
    * :class:`TransformersVlmBackend`: Qwen3-VL in-process with transformers
      and qwen-vl-utils (``pip install 'avi[gpu]'``), from a local directory.

Roles built on a backend:
    * :class:`VlmCaptioner` (:class:`~avi.backends.captioner.Captioner`): the
      clip caption of AVI §3.2.1 / Fig. 7, a subject registry plus a
      chronological description, validated; a reply that stays invalid after
      one repair request is recorded as a *failed* caption, never guessed.
    * :class:`VlmFrameAnalyzer` (:class:`~avi.backends.frame_analyzer.FrameAnalyzer`):
      the ``frame_analysis`` tool (AVI §3.3.2), up to 64 frames and a question.

Prompt wording lives in ``prompts/caption_clip.md``, ``prompts/caption_repair.md``
and ``prompts/frame_analysis_vlm.md``.
"""

from __future__ import annotations

import base64
import io
import json
import re
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from avi.agent.prompts import PromptLibrary
from avi.backends.frame_analyzer import FrameAnalysis
from avi.backends.llm import ChatClient
from avi.backends.types import Caption
from avi.errors import AviError
from avi.video.clips import Clip
from avi.video.decode import Frame
from avi.video.timecode import parse_time

# ------------------------------------------------------------------ backends


@runtime_checkable
class VlmBackend(Protocol):
    """Generates text from OpenAI-style chat messages that may carry images.

    Attributes:
        name: model name, recorded with every caption and analysis.
    """

    name: str

    def generate(self, messages: list[dict], *, max_tokens: int, json_schema: dict | None = None) -> str:
        """The reply text to ``messages``.

        Args:
            messages: OpenAI chat messages; a user ``content`` may be a list mixing
                ``{"type": "text", "text": ...}`` and
                ``{"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,..."}}`` parts.
            max_tokens: completion budget in tokens.
            json_schema: when given, the backend constrains the reply to JSON valid
                against it if it can (backends that cannot ignore it).
        """
        ...


class OpenAIVlmBackend:
    """A VLM behind an OpenAI-compatible endpoint (vLLM, llama.cpp server, SGLang).

    Greedy decoding (temperature 0); ``json_schema`` becomes the request's
    structured-output ``response_format`` (see :meth:`ChatClient.chat`).
    Thread-safe: the index build captions several clips at once over one client.

    Images go in the request as base64 JPEG data URLs, or, with ``media_dir``, as JPEG files
    written to a fresh subdirectory of it and sent as ``file://`` URLs (vLLM reads them when
    started with ``--allowed-local-media-path`` at or above ``media_dir``; the request is then
    about a quarter smaller and carries no image bytes). The files are deleted when the request
    returns, whatever its outcome.

    Args:
        client: a connected :class:`ChatClient` (``ChatClient.connect(settings.vlm_base_url, ...)``).
        media_dir: directory shared with a VLM server on the same machine (``settings.vlm_media_dir``);
            None = base64 in the request.

    Attributes:
        calls, prompt_tokens, completion_tokens, seconds: running totals of the
            requests made (usage as the server reports it).
    """

    def __init__(self, client: ChatClient, media_dir: Path | None = None):
        self.client = client
        self.name = client.model
        self.media_dir = Path(media_dir) if media_dir is not None else None
        self._lock = threading.Lock()
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.seconds = 0.0

    def generate(self, messages: list[dict], *, max_tokens: int, json_schema: dict | None = None) -> str:
        """Reply text of one chat completion.

        Raises:
            LLMUnavailableError: the server cannot be reached or timed out.
            ContextOverflowError: the frames and prompt exceed the model's context.
            AviError: any other error status (for example more images than the
                server's ``--limit-mm-per-prompt``, or a ``file://`` image outside its
                ``--allowed-local-media-path``); ``media_dir`` cannot be written.
        """
        if self.media_dir is None:
            return self._chat(messages, max_tokens, json_schema)
        try:
            self.media_dir.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix="req-", dir=self.media_dir))
        except OSError as exc:
            raise AviError(f"cannot write frames for the VLM to vlm_media_dir {self.media_dir}: "
                           f"{exc.strerror or exc}") from None
        try:
            return self._chat(images_as_files(messages, tmp), max_tokens, json_schema)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _chat(self, messages: list[dict], max_tokens: int, json_schema: dict | None) -> str:
        res = self.client.chat(messages, max_tokens=max_tokens, temperature=0.0, json_schema=json_schema)
        with self._lock:
            self.calls += 1
            self.prompt_tokens += res.prompt_tokens
            self.completion_tokens += res.completion_tokens
            self.seconds += res.seconds
        return res.content


class TransformersVlmBackend:
    """Qwen3-VL run in-process with transformers (Qwen3VLForConditionalGeneration + AutoProcessor).

    Images are sized the way Qwen-VL expects by ``qwen_vl_utils.process_vision_info``
    (each side a multiple of 32 = patch 16 x merge 2, pixel count within
    ``[min_pixels, max_pixels]``), so one image costs ``h*w/1024`` visual tokens;
    the processor is then told not to resize again. Decoding is greedy.
    ``json_schema`` is ignored: transformers has no grammar-constrained decoding
    here, so the caller's validation and repair step is what keeps replies valid.

    One generation runs at a time (a lock); :attr:`max_concurrency` is 1, which
    :class:`VlmCaptioner` respects.

    Args:
        model_dir: local directory with the model's config, safetensors and processor
            files (loaded with ``local_files_only``; the hub is never contacted).
        device: torch device, e.g. ``"cpu"``, ``"cuda"``, ``"cuda:1"``.
        dtype: torch dtype or its name (``"bfloat16"``); None = the checkpoint's
            own dtype (``"auto"``).
        min_pixels, max_pixels: pixel-count bounds per image after resizing; the
            default maximum keeps a 1280x720 frame at full size (about 900 tokens).

    Attributes:
        last_stats: details of the latest call: ``prompt_tokens``, ``image_tokens``
            (image placeholder tokens in the prompt), ``image_sizes`` ((height, width)
            after resizing), ``completion_tokens``, ``seconds``.

    Raises:
        AviError: torch, transformers or qwen-vl-utils is missing (install ``avi[gpu]``),
            or the directory holds no loadable Qwen3-VL model.
    """

    max_concurrency = 1

    def __init__(self, model_dir: Path | str, device: str = "cpu", dtype: Any = None,
                 min_pixels: int = 4 * 32 * 32, max_pixels: int = 1280 * 720):
        from avi.offline import enforce_offline_env

        enforce_offline_env()
        try:
            import torch
            from qwen_vl_utils import process_vision_info
            from transformers import AutoProcessor, Qwen3VLForConditionalGeneration
        except ImportError as exc:
            raise AviError(f"the in-process VLM needs torch, transformers and qwen-vl-utils ({exc.name} is "
                           "missing): pip install 'avi[gpu]'") from None
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # no "Loading weights" bar inside the index build's progress output
        model_dir = Path(model_dir)
        if not (model_dir / "config.json").exists():
            raise AviError(f"no model in {model_dir} (config.json missing)")
        self._torch = torch
        self._process_vision_info = process_vision_info
        self.name = model_dir.name
        self.device = device
        self.min_pixels = int(min_pixels)
        self.max_pixels = int(max_pixels)
        if isinstance(dtype, str) and dtype != "auto":
            dtype = getattr(torch, dtype)
        try:
            self.processor = AutoProcessor.from_pretrained(str(model_dir), local_files_only=True)
            self.model = Qwen3VLForConditionalGeneration.from_pretrained(
                str(model_dir), local_files_only=True, dtype=dtype if dtype is not None else "auto").to(device)
        except (OSError, ValueError) as exc:
            raise AviError(f"cannot load the Qwen3-VL model from {model_dir}: {str(exc)[:300]}") from None
        self.model.eval()
        vision = getattr(self.model.config, "vision_config", None)
        # qwen-vl-utils sizes images to multiples of patch_size * 2 (its merge size is fixed at 2)
        self.patch_size = int(getattr(vision, "patch_size", 16))
        self.image_token_id = getattr(self.model.config, "image_token_id", None)
        self.last_stats: dict = {}
        self._lock = threading.Lock()

    def _qwen_messages(self, messages: list[dict]) -> list[dict]:
        """OpenAI messages -> qwen-vl-utils messages (image_url parts become image parts with pixel bounds)."""
        out = []
        for m in messages:
            content = m.get("content")
            if not isinstance(content, list):
                out.append({"role": m["role"], "content": content or ""})
                continue
            parts = []
            for p in content:
                if p.get("type") == "image_url":
                    url = p["image_url"]["url"] if isinstance(p.get("image_url"), dict) else p.get("image_url")
                    parts.append({"type": "image", "image": _check_image_url(url),
                                  "min_pixels": self.min_pixels, "max_pixels": self.max_pixels})
                elif p.get("type") == "text":
                    parts.append({"type": "text", "text": p.get("text", "")})
                else:
                    raise AviError(f"unsupported message part for the in-process VLM: {p.get('type')!r}")
            out.append({"role": m["role"], "content": parts})
        return out

    def generate(self, messages: list[dict], *, max_tokens: int, json_schema: dict | None = None) -> str:
        """Greedy reply of at most ``max_tokens`` new tokens (``json_schema`` is ignored, see class doc)."""
        torch = self._torch
        qmsgs = self._qwen_messages(messages)
        text = self.processor.apply_chat_template(qmsgs, tokenize=False, add_generation_prompt=True)
        images, _videos = self._process_vision_info(qmsgs, image_patch_size=self.patch_size)
        kwargs: dict = {"text": [text], "return_tensors": "pt", "padding": True}
        if images:
            kwargs["images"] = images
            kwargs["do_resize"] = False  # already sized by qwen-vl-utils
        with self._lock:
            t0 = time.perf_counter()
            inputs = self.processor(**kwargs).to(self.device)
            n_prompt = int(inputs["input_ids"].shape[1])
            with torch.inference_mode():
                out = self.model.generate(**inputs, max_new_tokens=max_tokens, do_sample=False)
            new = out[:, n_prompt:]
            reply = self.processor.batch_decode(new, skip_special_tokens=True)[0]
            image_tokens = (int((inputs["input_ids"] == self.image_token_id).sum())
                            if self.image_token_id is not None else 0)
            self.last_stats = {"prompt_tokens": n_prompt, "image_tokens": image_tokens,
                               "image_sizes": [(im.height, im.width) for im in images or []],
                               "completion_tokens": int(new.shape[1]), "seconds": time.perf_counter() - t0}
        return reply


def _check_image_url(url: Any) -> str:
    """The URL of an image part if the in-process VLM may open it (data: or file: URLs, never the network)."""
    if isinstance(url, str) and (url.startswith("data:image") or url.startswith("file://")):
        return url
    raise AviError(f"the in-process VLM takes images as data: or file:// URLs, got {str(url)[:60]!r}")


# ------------------------------------------------------------------ frames as message parts


def thin_frames(frames: list[Frame], max_frames: int) -> list[Frame]:
    """At most ``max_frames`` of ``frames``, evenly spread, first and last kept, order preserved."""
    n = len(frames)
    if max_frames <= 0:
        return []
    if n <= max_frames:
        return list(frames)
    if max_frames == 1:
        return [frames[n // 2]]
    idx = np.round(np.linspace(0, n - 1, max_frames)).astype(int)
    return [frames[i] for i in idx]


def jpeg_data_url(image: np.ndarray, quality: int = 85) -> str:
    """``data:image/jpeg;base64,...`` of an RGB uint8 array (H, W, 3), at its own size."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(image)).save(buf, format="JPEG", quality=quality)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def images_as_files(messages: list[dict], folder: Path) -> list[dict]:
    """A copy of ``messages`` whose base64 ``data:image/...`` parts are written to ``folder`` as files
    (``000.jpg``, ``001.jpg``, …, in order) and replaced by their ``file://`` URLs (absolute paths).

    Other parts, and images that already are URLs, are kept as they are. ``folder`` must exist.
    """
    out, n = [], 0
    for msg in messages:
        content = msg.get("content")
        if not isinstance(content, list):
            out.append(msg)
            continue
        parts = []
        for part in content:
            url = (part.get("image_url") or {}).get("url") if part.get("type") == "image_url" else None
            if isinstance(url, str) and url.startswith("data:image/") and ";base64," in url:
                head, data = url.split(",", 1)
                ext = {"jpeg": "jpg", "png": "png", "webp": "webp"}.get(head[len("data:image/"):].split(";")[0], "img")
                path = (folder / f"{n:03d}.{ext}").resolve()
                path.write_bytes(base64.b64decode(data))
                n += 1
                part = {**part, "image_url": {**part["image_url"], "url": path.as_uri()}}
            parts.append(part)
        out.append({**msg, "content": parts})
    return out


def frame_label(t_s: float) -> str:
    """The text part placed before each frame: ``Frame at 12.5s`` (seconds from the video start)."""
    return f"Frame at {t_s:.1f}s"


def frames_to_content(frames: list[Frame], max_frames: int, quality: int = 85) -> list[dict]:
    """OpenAI user-content parts for frames: a time label then the JPEG, per frame.

    Args:
        frames: decoded frames (long side already <= 1280 px; sent at their own size).
        max_frames: frames are thinned uniformly to at most this many.
        quality: JPEG quality (1-95).

    Returns:
        ``[{"type": "text", "text": "Frame at 12.5s"}, {"type": "image_url", "image_url":
        {"url": "data:image/jpeg;base64,..."}}, ...]``: two parts per kept frame, in time order.
    """
    parts: list[dict] = []
    for f in sorted(thin_frames(frames, max_frames), key=lambda f: f.t_s):
        parts.append({"type": "text", "text": frame_label(f.t_s)})
        parts.append({"type": "image_url", "image_url": {"url": jpeg_data_url(f.image, quality)}})
    return parts


# ------------------------------------------------------------------ reply parsing

_THINK = re.compile(r"<think>.*?</think>", re.S)


def strip_think(text: str) -> str:
    """``text`` without ``<think>...</think>`` blocks (and anything before a dangling ``</think>``)."""
    text = _THINK.sub("", text or "")
    if "</think>" in text:
        text = text.split("</think>")[-1]
    return text.strip()


def first_json_object(text: str) -> dict:
    """The first JSON object in ``text`` (code fences and prose around it are tolerated).

    Raises:
        ValueError: no JSON object can be decoded from ``text``.
    """
    text = strip_think(text)
    dec = json.JSONDecoder()
    for m in re.finditer(r"\{", text):
        try:
            obj, _ = dec.raw_decode(text, m.start())
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            return obj
    raise ValueError("the reply contains no JSON object")


def _listify(v: Any) -> Any:
    if v is None:
        return []
    if isinstance(v, str):
        return [v] if v.strip() else []
    return v


def _seconds(v: Any) -> Any:
    if v is None or isinstance(v, (int, float)) and not isinstance(v, bool):
        return v
    if isinstance(v, str):
        return parse_time(v)  # ValueError -> validation error
    return v


class SubjectEntry(BaseModel):
    """One subject of the registry (AVI Fig. 7). ``first_seen`` is in seconds from the video start."""

    model_config = ConfigDict(extra="ignore", json_schema_serialization_defaults_required=True)

    name: str
    appearance: list[str] = Field(default_factory=list)
    identity: list[str] = Field(default_factory=list)
    first_seen: float | None = None

    @field_validator("appearance", "identity", mode="before")
    @classmethod
    def _lists(cls, v: Any) -> Any:
        return _listify(v)

    @field_validator("first_seen", mode="before")
    @classmethod
    def _time(cls, v: Any) -> Any:
        return _seconds(v)


class ClipCaptionReply(BaseModel):
    """The caption JSON a VLM must return for one clip; times in seconds."""

    model_config = ConfigDict(extra="ignore", json_schema_serialization_defaults_required=True)

    clip_start_time: float
    clip_end_time: float
    subject_registry: dict[str, SubjectEntry] = Field(default_factory=dict)
    clip_description: str

    @field_validator("clip_start_time", "clip_end_time", mode="before")
    @classmethod
    def _times(cls, v: Any) -> Any:
        return _seconds(v)

    @field_validator("subject_registry", mode="before")
    @classmethod
    def _registry(cls, v: Any) -> Any:
        if v is None:
            return {}
        if isinstance(v, list):  # [{"id": ..., "name": ...}, ...] -> {id: {...}}
            return {str(s.get("id") or f"subject_{i + 1}") if isinstance(s, dict) else f"subject_{i + 1}": s
                    for i, s in enumerate(v)}
        return v

    @field_validator("clip_description")
    @classmethod
    def _description(cls, v: str) -> str:
        v = v.strip()
        if not v:
            raise ValueError("clip_description is empty")
        return v


def _inline_refs(schema: dict) -> dict:
    """Pydantic's JSON schema with ``$ref`` inlined, titles dropped, objects closed."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:  # node is a schema
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return walk(defs[node["$ref"].split("/")[-1]])
        out = {}
        for k, v in node.items():
            if k in ("$defs", "title", "default", "description"):
                continue
            out[k] = {name: walk(sub) for name, sub in v.items()} if k == "properties" else walk(v)
        if out.get("type") == "object" and "properties" in out:
            out["additionalProperties"] = False
        return out

    return walk(schema)


def caption_json_schema() -> dict:
    """JSON schema of :class:`ClipCaptionReply` for structured output (every field required)."""
    return _inline_refs(ClipCaptionReply.model_json_schema(mode="serialization"))


def _validation_message(exc: ValidationError) -> str:
    parts = []
    for e in exc.errors()[:6]:
        loc = ".".join(str(x) for x in e.get("loc", ())) or "reply"
        parts.append(f"{loc}: {e.get('msg', 'invalid')}")
    return "; ".join(parts)


# ------------------------------------------------------------------ captioner


class VlmCaptioner:
    """Clip captions from a VLM: subject registry + chronological description (AVI §3.2.1, Fig. 7).

    Per clip, one request: system prompt ``prompts/caption_clip.md``; user content
    = the clip's bounds as text, then up to ``frames_per_clip`` frames (uniformly
    thinned), each after a ``Frame at 12.5s`` label. The reply must be the JSON
    object of :class:`ClipCaptionReply` (structured output is requested with
    :func:`caption_json_schema`); code fences and prose around it are tolerated.
    Clip times in the reply that disagree with the real clip (by more than
    ``time_tolerance_s``) are replaced by the real bounds and noted; a
    ``first_seen`` outside the clip is dropped and noted.

    An invalid reply gets one repair request (``prompts/caption_repair.md`` with
    the validation error, the bad reply kept in the conversation). If that is
    still invalid the caption is *failed*: ``text=""`` and
    ``data={"failed": reason, "raw": last reply, ...}``; nothing is guessed.

    ``caption`` is thread-safe (no shared mutable state; prompts are read at
    construction), so the index build may caption :attr:`concurrency` clips at
    once with threads.

    Args:
        backend: the VLM.
        prompts: the prompt library (``prompts/``).
        frames_per_clip: most frames sent per clip (10 = a 5 s clip at 2 fps).
        concurrency: clips the index build may caption at once; capped by the
            backend's ``max_concurrency`` when it has one (1 for in-process).
        max_tokens: completion budget per request.
        time_tolerance_s: allowed difference between reply and real clip times.

    Caption data of a good caption: ``subject_registry`` ({id: {name, appearance,
    identity, first_seen}}), ``frames_s`` (times of the frames sent), ``vlm``
    (backend name), ``attempts`` (1 or 2), and ``notes`` when corrections were made.
    """

    name = "vlm-caption-v1"

    def __init__(self, backend: VlmBackend, prompts: PromptLibrary, frames_per_clip: int = 10,
                 concurrency: int = 8, max_tokens: int = 1024, time_tolerance_s: float = 0.5):
        self.backend = backend
        self.prompts = prompts
        self.frames_per_clip = max(1, int(frames_per_clip))
        cap = getattr(backend, "max_concurrency", None)
        self.concurrency = max(1, min(int(concurrency), int(cap)) if cap else int(concurrency))
        self.max_tokens = int(max_tokens)
        self.time_tolerance_s = float(time_tolerance_s)
        self.system_prompt = prompts.text("caption_clip")
        prompts.text("caption_repair")  # fail early if missing; warms the cache before threads use it
        self.json_schema = caption_json_schema()

    def _check(self, raw: str, clip: Clip) -> tuple[ClipCaptionReply, list[str]]:
        """Parsed reply and correction notes; raises ValueError with a message fit for the repair prompt."""
        try:
            obj = first_json_object(raw)
        except ValueError as exc:
            raise ValueError(f"{exc}; expected one JSON object") from None
        try:
            reply = ClipCaptionReply.model_validate(obj)
        except ValidationError as exc:
            raise ValueError(_validation_message(exc)) from None
        notes = []
        tol = self.time_tolerance_s
        if abs(reply.clip_start_time - clip.start_s) > tol or abs(reply.clip_end_time - clip.end_s) > tol:
            notes.append(f"the VLM gave clip times {reply.clip_start_time:g}-{reply.clip_end_time:g}s; "
                         f"kept the real bounds {clip.start_s:g}-{clip.end_s:g}s")
        for sid, s in reply.subject_registry.items():
            if s.first_seen is not None and not (clip.start_s - tol <= s.first_seen <= clip.end_s + tol):
                notes.append(f"first_seen {s.first_seen:g}s of {sid} is outside the clip; dropped")
                s.first_seen = None
        return reply, notes

    def caption(self, clip: Clip, frames: list[Frame], previous: Frame | None = None) -> Caption:
        """Caption of ``clip`` from its frames (``previous`` is not used by the VLM).

        Raises:
            LLMUnavailableError, AviError: from the backend (server unreachable or an
                error status); these are not recorded as failed captions, because
                they would fail every clip the same way.
        """
        sent = thin_frames(frames, self.frames_per_clip)
        base = {"frames_s": [f.t_s for f in sent], "vlm": self.backend.name}
        if not sent:
            return Caption(clip.index, clip.start_s, clip.end_s, "", self.name,
                           {"failed": "no frames could be decoded in this clip", "raw": "", **base})
        header = {"type": "text", "text": f"Clip from {clip.start_s:.1f}s to {clip.end_s:.1f}s "
                                          f"({len(sent)} frames, in time order)."}
        messages = [{"role": "system", "content": self.system_prompt},
                    {"role": "user", "content": [header, *frames_to_content(sent, len(sent))]}]
        raw = ""
        error = ""
        for attempt in (1, 2):
            raw = self.backend.generate(messages, max_tokens=self.max_tokens, json_schema=self.json_schema)
            try:
                reply, notes = self._check(raw, clip)
            except ValueError as exc:
                error = str(exc)
                messages = [*messages, {"role": "assistant", "content": raw},
                            {"role": "user", "content": self.prompts.render("caption_repair", error=error)}]
                continue
            data = {"subject_registry": {k: v.model_dump() for k, v in reply.subject_registry.items()},
                    **base, "attempts": attempt}
            if notes:
                data["notes"] = notes
            return Caption(clip.index, clip.start_s, clip.end_s, reply.clip_description, self.name, data)
        return Caption(clip.index, clip.start_s, clip.end_s, "", self.name,
                       {"failed": f"invalid caption after one repair: {error}", "raw": raw, **base, "attempts": 2})


# ------------------------------------------------------------------ frame analysis


class VlmFrameAnalyzer:
    """The ``frame_analysis`` tool's VLM (AVI §3.3.2): frames with their times plus a question.

    Request: system prompt ``prompts/frame_analysis_vlm.md``; user content = the
    frames (already chosen by the tool, possibly from several ranges; thinned
    uniformly to ``max_frames``), each after a ``Frame at 12.5s`` label, then
    ``Question: ...``. The answer is the reply text (``<think>`` blocks removed).

    Args:
        backend: the VLM.
        prompts: the prompt library.
        max_frames: most frames per request (the server's image limit; 64 in AVI).
        max_tokens: completion budget.

    Raises (from :meth:`analyze`):
        LLMUnavailableError, AviError: from the backend.
    """

    name = "vlm-frame-analyzer-v1"

    def __init__(self, backend: VlmBackend, prompts: PromptLibrary, max_frames: int = 64, max_tokens: int = 1024):
        self.backend = backend
        self.prompts = prompts
        self.max_frames = max(1, int(max_frames))
        self.max_tokens = int(max_tokens)
        self.system_prompt = prompts.text("frame_analysis_vlm")

    def analyze(self, frames: list[Frame], question: str) -> FrameAnalysis:
        """The VLM's answer; ``data`` = ``{"question", "frames_s", "vlm"}``."""
        sent = sorted(thin_frames(frames, self.max_frames), key=lambda f: f.t_s)
        data = {"question": question, "frames_s": [f.t_s for f in sent], "vlm": self.backend.name}
        if not sent:
            return FrameAnalysis("No frames could be decoded in the requested time ranges.", data)
        content = [*frames_to_content(sent, len(sent)), {"type": "text", "text": f"Question: {question}"}]
        messages = [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": content}]
        text = strip_think(self.backend.generate(messages, max_tokens=self.max_tokens))
        return FrameAnalysis(text or "(the VLM returned no answer)", data)
