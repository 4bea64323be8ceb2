"""Multiple-choice options matched against the words the video shows and says (avi/agent/option_evidence.py)."""

from __future__ import annotations

from rule_helpers import rule_run, state

from avi.agent import option_evidence
from avi.agent.option_evidence import in_order, option_keys, words
from avi.agent.question import parse_question


def text_choice(options, strings, question):
    return option_evidence.text_choice(options, strings, parse_question(question).key_words)


def relevant(strings, question):
    return option_evidence.relevant(strings, parse_question(question).key_words)


def quoted_in(question, shown, said):
    q = parse_question(question)
    return option_evidence.quoted_in(q.quote, q.quote_shown, q.quote_said, shown, said)


def test_words_and_keys():
    assert words("Thirty-nine, he said: TWO goals!") == ["39", "he", "said", "2", "goals"]
    assert words("the one who") == ["the", "one", "who"]  # "one" is kept as a word
    assert option_keys("the HALF TIME card") == ["half", "time"]
    assert option_keys("Rivers 3, Harbour 2") == ["rivers", "3", "harbour", "2"]
    assert option_keys("THE FRESNEL LENS") == ["the", "fresnel", "lens"]
    assert option_keys("a paved area between lawns") == ["paved", "area", "between", "lawns"]
    assert option_keys("39") == ["39"]
    assert in_order(["rivers", "3", "harbour", "2"], words("RIVERS 3 - HARBOUR 2"))
    assert not in_order(["rivers", "2", "harbour", "3"], words("RIVERS 3 - HARBOUR 2"))
    assert not in_order([], ["x"])


def test_the_one_option_the_evidence_holds():
    opts = {"A": "Rivers 2, Harbour 2", "B": "Rivers 3, Harbour 1", "C": "Rivers 3, Harbour 2", "D": "Rivers 2, Harbour 3"}
    assert text_choice(opts, ["FULL TIME", "RIVERS 3 HARBOUR 2"], "What is the final score?") == \
        ("C", "RIVERS 3 HARBOUR 2")
    assert text_choice(opts, ["RIVERS 3-2 HARBOUR", "RIVERS 3-1 HARBOUR"], "What is the score?") is None
    opts = {"A": "the MATCH DAY title card", "B": "the HALF TIME card", "C": "the GO RIVERS GO sign",
            "D": "the FULL TIME card"}
    assert text_choice(opts, ["HALF TIME", "Sponsored by Northwind Ferries"], "What is on screen?")[0] == "B"
    assert text_choice(opts, ["nothing here"], "What is on screen?") is None
    assert text_choice(opts, ["HALF TIME", "FULL TIME"], "What is on screen?") is None  # two options: no answer


def test_speech_lines_about_the_question_decide():
    opts = {"A": "45", "B": "27", "C": "39", "D": "52"}
    lines = ["There were 27 lighthouses on the coast by then.",
             "Fresnel died young, at the age of thirty-nine.", "The tower is 52 metres tall."]
    q = "How old was Fresnel when he died, according to the lecturer?"
    assert relevant(lines, q) == [lines[1]]
    assert text_choice(opts, lines, q) == ("C", lines[1])
    assert text_choice(opts, lines, "How tall is it?") == ("D", lines[2])  # the line about height
    assert text_choice(opts, lines, "How old is it?") is None  # no line about the question: 27 and 52 both match
    # syn-lecture-09: the name is on screen, the age only in speech, under the recogniser's spelling of the name
    heard = ["THE FRESNEL LENS", "Invented in 1822 by Augustin Fresnel",
             "Fressel was a friend-changineer, who died young, at only 39.", "There were 27 lighthouses by then."]
    assert text_choice(opts, heard, q) == ("C", heard[2])


def test_a_count_with_number_options_is_not_read_from_text_on_screen():
    """syn-shapes-03: "how many triangles ... (A) 2 (B) 3 (C) 4 (D) 5" was answered A because a title card
    reads "ROUND 2"; a count of things is measured in the frames, never matched against on-screen words."""
    from types import SimpleNamespace

    from avi.agent.rules import RULES, Delivered

    caption = SimpleNamespace(start_s=0.0, end_s=5.0, data={"ocr": [{"text": "ROUND 2"}]})
    ctx = SimpleNamespace(focus_ranges=[], duration_s=10.0, index=SimpleNamespace(captions=[caption], transcript=[]))
    rule = next(r for r in RULES if r.name == "text_choice")

    def choose(question):
        got = rule(rule_run(state(question), ctx), Delivered(None))
        return (got.text, got.choice) if got else None

    assert choose("How many triangles are there once they have all appeared? (A) 2 (B) 3 (C) 4 (D) 5") is None
    assert choose("Which round is announced on the title card? (A) 2 (B) 3") == ("A. 2", "A")


def test_a_quoted_line_asked_about_is_found_in_the_ocr_or_the_transcript():
    """syn-lecture-12: text_extract read "About 100 metres tall" at 56 s and the model answered "no"."""
    shown = ["PHAROS OF ALEXANDRIA", "Built around 280 BC", "About 100 metres tall"]
    said = ["Its light came from a large fire, reflected by a bronze mirror."]
    q = "Is the line 'About 100 metres tall' on screen in the first minute?"
    assert quoted_in(q, shown, said) == ("About 100 metres tall", "About 100 metres tall")
    assert quoted_in(q, shown[:2], said) is None
    assert quoted_in("Does the lecturer say 'a bronze mirror'?", shown, said)[1] == said[0]
    assert quoted_in("Does the lecturer say 'About 100 metres tall'?", shown, said) is None  # shown, not said
    assert quoted_in("Is the Pharos on screen in the first minute?", shown, said) is None  # no quote
    assert quoted_in("Is the lecturer's hat on screen? Is it the speaker's?", shown, said) is None  # apostrophes
