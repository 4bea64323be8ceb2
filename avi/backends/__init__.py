"""Model roles behind Protocols, one implementation per backend, chosen by profile.

:class:`Backends` builds each role lazily on first use, so a command only pays
for the models it needs (``avi index`` never starts the LLM; a question on an
existing index never loads the captioner's OCR unless a tool asks for it).

Roles and their cpu-profile implementations (DESIGN.md):
    llm        -> embedded llama.cpp server + :class:`avi.backends.llm.ChatClient`
    embedder   -> :class:`avi.backends.embedder.SentenceTransformerEmbedder` (MiniLM)
    ocr        -> :class:`avi.backends.ocr.RapidOcrEngine`
    detector   -> :class:`avi.backends.detector.OpenCvDetector`
    captioner  -> :class:`avi.backends.captioner.PerceptionCaptioner`
    frames     -> :class:`avi.backends.frame_analyzer.PerceptionFrameAnalyzer`
    asr        -> :class:`avi.backends.asr.FasterWhisperTranscriber` (Whisper base, int8)

The gpu profile's vision backends (Qwen3-VL, Grounding-DINO, PaddleOCR, CLIP)
come with later issues; until then a gpu profile uses the remote LLM endpoint
and these cpu implementations for the vision roles.
"""

from __future__ import annotations

from functools import cached_property

from avi.config import Settings


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
        from avi.backends.embedder import SentenceTransformerEmbedder
        from avi.weights import resolve

        s = self.settings
        return SentenceTransformerEmbedder(resolve(s.embedder, s.models_dir, s.weights_lock), s.embedder)

    @cached_property
    def ocr(self):
        from avi.backends.ocr import RapidOcrEngine
        from avi.weights import resolve

        s = self.settings
        paths = {role: resolve(name, s.models_dir, s.weights_lock)
                 for role, name in (("det", "ppocrv6-det-small"), ("rec", "ppocrv6-rec-small"),
                                    ("cls", "ppocr-cls-mobile-v2"))}
        return RapidOcrEngine(paths)

    @cached_property
    def detector(self):
        from avi.backends.detector import OpenCvDetector

        return OpenCvDetector(iou_threshold=self.settings.iou_threshold)

    @cached_property
    def captioner(self):
        from avi.backends.captioner import PerceptionCaptioner

        return PerceptionCaptioner(self.ocr, self.detector, ocr_frames=self.settings.caption_ocr_frames)

    @cached_property
    def asr(self):
        from avi.backends.asr import FasterWhisperTranscriber
        from avi.weights import resolve

        s = self.settings
        return FasterWhisperTranscriber(resolve(s.asr_model, s.models_dir, s.weights_lock), s.asr_model,
                                        cpu_threads=s.llm_threads)

    @cached_property
    def frame_analyzer(self):
        from avi.backends.frame_analyzer import PerceptionFrameAnalyzer

        return PerceptionFrameAnalyzer(self.ocr, self.detector)

    @cached_property
    def llm(self):
        """The orchestrator's :class:`~avi.backends.llm.ChatClient`.

        With ``llm_base_url`` set, that endpoint; otherwise (cpu profile) an
        embedded llama.cpp server is started on 127.0.0.1 for this run.
        """
        from avi.backends.llm import ChatClient

        s = self.settings
        if s.llm_base_url:
            return ChatClient.connect(s.llm_base_url, model=s.llm_model, api_key=s.llm_api_key,
                                      timeout_s=s.llm_timeout_s, enable_thinking=s.llm_enable_thinking,
                                      constrain=s.llm_constrain if s.llm_constrain != "auto" else "tool_choice")
        from avi.backends.llm_server import LlamaCppServer
        from avi.weights import load_lock, resolve

        gguf = resolve(s.llm_gguf, s.models_dir, s.weights_lock)
        self._server = LlamaCppServer(gguf, n_ctx=s.llm_ctx, n_threads=s.llm_threads,
                                      start_timeout_s=s.llm_start_timeout_s,
                                      state_dir=s.home / "llm-state" if s.llm_prefix_cache else None,
                                      model_key=load_lock(s.weights_lock)[s.llm_gguf].sha256)
        self._server.start()
        return ChatClient.connect(self._server.base_url, model=self._server.model_alias, api_key="EMPTY",
                                  timeout_s=s.llm_timeout_s,
                                  constrain=s.llm_constrain if s.llm_constrain != "auto" else "json_schema")

    def close(self) -> None:
        """Stop the embedded LLM server, if this run started one."""
        if self._server is not None:
            self._server.stop()
            self._server = None
