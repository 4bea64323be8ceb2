"""The VLM clip captioner (AVI §3.2.1): a JSON caption with a subject registry per clip, validated, one repair retry."""

from __future__ import annotations

from pydantic import ValidationError

from avi.backends.types import Caption
from avi.backends.vlm.frames import frames_to_content, thin_frames
from avi.backends.vlm.reply import ClipCaptionReply, caption_json_schema, validation_message
from avi.backends.vlm.servers import VlmBackend
from avi.prompts import PromptLibrary
from avi.replies import first_json_object
from avi.video.clips import Clip
from avi.video.decode import Frame


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
            backend's ``max_concurrency`` when it has one (the in-process VLM's
            batch size; the factory passes ``vlm_batch_size`` for it and
            ``caption_concurrency`` for a VLM server).
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
            raise ValueError(validation_message(exc)) from None
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

    def request(self, clip: Clip, frames: list[Frame]) -> tuple[list[dict], list[Frame]]:
        """The first request of a clip's caption and the frames it sends: the system prompt, then the clip's
        bounds and up to ``frames_per_clip`` frames (thinned uniformly), each after its time label (the
        frames as JPEG data URLs). ``([], [])`` when ``frames`` is empty."""
        sent = thin_frames(frames, self.frames_per_clip)
        if not sent:
            return [], []
        header = {"type": "text", "text": f"Clip from {clip.start_s:.1f}s to {clip.end_s:.1f}s "
                                          f"({len(sent)} frames, in time order)."}
        return [{"role": "system", "content": self.system_prompt},
                {"role": "user", "content": [header, *frames_to_content(sent, len(sent))]}], sent

    def caption(self, clip: Clip, frames: list[Frame], previous: Frame | None = None) -> Caption:
        """Caption of ``clip`` from its frames (``previous`` is not used by the VLM).

        Raises:
            LLMUnavailableError, AviError: from the backend (server unreachable or an
                error status); these are not recorded as failed captions, because
                they would fail every clip the same way.
        """
        messages, sent = self.request(clip, frames)
        base = {"frames_s": [f.t_s for f in sent], "vlm": self.backend.name}
        if not sent:
            return Caption(clip.index, clip.start_s, clip.end_s, "", self.name,
                           {"failed": "no frames could be decoded in this clip", "raw": "", **base})
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
