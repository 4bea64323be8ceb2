"""Unit tests for avi/agent/parse.py: the tolerant but non-guessing reply parser."""

from __future__ import annotations

import pytest

from avi.agent.parse import (
    ParsedCall,
    extract_choice,
    extract_interval,
    find_answer,
    find_stage_switch,
    find_tool_call,
    parse_reply,
)
from avi.agent.question import parse_options
from avi.replies import iter_json_objects, split_thought

# ----------------------------------------------------------------- split_thought


def test_split_thought_closed_block():
    thought, rest = split_thought("<think>look at 0:40 first</think>\nI will search.")
    assert thought == "look at 0:40 first"
    assert rest == "I will search."


def test_split_thought_several_blocks_and_case():
    thought, rest = split_thought("<THINK>one</THINK> mid <think>two</think> end")
    assert thought == "one\ntwo"
    assert "think" not in rest.lower()
    assert rest.startswith("mid") and rest.endswith("end")


def test_split_thought_unclosed_makes_remainder_a_thought():
    thought, rest = split_thought('Visible part <think>still reasoning {"name": "x"}')
    assert thought == 'still reasoning {"name": "x"}'
    assert rest == "Visible part"


def test_split_thought_closing_tag_without_opening_one():
    # the chat template opened the block in the prompt: what comes before the closing tag is the thought
    thought, rest = split_thought("reasoning leaked</think>**Answer:** B")
    assert thought == "reasoning leaked"
    assert rest == "**Answer:** B"


def test_split_thought_none_and_plain():
    assert split_thought(None) == ("", "")
    assert split_thought("  just text  ") == ("", "just text")


# ----------------------------------------------------------------- iter_json_objects


def test_iter_json_objects_braces_inside_strings():
    text = 'pre {"a": "}{", "b": "x{y"} post'
    found = list(iter_json_objects(text))
    assert len(found) == 1
    start, end, obj = found[0]
    assert obj == {"a": "}{", "b": "x{y"}
    assert text[start:end] == '{"a": "}{", "b": "x{y"}'


def test_iter_json_objects_escaped_quote_in_string():
    text = r'{"q": "say \"}\" now"}'
    (_, _, obj), = list(iter_json_objects(text))
    assert obj == {"q": 'say "}" now'}


def test_iter_json_objects_doubled_braces_unwrapped():
    text = 'call: {{"name": "clip_retrieve", "arguments": {"query": "dog"}}}'
    found = list(iter_json_objects(text))
    assert len(found) == 1
    start, end, obj = found[0]
    assert obj == {"name": "clip_retrieve", "arguments": {"query": "dog"}}
    assert text[start:end].startswith("{{") and end == len(text)


def test_iter_json_objects_python_literal_dict():
    (_, _, obj), = list(iter_json_objects("{'name': 'object_detect', 'ok': True, 'n': None}"))
    assert obj == {"name": "object_detect", "ok": True, "n": None}


def test_iter_json_objects_multiple_and_skips_non_objects():
    text = '{not json} then {"a": 1} and {"b": [1, 2]}'
    objs = [o for _, _, o in iter_json_objects(text)]
    assert objs == [{"a": 1}, {"b": [1, 2]}]


def test_iter_json_objects_inner_object_of_unparseable_outer():
    # The outer span does not parse; scanning resumes inside and finds the inner object.
    objs = [o for _, _, o in iter_json_objects('{oops {"a": 1}}')]
    assert objs == [{"a": 1}]


def test_iter_json_objects_unclosed_yields_nothing():
    assert list(iter_json_objects('{"a": 1')) == []


# ----------------------------------------------------------------- find_tool_call


def test_find_tool_call_plain_json():
    text = 'I will search. {"name": "clip_retrieve", "arguments": {"query": "red car", "top_k": 4}}'
    call = find_tool_call(text)
    assert call == ParsedCall("clip_retrieve", {"query": "red car", "top_k": 4}, None,
                              '{"name": "clip_retrieve", "arguments": {"query": "red car", "top_k": 4}}')


def test_find_tool_call_inside_tool_call_tags():
    text = '<tool_call>\n{"name": "text_extract", "arguments": {"time_ranges": [[1, 2]]}}\n</tool_call>'
    call = find_tool_call(text)
    assert call.name == "text_extract"
    assert call.arguments == {"time_ranges": [[1, 2]]}
    assert call.error is None
    assert "<tool_call>" not in call.raw


def test_find_tool_call_parameters_key():
    call = find_tool_call('{"name": "object_detect", "parameters": {"objects": ["person"]}}')
    assert call.name == "object_detect"
    assert call.arguments == {"objects": ["person"]}


def test_find_tool_call_arguments_as_json_string():
    call = find_tool_call('{"name": "clip_retrieve", "arguments": "{\\"query\\": \\"dog\\"}"}')
    assert call.error is None
    assert call.arguments == {"query": "dog"}


def test_find_tool_call_arguments_string_not_object_is_error():
    call = find_tool_call('{"name": "clip_retrieve", "arguments": "dog"}')
    assert call.name == "clip_retrieve"
    assert call.arguments is None
    assert "not a JSON object" in call.error


def test_find_tool_call_arguments_list_is_error():
    call = find_tool_call('{"name": "clip_retrieve", "arguments": [1, 2]}')
    assert call.arguments is None
    assert "must be a JSON object" in call.error and "list" in call.error


def test_find_tool_call_openai_style():
    text = '{"type": "function", "function": {"name": "frame_analysis", "arguments": {"question": "who?"}}}'
    call = find_tool_call(text)
    assert call.name == "frame_analysis"
    assert call.arguments == {"question": "who?"}


def test_find_tool_call_flat_arguments_without_type():
    call = find_tool_call('{"type": "function", "name": "clip_retrieve", "query": "cat"}')
    assert call.arguments == {"query": "cat"}


def test_find_tool_call_malformed_json_sets_error():
    call = find_tool_call('{"name": "clip_retrieve", "arguments": {"query": "dog",}')
    assert call is not None
    assert call.arguments is None
    assert call.error and "not valid JSON" in call.error


def test_find_tool_call_unparseable_tag_sets_error():
    call = find_tool_call("<tool_call>clip_retrieve(query=dog)</tool_call>")
    assert call is not None and call.error


def test_find_tool_call_plain_prose_is_none():
    assert find_tool_call("The man wears a red hat, so the answer is B.") is None


def test_find_tool_call_object_without_name_is_none():
    assert find_tool_call('The boxes are {"x": 1, "y": 2}.') is None


def test_find_tool_call_first_of_several():
    text = '{"name": "a", "arguments": {}} {"name": "b", "arguments": {}}'
    assert find_tool_call(text).name == "a"


# ----------------------------------------------------------------- find_stage_switch


@pytest.mark.parametrize("text, phase", [
    ("[STAGE_SWITCH: perceive]", "perceive"),
    ("[stage_switch: Review]", "review"),
    ("[Stage Switch : PERCEPTION]", "perceive"),
    ("[STAGESWITCH:retrieval]", "retrieve"),
])
def test_find_stage_switch_variants(text, phase):
    assert find_stage_switch("Done searching. " + text) == phase


def test_find_stage_switch_last_directive_wins():
    assert find_stage_switch("[STAGE_SWITCH: perceive] ... [STAGE_SWITCH: review]") == "review"


def test_find_stage_switch_unknown_phase_ignored():
    assert find_stage_switch("[STAGE_SWITCH: review] then [STAGE_SWITCH: dance]") == "review"
    assert find_stage_switch("[STAGE_SWITCH: dance]") is None


def test_find_stage_switch_absent():
    assert find_stage_switch("switch to perceive now") is None
    assert find_stage_switch(None) is None


# ----------------------------------------------------------------- find_answer


def test_find_answer_bold_label_then_letter():
    assert find_answer("Evidence is clear.\n**Answer:** B") == "B"


def test_find_answer_answer_inside_bold():
    assert find_answer("**Answer: 3 people**") == "3 people"


def test_find_answer_final_answer():
    assert find_answer("**Final Answer:** [12.5s, 20.0s]") == "[12.5s, 20.0s]"


def test_find_answer_first_paragraph_only():
    assert find_answer("**Answer:** C. the red car\n\nBecause the caption at 40s says so.") == "C. the red car"


def test_find_answer_plain_label_only_when_lenient():
    text = "I looked everywhere.\nAnswer: D"
    assert find_answer(text) is None
    assert find_answer(text, lenient=True) == "D"


def test_find_answer_strips_trailing_stage_switch():
    assert find_answer("**Answer:** B [STAGE_SWITCH: review]") == "B"


def test_find_answer_absent_or_empty():
    assert find_answer("no answer here") is None
    assert find_answer(None) is None
    assert find_answer("**Answer:** [STAGE_SWITCH: review]") is None


# ----------------------------------------------------------------- parse_options


def test_parse_options_lines():
    q = "What colour is the car?\nA. red\nB. blue\nC. green"
    assert parse_options(q) == {"A": "red", "B": "blue", "C": "green"}


def test_parse_options_parenthesised_lines():
    assert parse_options("Who?\n(A) the man\n(B) the woman") == {"A": "the man", "B": "the woman"}


def test_parse_options_inline():
    assert parse_options("Which animal? A. cat B. dog C) bird") == {"A": "cat", "B": "dog", "C": "bird"}


@pytest.mark.parametrize("q", [
    "Only one:\nA. cat",
    "Starts late:\nB. cat\nC. dog",
    "Gap:\nA. cat\nC. dog",
    "No options at all?",
    "",
])
def test_parse_options_needs_consecutive_from_a(q):
    assert parse_options(q) == {}


# ----------------------------------------------------------------- extract_choice

OPTS = {"A": "red car", "B": "blue truck", "C": "green bus"}


@pytest.mark.parametrize("answer, letter", [
    ("B", "B"),
    ("b", "B"),
    ("B.", "B"),
    ("B. blue truck", "B"),
    ("C) green bus", "C"),
    ("A, because it is red", "A"),
    ("green bus", "C"),
    ("Blue Truck.", "B"),
])
def test_extract_choice_accepted_forms(answer, letter):
    assert extract_choice(answer, OPTS) == letter


@pytest.mark.parametrize("answer, letter", [("(B)", "B"), ("Option C", "C")])
def test_extract_choice_parenthesised_and_option_prefix(answer, letter):
    assert extract_choice(answer, OPTS) == letter


@pytest.mark.parametrize("answer", ["Because the car is red", "Both", "D", "Cars", "", None])
def test_extract_choice_never_guesses(answer):
    assert extract_choice(answer, OPTS) is None


def test_extract_choice_article_a_is_not_option_a():
    assert extract_choice("a purple van", OPTS) is None


def test_extract_choice_no_options():
    assert extract_choice("B", {}) is None


# ----------------------------------------------------------------- extract_interval


@pytest.mark.parametrize("answer, expected", [
    ("[12.5s, 20.0s]", [12.5, 20.0]),
    ("The event is at [0:12, 0:20].", [12.0, 20.0]),
    ("[30, 10]", [10.0, 30.0]),
    ("[5 to 7]", [5.0, 7.0]),
    ("[1:02:03 - 1:02:10]", [3723.0, 3730.0]),
])
def test_extract_interval(answer, expected):
    assert extract_interval(answer) == expected


@pytest.mark.parametrize("answer", ["B", "around twelve seconds", "12.5s to 20s", "", None])
def test_extract_interval_none(answer):
    assert extract_interval(answer) is None


# ----------------------------------------------------------------- parse_reply


def test_parse_reply_written_call_thought_is_visible_text_without_json():
    r = parse_reply('I should search first.\n<tool_call>{"name": "clip_retrieve", "arguments": {"query": "dog"}}'
                    '</tool_call>')
    assert r.call.name == "clip_retrieve" and r.call.arguments == {"query": "dog"}
    assert r.native is False and r.extra_calls == 0
    assert r.thought == "I should search first."
    assert "clip_retrieve" in r.text  # text keeps the call


def test_parse_reply_native_calls_take_precedence():
    content = 'I will look. {"name": "text_extract", "arguments": {"time_ranges": [[1, 2]]}}'
    r = parse_reply(content, native_calls=[("clip_retrieve", '{"query": "cat"}'), ("object_detect", {})])
    assert r.native is True
    assert r.call.name == "clip_retrieve"
    assert r.call.arguments == {"query": "cat"}
    assert r.call.raw == ""
    assert r.extra_calls == 1


def test_parse_reply_think_and_reasoning_field():
    r = parse_reply("<think>inner</think>**Answer:** A", reasoning="server reasoning")
    assert r.thought == "server reasoning\ninner"
    assert r.text == "**Answer:** A"
    assert r.answer == "A"
    assert r.call is None


def test_parse_reply_switch_and_defaults():
    r = parse_reply("Enough clips found. [STAGE_SWITCH: perceive]")
    assert r.switch == "perceive"
    assert r.answer is None and r.call is None
    assert r.thought == r.text == "Enough clips found. [STAGE_SWITCH: perceive]"
    assert r.notes == []


def test_parse_reply_empty_content():
    r = parse_reply(None)
    assert (r.thought, r.text, r.call, r.switch, r.answer) == ("", "", None, None, None)


@pytest.mark.parametrize("question, options, expected", [
    ("When does the red car appear?", {}, "interval"),
    ("Give the time span in which the sign is shown.", {}, "interval"),
    ("At what time does the door open?", {}, "interval"),
    ("What time does the clock on the wall show?", {}, "text"),  # a clock's reading, not a "when"
    ("At what time does the clock fall off the wall?", {}, "interval"),
    ("What colour is the car?", {"A": "red", "B": "blue"}, "choice"),
    ("How many people are visible at 0:40?", {}, "text"),
    ("What is written on the sign?", {}, "text"),
    ("Select all that apply: which colours appear?", {"A": "red", "B": "blue"}, "multi"),
    ("Which of these are true? Choose all correct options.", {"A": "x", "B": "y"}, "multi"),
    ("In which order do the animals appear?", {"A": "dog", "B": "cat", "C": "cow"}, "order"),
    ("In what order do the signs appear?", {}, "order"),
    ("Which order is right?", {"A": "dog, cat", "B": "cat, dog"}, "choice"),  # options are sequences
])
def test_answer_type(question, options, expected):
    from avi.agent.question import answer_type

    assert answer_type(question, options) == expected


# ----------------------------------------------------------------- multi-select and ordering answers

ORDER_OPTS = {"A": "red car", "B": "blue truck", "C": "green bus"}


@pytest.mark.parametrize("answer, letters", [
    ("A, C", ["A", "C"]), ("C and A", ["A", "C"]), ("(A) (C)", ["A", "C"]), ("A;C.", ["A", "C"]),
    ("B", ["B"]), ("red car, green bus", ["A", "C"]), ("Options: B, C", ["B", "C"]), ("A, A, B", ["A", "B"]),
])
def test_extract_choices(answer, letters):
    from avi.agent.parse import extract_choices

    assert extract_choices(answer, ORDER_OPTS) == letters


@pytest.mark.parametrize("answer", ["A, D", "A, because it is red", "all of them", "", None])
def test_extract_choices_never_guesses(answer):
    from avi.agent.parse import extract_choices

    assert extract_choices(answer, ORDER_OPTS) is None


@pytest.mark.parametrize("answer, order", [
    ("C, A, B", ["C", "A", "B"]), ("C -> A -> B", ["C", "A", "B"]), ("B then C", ["B", "C"]),
    ("green bus, red car, blue truck", ["C", "A", "B"]), ("C → A", ["C", "A"]),
])
def test_extract_order_with_options(answer, order):
    from avi.agent.parse import extract_order

    assert extract_order(answer, ORDER_OPTS) == order


@pytest.mark.parametrize("answer", ["A", "A, A", "C, D", "first the car", None])
def test_extract_order_never_guesses(answer):
    from avi.agent.parse import extract_order

    assert extract_order(answer, ORDER_OPTS) is None


@pytest.mark.parametrize("answer, order", [
    ("dog, cat, cow", ["dog", "cat", "cow"]), ("dog -> cat", ["dog", "cat"]),
    ("1. dog 2. cat 3. cow", ["dog", "cat", "cow"]), ("the dog, then the cat", ["the dog", "the cat"]),
])
def test_extract_order_free_items(answer, order):
    from avi.agent.parse import extract_order

    assert extract_order(answer, {}) == order
    assert extract_order("dog", {}) is None


def test_times_written_with_their_unit_are_read():
    from avi.agent.parse import find_tool_call

    call = find_tool_call('{ "name": "clip_merge", "arguments": {"clips": [[0.0s, 5.0s], [15.0 s, 20.0s]]} }')
    assert call is not None and call.error is None
    assert call.arguments == {"clips": [[0.0, 5.0], [15.0, 20.0]]}
    # a quoted "5s" is left to the argument coercion; text inside strings is not touched by the JSON parser
    assert find_tool_call('{"name": "x", "arguments": {"q": "is 5s, ok"}}').arguments == {"q": "is 5s, ok"}
