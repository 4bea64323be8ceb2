"""Where the VLM runs: an OpenAI-compatible server (vLLM) or in-process transformers, behind one Protocol."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from avi.backends.llm import ChatClient
from avi.backends.vlm.frames import images_as_files
from avi.errors import AviError


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
