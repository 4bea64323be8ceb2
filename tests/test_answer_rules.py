"""The answer rules as a registry (issue 35, avi/agent/rules): their declared order, the ``answer_rules`` setting
(all, none, default per profile, names, -name), its flag and error, the paper preset, and the question parsed
once (avi/agent/question.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from avi.agent.question import parse_question
from avi.agent.rules import RULES, select_rules
from avi.config import Settings
from avi.config_agent import ANSWER_RULES, DEFAULT_RULES, SUBSUMED, answer_rule_names
from avi.errors import InputError
from avi.eval.preset import apply_paper_preset

REPO = Path(__file__).resolve().parent.parent


def test_the_registry_holds_every_rule_once_in_the_declared_order():
    assert tuple(r.name for r in RULES) == ANSWER_RULES
    stages = [r.stage for r in RULES]
    assert stages == sorted(stages, key=["decide", "choose", "type", "refine"].index)
    assert [r.name for r in RULES if r.early] == ["video_length", "cuts"]
    assert all(r.about for r in RULES)


def test_every_rule_body_has_the_one_signature_and_no_rule_is_named_outside_the_registry():
    """Issue 54, item 2: a body takes (run, answer so far) and returns the new answer or None; the agent and the
    multi-video agent name no rule by string (a rule's effect reaches them as a field of the answer)."""
    import ast
    import inspect

    for rule in RULES:
        for body in filter(None, (rule.apply, rule.early)):
            sig = inspect.signature(body)
            params = list(sig.parameters.values())
            assert len(params) >= 2 and all(p.default is not p.empty for p in params[2:]), (rule.name, sig)
            assert sig.return_annotation == "Delivered | None", (rule.name, sig)
    names = {r.name for r in RULES}
    for path in ("avi/agent/loop.py", "avi/videos/agent.py", "avi/videos/pipeline.py"):
        tree = ast.parse((REPO / path).read_text())
        settings = {id(n.args[1]) for n in ast.walk(tree) if isinstance(n, ast.Call)
                    and getattr(n.func, "id", "") == "getattr" and len(n.args) > 1}  # a setting of the same name
        strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and id(n) not in settings}
        assert not names & strings, (path, names & strings)


@pytest.mark.parametrize("value, profile, expected", [
    ("default", "cpu", ANSWER_RULES),
    ("default", "gpu", ("video_length", "structured_answer")),
    ("all", "gpu", ANSWER_RULES),
    ("none", "cpu", ()),
    ("-option_scores,-cuts", "cpu", tuple(n for n in ANSWER_RULES if n not in ("option_scores", "cuts"))),
    ("cuts, count_at_moment", "gpu", ("cuts", "count_at_moment")),
    ("all,-cannot_tell", "cpu", ANSWER_RULES[:-1]),
    ("none,structured_answer", "cpu", ("structured_answer",)),
    ("-structured_answer", "gpu", ("video_length",)),
])
def test_answer_rules_setting(value, profile, expected):
    assert answer_rule_names(value, profile) == expected


def test_unknown_rule_names_are_refused_with_the_valid_ones():
    with pytest.raises(ValueError, match="unknown answer rule 'colour'.*count_at_moment"):
        answer_rule_names("colour")
    with pytest.raises(InputError, match="answer_rules"):
        Settings.load(answer_rules="option_scores,bogus")


def test_profiles_and_grounded_answers_select_the_rules():
    assert [r.name for r in select_rules(Settings(profile="cpu"))] == list(ANSWER_RULES)
    # the memory route changes no rule: a question it leaves to the agent runs every default rule
    assert [r.name for r in select_rules(Settings(profile="cpu", memory_route=True))] == list(ANSWER_RULES)
    assert [r.name for r in select_rules(Settings(profile="gpu"))] == list(DEFAULT_RULES["gpu"])
    assert [r.name for r in select_rules(Settings(profile="cpu", grounded_answers=False))] == \
        ["video_length", "option_scores", "structured_answer"]
    assert select_rules(Settings(answer_rules="none")) == ()


def test_the_paper_preset_delivers_the_review_answer():
    settings, _, record = apply_paper_preset("lvbench", Settings(), {}, {})
    assert settings.answer_rules == "none" and record["answer_rules"] == "none" and select_rules(settings) == ()
    with pytest.raises(InputError, match="answer_rules"):
        apply_paper_preset("lvbench", Settings(), {}, {"answer_rules": "all"})


def test_the_flag_error_is_one_line_with_exit_2(tmp_path):
    avi = REPO / ".venv" / "bin" / "avi"
    if not avi.exists():
        pytest.skip("no .venv/bin/avi")
    r = subprocess.run([str(avi), "config", "show", "--answer-rules", "sizes"], capture_output=True, text=True,
                       cwd=tmp_path, timeout=120)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "cannot_tell" in r.stderr


def test_config_show_lists_the_rules_on_and_off(monkeypatch, capsys):
    import avi.backends.devices
    from avi.cli.common import settings_from_args
    from avi.cli.doctor import cmd_config

    monkeypatch.setattr(avi.backends.devices, "placement_lines", lambda settings: [])  # no torch import here
    args = type("Args", (), {"json": False, "answer_rules": "-option_scores", "profile": "cpu"})()
    assert "structured_answer" in settings_from_args(args).answer_rule_names()
    assert cmd_config(args) == 0
    out = capsys.readouterr().out
    assert "[ ] option_scores (choose)" in out and "[x] count_at_moment (refine)" in out
    assert "[x] cuts (decide)" in out  # kept with the memory route too


def test_the_memory_route_keeps_the_rules_whose_questions_it_answers():
    assert set(SUBSUMED) <= set(ANSWER_RULES)
    # the host's answer runs no rule; a question left to the agent runs the rules as without the route
    assert Settings(profile="cpu", memory_route=True).answer_rule_names() == \
        Settings(profile="cpu").answer_rule_names() == ANSWER_RULES
    assert "cuts" not in Settings(profile="cpu", memory_route=True, answer_rules="-cuts").answer_rule_names()


def test_the_question_is_parsed_once_into_one_record():
    q = parse_question("Around 0:44, how many people can be seen? A) 2 B) 3 C) none", duration_s=79.5)
    assert q.kind == "choice" and q.options == {"A": "2", "B": "3", "C": "none"}
    assert q.stem == "Around 0:44, how many people can be seen?" and q.options_text.startswith("Options: A. 2")
    assert q.clock_times == (("0:44", 44.0),) and q.named_ranges and q.mentions_time
    assert q.asks_count and not q.asks_most and q.option_numbers == {"A": 2, "B": 3, "C": 0}
    assert "people" in q.words and q.search_query == "Around 0:44, how many people can be seen"
    q = parse_question("Is the line 'About 100 metres tall' on screen after the first goal?")
    assert q.opens_with_verb and q.ordinals == (("after the first goal", "first", "goal", "after"),)
    assert parse_question("What colour is the box? A. green B. dark red").colour_options == {"A": {"green"}, "B": {"red"}}
    assert parse_question("How many cuts are there?", answer_kind="text").cut == "count"
    assert parse_question("What is said?", answer_kind="interval").kind == "interval"
