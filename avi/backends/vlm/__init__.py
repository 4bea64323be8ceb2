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

from avi.backends.vlm.captioner import VlmCaptioner
from avi.backends.vlm.frame_analyzer import VlmFrameAnalyzer
from avi.backends.vlm.frames import frame_label, frames_to_content, images_as_files, jpeg_data_url, thin_frames
from avi.backends.vlm.reply import ClipCaptionReply, SubjectEntry, caption_json_schema
from avi.backends.vlm.servers import OpenAIVlmBackend, TransformersVlmBackend, VlmBackend
from avi.replies import first_json_object, strip_think

__all__ = ["ClipCaptionReply", "OpenAIVlmBackend", "SubjectEntry", "TransformersVlmBackend", "VlmBackend",
           "VlmCaptioner", "VlmFrameAnalyzer", "caption_json_schema", "first_json_object", "frame_label",
           "frames_to_content", "images_as_files", "jpeg_data_url", "strip_think", "thin_frames"]
