"""The memory route as one host step of the agent (issue 53, item 4): make sure the index has its perception memory,
parse the question into a typed query, check it against the question's words (:mod:`avi.agent.memory_check`),
evaluate it, decide the route, and record all of it in the trace (a ``memory_query`` step and ``trace.memory``)."""

from __future__ import annotations

from typing import Any

from avi.agent.memory_check import check_query
from avi.agent.memory_route import Routed, decide
from avi.index.memory_stage import ensure_memory
from avi.memory.evaluate import evaluate
from avi.memory.parse import QueryParser
from avi.trace import HOST_STEP, Trace


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
            list(getattr(ctx.backends.detector, "class_list", None) or [])
        parser = QueryParser(prompts, ctx.backends.embedder, vocabulary)
        parse = parser.parse(llm, q, ctx.duration_s)
        if parse.query is not None:
            parse.query, parse.checks = check_query(parse.query, q, vocabulary)
            if parse.query is None:
                parse.error = parse.checks[-1]
        result = evaluate(mem, parse.query) if mem is not None and parse.query is not None else None
    finally:
        if mem is not None:
            mem.close()
    routed = decide(q, parse, result, note)
    observation = result.describe() if result is not None else (parse.error or f"no perception memory ({note})")
    trace.add(kind="memory_query", iteration=0, phase="retrieve", tool="memory_query",
              arguments=None if parse.query is None else parse.query.model_dump(mode="json"),
              observation=observation, observation_data=routed.to_dict(), content=parse.reply,
              llm_seconds=round(parse.seconds, 3), prompt_tokens=parse.prompt_tokens,
              completion_tokens=parse.completion_tokens,
              notes=[HOST_STEP, f"route: {routed.route} ({routed.reason})", f"memory: {note}",
                     *(f"query check: {c}" for c in parse.checks)])
    trace.memory = routed.to_dict()
    return routed
