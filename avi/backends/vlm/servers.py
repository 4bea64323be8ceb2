"""Where the VLM runs: an OpenAI-compatible server (vLLM) or in-process transformers, behind one Protocol."""

from __future__ import annotations

import gc
import logging
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from avi.backends.llm import ChatClient
from avi.backends.vlm.frames import images_as_files
from avi.errors import AviError

log = logging.getLogger(__name__)


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

    Requests from several threads are decoded together (issue 37): up to ``max_batch``
    requests that arrive within a few milliseconds of each other go through one
    left-padded ``generate`` (:class:`~avi.backends.vlm.batching.MicroBatcher`), and
    :attr:`max_concurrency` is ``max_batch``, so :class:`VlmCaptioner` and the index
    build caption that many clips at once. ``max_batch=1`` is one request at a time.
    A batch that runs out of GPU memory is split in halves (see :meth:`generate_batch`), and later batches are
    no larger than the half that fit.

    Args:
        model_dir: local directory with the model's config, safetensors and processor
            files (loaded with ``local_files_only``; the hub is never contacted).
        device: torch device, e.g. ``"cpu"``, ``"cuda"``, ``"cuda:1"``; None or ``"auto"`` =
            CUDA when torch sees a GPU, else the CPU.
        dtype: torch dtype or its name (``"bfloat16"``); None or ``"auto"`` = bfloat16 on
            CUDA, float32 elsewhere (:func:`avi.backends.devices.resolve_dtype`).
        min_pixels, max_pixels: pixel-count bounds per image after resizing; the
            default maximum keeps a 1280x720 frame at full size (about 900 tokens).
        max_batch: most requests decoded together (``vlm_batch_size``).

    Attributes:
        last_stats: details of the latest ``generate`` (one batch): ``batch`` (requests in it),
            ``prompt_tokens`` (their tokens, padding left out), ``padded_tokens`` (batch x padded
            length), ``image_tokens`` (image placeholder tokens), ``image_sizes`` ((height, width)
            after resizing, every image in order), ``completion_tokens`` (new tokens, padding left
            out), ``seconds``. After a batch was split for memory, the last half's.

    Raises:
        AviError: torch, transformers or qwen-vl-utils is missing (install ``avi[gpu]``),
            or the directory holds no loadable Qwen3-VL model.
    """

    def __init__(self, model_dir: Path | str, device: str | None = None, dtype: Any = None,
                 min_pixels: int = 4 * 32 * 32, max_pixels: int = 1280 * 720, max_batch: int = 1):
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

        from avi.backends.devices import resolve_device, resolve_dtype, torch_dtype
        from avi.backends.vlm.batching import MicroBatcher

        hf_logging.disable_progress_bar()  # no "Loading weights" bar inside the index build's progress output
        model_dir = Path(model_dir)
        if not (model_dir / "config.json").exists():
            raise AviError(f"no model in {model_dir} (config.json missing)")
        self._torch = torch
        # torch.OutOfMemoryError since torch 2.5; torch.cuda.OutOfMemoryError (the same class there) before
        self._oom_error = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError
        self._process_vision_info = process_vision_info
        self.name = model_dir.name
        self.device = resolve_device(device)
        self.dtype = dtype if isinstance(dtype, torch.dtype) else torch_dtype(resolve_dtype(dtype, self.device))
        self.min_pixels = int(min_pixels)
        self.max_pixels = int(max_pixels)
        self.max_concurrency = max(1, int(max_batch))
        self._model_class = Qwen3VLForConditionalGeneration
        try:
            self.processor = AutoProcessor.from_pretrained(str(model_dir), local_files_only=True)
            self.model = self._load_model(model_dir)
        except (OSError, ValueError) as exc:
            raise AviError(f"cannot load the Qwen3-VL model from {model_dir}: {str(exc)[:300]}") from None
        self.model.eval()
        self.processor.tokenizer.padding_side = "left"  # batched generation appends after the prompts
        vision = getattr(self.model.config, "vision_config", None)
        # qwen-vl-utils sizes images to multiples of patch_size * 2 (its merge size is fixed at 2)
        self.patch_size = int(getattr(vision, "patch_size", 16))
        self.image_token_id = getattr(self.model.config, "image_token_id", None)
        self.last_stats: dict = {}
        self._lock = threading.Lock()
        self._batcher = MicroBatcher(lambda reqs: self.generate_batch([m for m, _ in reqs], max(t for _, t in reqs),
                                                                      budgets=[t for _, t in reqs]),
                                     self.max_concurrency)

    def _load_model(self, model_dir: Path):
        """The model from ``model_dir``'s weights, on :attr:`device` in :attr:`dtype` (a subclass may build it
        otherwise, e.g. scripts/bench_gpu.py: random weights from the config, straight on the GPU)."""
        return self._model_class.from_pretrained(str(model_dir), local_files_only=True,
                                                 dtype=self.dtype).to(self.device)

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
        """Greedy reply of at most ``max_tokens`` new tokens (``json_schema`` is ignored, see class doc); decoded
        together with the requests other threads make at the same time (up to ``max_batch``)."""
        return self._batcher.submit((messages, int(max_tokens)))

    def prepare(self, conversations: list[list[dict]]):
        """The model inputs of several conversations, left-padded into one batch (on the CPU).

        Returns:
            ``(inputs, images)``: the processor's ``BatchFeature`` (``input_ids`` (B, T), ``attention_mask``,
            ``pixel_values``, ``image_grid_thw``) and the PIL images after resizing, in order.
        """
        texts, images = [], []
        for messages in conversations:
            qmsgs = self._qwen_messages(messages)
            texts.append(self.processor.apply_chat_template(qmsgs, tokenize=False, add_generation_prompt=True))
            imgs, _videos = self._process_vision_info(qmsgs, image_patch_size=self.patch_size)
            images += imgs or []
        kwargs: dict = {"text": texts, "return_tensors": "pt", "padding": True}
        if images:
            kwargs["images"] = images
            kwargs["do_resize"] = False  # already sized by qwen-vl-utils
        return self.processor(**kwargs), images

    def generate_batch(self, conversations: list[list[dict]], max_tokens: int,
                       budgets: list[int] | None = None, *, split_on_oom: bool = True) -> list[str]:
        """Greedy replies to several conversations in one ``generate`` (left padding), in order.

        A batch of more than one conversation that runs out of GPU memory (``torch.OutOfMemoryError``) is split in
        two halves, each run the same way (so again split if it does not fit), and the replies are joined in order;
        the micro-batcher's ``max_batch`` is lowered to the half that was tried, so later batches do not pay for the
        failed try again. One warning is logged with the batch size it fell back to.

        Args:
            conversations: OpenAI-style message lists (see :meth:`VlmBackend.generate`).
            max_tokens: most new tokens of the batch.
            budgets: per conversation, its own most new tokens (<= ``max_tokens``); the reply is cut there.
            split_on_oom: False = no halving: the out-of-memory error is raised as it is (a benchmark timing
                exactly this batch size, scripts/bench_gpu.py).

        Raises:
            AviError: one conversation alone runs out of GPU memory.
            torch.OutOfMemoryError: with ``split_on_oom=False``, the batch does not fit.
        """
        if not conversations:
            return []
        budgets = [min(int(b), int(max_tokens)) for b in (budgets or [max_tokens] * len(conversations))]
        if not split_on_oom:
            return self._generate(conversations, max(budgets), budgets)
        halves: list[int] = []
        replies = self._generate_fitting(conversations, budgets, halves)
        if halves:
            log.warning("in-process VLM: %d clips in one generate ran out of GPU memory; fell back to %d per "
                        "generate (set vlm_batch_size = %d to start there)", len(conversations),
                        self._batcher.max_batch, self._batcher.max_batch)
        return replies

    def _generate_fitting(self, conversations: list[list[dict]], budgets: list[int], halves: list[int]) -> list[str]:
        """:meth:`_generate`, split in halves while it runs out of GPU memory (each half tried appended to
        ``halves``)."""
        try:
            return self._generate(conversations, max(budgets), budgets)
        except self._oom_error:
            pass  # leave the except block first: the exception's traceback holds the failed batch's tensors
        gc.collect()
        if self._torch.cuda.is_available():
            self._torch.cuda.empty_cache()
        if len(conversations) == 1:
            raise AviError("the in-process VLM ran out of GPU memory on a single clip: lower vlm_frames_per_clip "
                           "or max_side (frame size), or run it on a GPU with more free memory (vlm_device)")
        half = (len(conversations) + 1) // 2
        halves.append(half)
        self._batcher.max_batch = min(self._batcher.max_batch, half)
        return (self._generate_fitting(conversations[:half], budgets[:half], halves)
                + self._generate_fitting(conversations[half:], budgets[half:], halves))

    def _generate(self, conversations: list[list[dict]], max_tokens: int, budgets: list[int]) -> list[str]:
        """One ``generate`` over the conversations (one at a time on the model); sets :attr:`last_stats`."""
        torch = self._torch
        inputs, images = self.prepare(conversations)
        with self._lock:
            t0 = time.perf_counter()
            inputs = inputs.to(self.device, self.dtype)  # floating tensors only: token ids stay integers
            width = int(inputs["input_ids"].shape[1])
            with torch.inference_mode():
                out = self.model.generate(**inputs, max_new_tokens=max_tokens, do_sample=False)
            new = out[:, width:].cpu()
            pad = self.processor.tokenizer.pad_token_id
            rows = [row[:b] for row, b in zip(new, budgets)]
            replies = self.processor.batch_decode(rows, skip_special_tokens=True)
            image_tokens = (int((inputs["input_ids"] == self.image_token_id).sum())
                            if self.image_token_id is not None else 0)
            self.last_stats = {"batch": len(conversations), "prompt_tokens": int(inputs["attention_mask"].sum()),
                               "padded_tokens": width * len(conversations), "image_tokens": image_tokens,
                               "image_sizes": [(im.height, im.width) for im in images],
                               "completion_tokens": sum(int((r != pad).sum()) for r in rows),
                               "seconds": time.perf_counter() - t0}
        return replies


def _check_image_url(url: Any) -> str:
    """The URL of an image part if the in-process VLM may open it (data: or file: URLs, never the network)."""
    if isinstance(url, str) and (url.startswith("data:image") or url.startswith("file://")):
        return url
    raise AviError(f"the in-process VLM takes images as data: or file:// URLs, got {str(url)[:60]!r}")
