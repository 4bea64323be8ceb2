"""The ``structured_answer`` rule (the ``type`` stage): the answer typed by one schema-constrained final call of
the orchestrator (:meth:`avi.agent.answer_types.TypedAnswers.structured`: a letter, letters, an interval, an
order). Its body has the rules' one signature (:data:`avi.agent.rules.base.RuleBody`)."""

from __future__ import annotations

from dataclasses import replace

from avi.agent.rules.base import Delivered, RuleRun


def structured_answer(run: RuleRun, ans: Delivered) -> Delivered | None:
    """The typed answer of the final call; None when the answer has no text or the call gives nothing usable."""
    final = run.answers.structured(run.st, run.trace) if ans.text is not None else None
    if final is None:
        return None
    choice = final.get("choice")
    return replace(ans, choice=choice, choices=final.get("choices"), order=final.get("order"),
                   interval=final.get("interval", ans.interval), note=None, text=final.get("answer", ans.text),
                   method="structured" if choice else ans.method)
