"""The host's answer rules (issue 35): each rule that may change the delivered answer is a :class:`Rule`;
:data:`RULES` holds them in the one order :func:`deliver` applies them to the model's answer read for its type:

1. ``decide``: measured answers, the first that answers wins and nothing refines it (cuts, colour_choice,
   scale_choice, direction; cuts also before the first model step);
2. ``choose``: option_scores, and 3. ``type``: structured_answer, each when nothing above decided;
4. ``refine``: each may rewrite the answer so far unless a measured answer decided (count_at_moment,
   event_interval, shot_edges, cannot_tell).

Each kept rule won at least one ``report`` question net in the ablation of issue 35 (bench/README.md "Answer
rules, ablated"); the nine that won none were deleted.

The ``answer_rules`` setting selects them (:func:`avi.config_agent.answer_rule_names`; ``grounded_answers =
false`` keeps option_scores and structured_answer only); the regex read for the type always happens. The trace's
``rules`` lists each rule that answered (``before``, ``after``, ``changed``); its steps carry its name.
"""

from __future__ import annotations

import dataclasses

from avi.agent import choice as choice_mod
from avi.agent.parse import extract_choice
from avi.agent.rule_base import Delivered, Rule, RuleRun
from avi.agent.rules import decide, intervals, texts
from avi.config_agent import ANSWER_RULES

__all__ = ["RULES", "Delivered", "Rule", "RuleRun", "answer_early", "deliver", "select_rules"]

def _decided(measure):
    """A ``decide`` rule's apply from a function returning ``(text, letter or None)``."""
    def apply(run: RuleRun, ans: Delivered) -> Delivered | None:
        got = measure(run)
        if got is None:
            return None
        extra = {"choice": got[1], "method": "measured"} if got[1] else {}
        return dataclasses.replace(ans, text=got[0], note=None, **extra)
    return apply


def _text(refine):
    """A ``refine`` rule's apply from a function rewriting the answer text (it is only given a text)."""
    def apply(run: RuleRun, ans: Delivered) -> Delivered | None:
        new = refine(run, ans.text) if ans.text is not None else ans.text
        return None if new == ans.text else dataclasses.replace(ans, text=new)
    return apply


def _interval(move):
    """An interval ``refine`` rule's apply from a function moving the interval (the text then says the same)."""
    def apply(run: RuleRun, ans: Delivered) -> Delivered | None:
        if not ans.interval:
            return None
        new = move(run, ans.interval)
        if new == ans.interval:
            return None
        return dataclasses.replace(ans, interval=new, text=f"[{new[0]:.1f}s, {new[1]:.1f}s]")
    return apply


def _early_cuts(run: RuleRun) -> Delivered | None:
    got = decide.cuts_before_the_model(run)
    return Delivered(got[0], got[1]) if got else None


def _cuts(run: RuleRun, ans: Delivered) -> Delivered | None:
    return _decided(lambda r: r.st.measured or decide.measured_cuts(r))(run, ans)


def _option_scores(run: RuleRun, ans: Delivered) -> Delivered | None:
    picked = choice_mod.option_scores(run)
    if picked is None:
        return None
    choice, method = picked
    keep = ans.text is not None and extract_choice(ans.text, run.q.options) == choice
    return dataclasses.replace(ans, choice=choice, method=method, note=None,
                               text=ans.text if keep else f"{choice}. {run.q.options[choice]}")


def _structured(run: RuleRun, ans: Delivered) -> Delivered | None:
    final = run.answers.structured(run.st, run.trace) if ans.text is not None else None
    if final is None:
        return None
    choice = final.get("choice")
    return dataclasses.replace(ans, choice=choice, choices=final.get("choices"), order=final.get("order"),
                               interval=final.get("interval", ans.interval), note=None, text=final.get("answer", ans.text),
                               method="structured" if choice else ans.method)


def _cannot_tell(run: RuleRun, ans: Delivered) -> Delivered | None:
    new = texts.cannot_tell(run, ans.text, ans.choice)
    return None if new is None else dataclasses.replace(ans, text=new)


_CHOICE = frozenset({"choice"})
RULES: tuple[Rule, ...] = (
    Rule("cuts", "decide", "a question about the cuts (how many, any, one continuous shot) answered from the cut "
         "list, before any model step when it can", _cuts, frozenset({"choice", "text", "number"}),
         lambda q: q.cut is not None, early=_early_cuts),
    Rule("colour_choice", "decide", "colour options: the option with the colour measured on the thing's box or "
         "the frames", _decided(decide.colour_choice_measured), _CHOICE,
         lambda q: bool(q.options) and q.colour_options is not None),
    Rule("scale_choice", "decide", "options naming a shot scale or a black screen: the one the shots' frames show",
         _decided(decide.scale_choice_measured), _CHOICE, lambda q: bool(q.options) and q.scale_options is not None),
    Rule("direction", "decide", "'left or right': the way the thing's boxes moved",
         _decided(decide.direction_measured), None, lambda q: q.asks_direction),
    Rule("option_scores", "choose", "the letter from option scores averaged over cyclic permutations "
         "(choice_scoring)", _option_scores, _CHOICE, lambda q: bool(q.options)),
    Rule("structured_answer", "type", "a typed answer (letter, letters, interval, order) from one "
         "schema-constrained final call", _structured),
    Rule("count_at_moment", "refine", "'how many at 0:44' (or at most): the count measured there",
         _text(texts.count_at_moment), frozenset({"number", "text"}), lambda q: q.asks_count),
    Rule("event_interval", "refine", "an interval widened to the whole evidence run, followed past the frames seen",
         _interval(lambda r, i: i if intervals.shot_question(r) else intervals.event_interval(r, i)),
         frozenset({"interval"})),
    Rule("shot_edges", "refine", "an interval moved onto the shot edges (whole shots for a shot question)",
         _interval(intervals.shot_edges), frozenset({"interval"})),
    Rule("cannot_tell", "refine", "a question about what the detector has no class for: 'Cannot tell on this "
         "profile', the model's answer kept as a marked guess", _cannot_tell, None, lambda q: not q.about_words),
)
"""Every answer rule, in the order :func:`deliver` applies them."""
assert tuple(r.name for r in RULES) == ANSWER_RULES, "avi.config_agent.ANSWER_RULES must list RULES in order"


def select_rules(settings) -> tuple[Rule, ...]:
    """The rules in effect under ``settings`` (:meth:`avi.config.Settings.answer_rule_names`)."""
    names = set(settings.answer_rule_names())
    return tuple(r for r in RULES if r.name in names)


def _record(run: RuleRun, rule: Rule, before: Delivered, after: Delivered, first_step: int) -> Delivered:
    """Note in the trace that ``rule`` answered (its steps carry its name) and what it replaced."""
    for step in run.trace.steps[first_step:]:
        step.rule = rule.name
    run.trace.rules.append({"rule": rule.name, "before": before.shown(), "after": after.shown(),
                            "changed": before.shown() != after.shown()})
    run.st.answer = after.text
    return after


def answer_early(run: RuleRun, rules: tuple[Rule, ...]) -> bool:
    """Try the rules that can answer before the first model step (the model is then not asked); True when one
    answered (``run.st.answer`` is set)."""
    for rule in rules:
        if rule.early is not None and rule.applies(run.q):
            first = len(run.trace.steps)
            got = rule.early(run)
            if got is not None:
                _record(run, rule, Delivered(None), got, first)
                return True
    return False


def deliver(run: RuleRun, rules: tuple[Rule, ...], ans: Delivered) -> Delivered:
    """Apply ``rules`` (in :data:`RULES` order, module docstring) to the answer read for its type, ``ans``.

    Returns:
        the delivered answer: an answer whose text could not be read for its type (``note``) and that no rule
        decided has no text (never a guess).
    """
    decided = None
    for rule in rules:
        if rule.stage in ("decide", "choose", "type"):
            first = len(run.trace.steps)
            got = rule(run, ans)
            if got is not None:
                ans, decided = _record(run, rule, ans, got, first), rule
                break
    if ans.note:
        ans = dataclasses.replace(ans, text=None)
        run.st.answer = None
    if decided is not None and decided.stage == "decide":
        return ans  # a measured answer stands as it is
    for rule in rules:
        if rule.stage != "refine":
            continue
        first = len(run.trace.steps)
        got = rule(run, ans)
        if got is not None:
            ans = _record(run, rule, ans, got, first)
    return ans
