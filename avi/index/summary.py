"""Hierarchical summary of a video's captions, the material of ``global_explore`` (AVI §3.3.1).

Runs of identical consecutive captions are folded into one line over the run
(:func:`avi.index.caption_runs.merge_repeats`), then consecutive captions are grouped into segments of at most
``chunk_chars`` characters; the LLM summarises each segment (prompts/summary_segment.md), then the whole video
from the segment summaries (prompts/summary_video.md). Times stay attached to every segment, so global_explore
can point at candidate segments. A segment whose summary comes back empty is recorded as failed, not filled
in.
"""

from __future__ import annotations

import time

from avi.backends.types import Caption
from avi.index.caption_runs import merge_repeats
from avi.video.timecode import fmt_range


def caption_lines(captions: list[Caption]) -> list[tuple[Caption, str]]:
    """``[start–end] text`` line of each caption that has text, in time order."""
    return [(c, f"{fmt_range(c.start_s, c.end_s)} {c.text}") for c in sorted(captions, key=lambda c: c.start_s)
            if c.text.strip()]


def chunk_captions(captions: list[Caption], chunk_chars: int) -> list[list[tuple[Caption, str]]]:
    """Consecutive caption lines grouped so that each group has at most ``chunk_chars`` characters
    (a single longer line forms a group of its own)."""
    groups: list[list[tuple[Caption, str]]] = []
    size = 0
    for cap, line in caption_lines(captions):
        if groups and size + len(line) + 1 <= chunk_chars:
            groups[-1].append((cap, line))
            size += len(line) + 1
        else:
            groups.append([(cap, line)])
            size = len(line) + 1
    return groups


def build_summary(captions: list[Caption], llm, prompts, *, chunk_chars: int = 4000, max_tokens: int = 400,
                  progress=None) -> dict:
    """Segment summaries and a whole-video summary.

    Args:
        captions: the video's clip captions.
        llm: a :class:`~avi.backends.llm.ChatClient` (or None: no summary).
        prompts: :class:`~avi.prompts.PromptLibrary` with summary_segment and summary_video.
        progress: called with (done, total) after each LLM call.

    Returns:
        ``{"segments": [{start_s, end_s, summary}], "video": str | None, "failed": [...],
        "llm": model name, "seconds": float}``.

    Raises:
        LLMUnavailableError: the LLM cannot be reached (the build stops and resumes later).
    """
    t0 = time.perf_counter()
    out = {"segments": [], "video": None, "failed": [], "llm": getattr(llm, "model", None), "seconds": 0.0}
    if llm is None:
        return out
    groups = chunk_captions(merge_repeats(sorted(captions, key=lambda c: c.start_s)), chunk_chars)
    total = len(groups) + (1 if len(groups) > 1 else 0)
    for i, group in enumerate(groups):
        start, end = group[0][0].start_s, group[-1][0].end_s
        prompt = prompts.render("summary_segment", captions="\n".join(line for _, line in group),
                                span=fmt_range(start, end))
        text = _ask(llm, prompt, max_tokens)
        if text:
            out["segments"].append({"start_s": start, "end_s": end, "summary": text})
        else:
            out["failed"].append({"start_s": start, "end_s": end, "reason": "empty summary"})
        if progress:
            progress(i + 1, total)
    if len(out["segments"]) == 1:
        out["video"] = out["segments"][0]["summary"]
    elif out["segments"]:
        lines = "\n".join(f"{fmt_range(s['start_s'], s['end_s'])} {s['summary']}" for s in out["segments"])
        out["video"] = _ask(llm, prompts.render("summary_video", segments=lines), max_tokens) or None
        if out["video"] is None:
            out["failed"].append({"reason": "empty whole-video summary"})
        if progress:
            progress(total, total)
    out["seconds"] = round(time.perf_counter() - t0, 2)
    return out


def _ask(llm, prompt: str, max_tokens: int) -> str:
    from avi.replies import split_thought

    # thinking off: a Qwen3 that thinks first can spend the whole budget in <think> (issue 37)
    res = llm.chat([{"role": "user", "content": prompt}], max_tokens=max_tokens, temperature=0.0, seed=0,
                   thinking=False)
    return " ".join(split_thought(res.content)[1].split())
