"""The VLM frame analyser (AVI §3.3.2, frame_analysis): the question asked about the frames of given ranges."""

from __future__ import annotations

from avi.backends.frame_analyzer import FrameAnalysis
from avi.backends.vlm.frames import frames_to_content, thin_frames
from avi.backends.vlm.servers import VlmBackend
from avi.prompts import PromptLibrary
from avi.replies import strip_think
from avi.video.decode import Frame


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

    def analyze(self, frames: list[Frame], question: str, script: str | None = None) -> FrameAnalysis:
        """The VLM's answer; ``data`` = ``{"question", "frames_s", "vlm"}``. ``script`` is ignored: the VLM reads
        text itself."""
        sent = sorted(thin_frames(frames, self.max_frames), key=lambda f: f.t_s)
        data = {"question": question, "frames_s": [f.t_s for f in sent], "vlm": self.backend.name}
        if not sent:
            return FrameAnalysis("No frames could be decoded in the requested time ranges.", data)
        content = [*frames_to_content(sent, len(sent)), {"type": "text", "text": f"Question: {question}"}]
        messages = [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": content}]
        text = strip_think(self.backend.generate(messages, max_tokens=self.max_tokens))
        return FrameAnalysis(text or "(the VLM returned no answer)", data)
