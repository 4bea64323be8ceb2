"""Every host answer in one registry (issues 35, 54): each rule that may change the delivered answer is a
:class:`Rule` whose body has one signature (:data:`avi.agent.rules.base.RuleBody`); :data:`RULES` holds them in
the one order :func:`answer_early` and :func:`deliver` apply them to the model's answer read for its type:

1. ``decide``: measured answers, the first that answers wins and nothing refines it (video_length, cuts, both
   also before the first model step);
2. ``choose``: option_scores, and 3. ``type``: structured_answer, each when nothing above decided;
4. ``refine``: each may rewrite the answer so far unless a measured answer decided (count_at_moment,
   event_interval, cannot_tell).

The rule bodies: :mod:`~avi.agent.rules.videos` (over several videos), :mod:`~avi.agent.rules.decide`,
:mod:`~avi.agent.rules.choice`, :mod:`~avi.agent.rules.typed`, :mod:`~avi.agent.rules.texts`,
:mod:`~avi.agent.rules.intervals`; what they measure with: :mod:`~avi.agent.rules.measured`. Each rule's
ablation line on ``tune``: bench/README.md "Answer rules, ablated on tune".

The ``answer_rules`` setting selects them (:func:`avi.config_agent.answer_rule_names`; ``grounded_answers =
false``, which the agent over several videos sets, keeps :data:`avi.config_agent.UNGROUNDED` only); the regex
read for the type always happens. The trace's ``rules`` lists each rule that answered (``before``, ``after``,
``changed``); its steps carry its name.
"""

from __future__ import annotations

from dataclasses import replace

from avi.agent.rules import choice, decide, intervals, texts, typed, videos
from avi.agent.rules.base import Delivered, Rule, RuleRun
from avi.config_agent import ANSWER_RULES

__all__ = ["RULES", "Delivered", "Rule", "RuleRun", "answer_early", "deliver", "select_rules"]

_CHOICE = frozenset({"choice"})
_VIDEOS = frozenset({"video", "videos", "video_order"})
RULES: tuple[Rule, ...] = (
    Rule("video_length", "decide", "over several videos: a question about their lengths answered from their "
         "durations, before any model step", videos.video_length, _VIDEOS, early=videos.video_length),
    Rule("cuts", "decide", "a question about the cuts (how many, any, one continuous shot) answered from the cut "
         "list, before any model step when it can", decide.cuts, frozenset({"choice", "text", "number"}),
         lambda q: q.cut is not None, early=decide.cuts_early),
    Rule("option_scores", "choose", "the letter from option scores averaged over cyclic permutations "
         "(choice_scoring)", choice.option_scores, _CHOICE, lambda q: bool(q.options)),
    Rule("structured_answer", "type", "a typed answer (letter, letters, interval, order) from one "
         "schema-constrained final call", typed.structured_answer),
    Rule("count_at_moment", "refine", "'how many at 0:44' (or at most): the count measured there",
         texts.count_at_moment, frozenset({"number", "text"}), lambda q: q.asks_count),
    Rule("event_interval", "refine", "an interval widened to the whole evidence run, followed past the frames seen",
         intervals.event_interval, frozenset({"interval"})),
    Rule("cannot_tell", "refine", "a question about what the detector has no class for: 'Cannot tell on this "
         "profile', the model's answer kept as a marked guess", texts.cannot_tell, None, lambda q: not q.about_words),
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
            got = rule.early(run, Delivered(None))
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
        ans = replace(ans, text=None)
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
