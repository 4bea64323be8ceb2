"""The memory route as one host step of the agent (issue 53, item 4): make sure the index has its perception memory,
parse the question into a typed query, check it against the question's words (:mod:`avi.agent.memory_check`),
evaluate it, decide the route, and record all of it in the trace (a ``memory_query`` step and ``trace.memory``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from avi.agent.memory_check import check_query, question_regions
from avi.agent.memory_route import Routed, decide
from avi.index.memory_stage import ensure_memory
from avi.memory.evaluate import evaluate
from avi.memory.match import form_match, in_region, pattern_words
from avi.memory.parse import QueryParser
from avi.memory.store import normalise
from avi.trace import HOST_STEP, Trace

#: clips of a read the text is read again in, at most
REREAD_CLIPS = 3


def memory_step(llm, prompts, ctx: Any, q: Any, trace: Trace) -> Routed:
    """Run the memory route for the question ``q`` (an :class:`avi.agent.question.ParsedQuestion`) on the video of
    ``ctx`` (a :class:`avi.tools.ToolContext`) with the orchestrator ``llm``.

    Raises:
        LLMUnavailableError: the orchestrator cannot be reached.
        WeightsError: a model's weights are missing or damaged.
    """
    mem, note = ensure_memory(ctx.index, ctx.settings, ctx.backends)
    try:
        vocabulary = mem.vocabulary if mem is not None else \
            list(ctx.backends.detector.class_list or [])
        parser = QueryParser(prompts, ctx.backends.embedder, vocabulary)
        parse = parser.parse(llm, q, ctx.duration_s,
                             leave_one_out=getattr(ctx.settings, "parse_leave_one_out", False))
        if parse.query is not None:
            parse.query, parse.checks = check_query(parse.query, q, vocabulary)
            if parse.query is None:
                parse.error = parse.checks[-1]
        result = evaluate(mem, parse.query) if mem is not None and parse.query is not None else None
        frame_size = (mem.width, mem.height) if mem is not None else (0, 0)
    finally:
        if mem is not None:
            mem.close()
    reread = reread_text(ctx, q, result, frame_size) if result is not None else None
    routed = decide(q, parse, result, note, ctx.duration_s)
    observation = result.describe() if result is not None else (parse.error or f"no perception memory ({note})")
    trace.add(kind="memory_query", iteration=0, phase="retrieve", tool="memory_query",
              arguments=None if parse.query is None else parse.query.model_dump(mode="json"),
              observation=observation, observation_data=routed.to_dict(), content=parse.reply,
              llm_seconds=round(parse.seconds, 3), prompt_tokens=parse.prompt_tokens,
              completion_tokens=parse.completion_tokens,
              notes=[HOST_STEP, f"route: {routed.route} ({routed.reason})", f"memory: {note}",
                     *(f"query check: {c}" for c in parse.checks), *([reread] if reread else [])])
    trace.memory = routed.to_dict()
    return routed


def placed_in_picture(q: Any, region: str) -> bool:
    """Whether the question places ``region`` in the picture ("the banner at the bottom of the picture") rather than
    in a thing ("the bottom of the list", "the top edge of the lid")."""
    return region != "any" and region in question_regions(q.stem or q.text, in_picture=True)


def pick_line(texts: list[dict], region: str, in_picture: bool, frame_size: tuple[int, int]) -> dict:
    """The line a read answers with, of ``texts`` (each with ``text``, ``score``, ``box`` xyxy in pixels of a
    ``frame_size`` (width, height) frame): a region placed in the picture keeps the lines whose box centre lies in
    it (the memory's regions: halves, the middle third, quarter-planes) and takes the surest, longest of them; a
    region of a thing ("the bottom of the list") takes the line furthest that way; no region, the surest line."""
    width, height = frame_size
    if in_picture and width and height:
        inside = [t for t in texts if in_region(_centre(t)[0] / width, _centre(t)[1] / height, region)]
        return _surest(inside or texts)
    if region in ("bottom", "top") and height:
        return (max if region == "bottom" else min)(texts, key=lambda t: _centre(t)[1])
    if region in ("left", "right") and width:
        return (max if region == "right" else min)(texts, key=lambda t: _centre(t)[0])
    return _surest(texts)


def _centre(line: dict) -> tuple[float, float]:
    x1, y1, x2, y2 = line["box"][:4]
    return (x1 + x2) / 2, (y1 + y2) / 2


def _surest(texts: list[dict]) -> dict:
    return max(texts, key=lambda t: (t["score"], len(t["text"])))


def reread_text(ctx: Any, q: Any, result, frame_size: tuple[int, int]) -> str | None:
    """Read on-screen text again with ``text_extract`` where the memory found it, and take the tool's reading.

    The memory keeps the perception captioner's OCR of three frames per clip, in every script; the tool reads the
    found clips' frames closely, in the question's script (:func:`avi.backends.ocr_script.question_script`) and
    with each line's box, so a region picks a line (:func:`pick_line`). Only for a covered ``read`` of
    on-screen text; ``result`` is changed in place (its value, a row per line read).

    Returns:
        one line for the trace, or None when nothing was read again.
    """
    from avi.backends.ocr_script import question_script
    from avi.tools import ALL_TOOLS

    query = result.query
    if query.target != "text" or query.op != "read" or not result.covered or not result.evidence:
        return None
    if query.time.is_moment:
        ranges = [[query.time.start_s, query.time.start_s]]
    else:
        ranges = [list(map(float, e[:2])) for e in result.evidence[:REREAD_CLIPS]]
    reading = ctx.for_question(replace(ctx.scope, text_script=question_script(q.text))) \
        if getattr(ctx.settings, "ocr_question_script", True) else ctx
    obs = ALL_TOOLS["text_extract"].run(reading, {"time_ranges": ranges})
    ctx.settle(reading)  # the question's budget counts the frames re-read
    texts = [t for t in (obs.data.get("texts") or []) if not obs.error]
    words = pattern_words(query.pattern)
    if words:
        texts = [t for t in texts if all(w in normalise(t["text"]).split() or any(
            x.startswith(w) for x in normalise(t["text"]).split()) for w in words)]
    if query.form:
        texts = [dict(t, text=part) for t in texts if (part := form_match(t["text"], query.form)) is not None]
    if not texts:
        return f"text re-read with text_extract in {ranges}: nothing legible, the memory's reading kept"
    pick = pick_line(texts, query.region, placed_in_picture(q, query.region), frame_size)
    before = result.value
    result.value = pick["text"]
    result.rows = [{"text": t["text"], "score": t["score"], "box": t["box"], "first_s": t["first_s"],
                    "last_s": t["last_s"], "read": "text_extract"} for t in texts][:12] + result.rows
    return f"text re-read with text_extract in {ranges}: {pick['text']!r} (the memory read {before!r})"
