"""Model roles behind Protocols, one implementation per backend, chosen by profile.

:class:`Backends` builds each role lazily on first use, so a command only pays
for the models it needs (``avi index`` never starts the LLM; a question on an
existing index never loads the captioner's OCR unless a tool asks for it).

Roles, chosen by settings (docs/tools.md, "Models per profile"):

============  ====================================================  ==========================================
role          cpu profile (default)                                 configured endpoint / local model
============  ====================================================  ==========================================
llm           embedded llama.cpp server (Qwen2.5-Coder-1.5B GGUF)   ``llm_base_url`` (vLLM Qwen3-32B)
embedder      SentenceTransformerEmbedder (MiniLM)                  ``embedder_base_url`` (/v1/embeddings) or
                                                                    ``embedder_model_dir`` (Qwen3-Embedding-4B)
captioner     PerceptionCaptioner (OCR, detectors, pixels)          ``vlm_base_url`` or ``vlm_model_dir``:
                                                                    VlmCaptioner (Qwen3-VL)
frames        PerceptionFrameAnalyzer                               same VLM: VlmFrameAnalyzer
ocr           RapidOcrEngine (PP-OCRv6)                             ``ocr_paddle_det_dir`` + ``ocr_paddle_rec_dir``
                                                                    (+ ``ocr_paddle_cls_dir``): PaddleOcrEngine
detector      CpuDetector: NanoDet-m (80 COCO classes, onnxruntime)  ``detector_model_dir``: GroundingDinoDetector
              + Haar cascade for faces                              (or the groundingdino-py adapter)
asr           FasterWhisperTranscriber (Whisper base int8)          same class, large-v3 weights (gpu issue)
clip_scorer   None: boundary_detect falls back to colour-histogram  ``open_clip_model`` (+ ``open_clip_checkpoint``):
              shots scored by caption similarity                    OpenClipScorer; or ``clip_model_dir``:
                                                                    HfClipScorer (transformers CLIP)
============  ====================================================  ==========================================

Every in-process model runs where its ``<role>_device`` / ``<role>_dtype`` settings say (:mod:`avi.config_devices`;
``auto`` = CUDA in half precision when torch sees a GPU, else the CPU in float32), resolved and checked by
:mod:`avi.backends.devices`.
"""

from avi.backends.factory import Backends

__all__ = ["Backends"]
