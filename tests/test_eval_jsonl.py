"""``avi eval jsonl`` (avi/eval/jsonl.py): loader, the per-type rules, the report, --subset, the CLI.

Fast: no LLM, no video decoding (the CLI run uses an executor double that writes records directly).
The report's expected numbers are worked out by hand next to the fixture (``FIXTURE`` below).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from avi.errors import InputError
from avi.eval import format_report, grade, score
from avi.eval.answer_reading import (
    first_number,
    first_yes_no,
    hedges,
    leading_statement,
    lists_candidates,
    says_cannot_tell,
    stated_number,
    stated_yes_no,
    strict_text,
    text_match,
)
from avi.eval.jsonl import (
    grade_jsonl,
    load_jsonl,
    select_split,
    stratified_subset,
    truth_kind,
)
from avi.eval.jsonl_report import format_jsonl_report, percentile, score_jsonl
from avi.jobs.results import write_job
from avi.jobs.spec import JobQuestion


def write_lines(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def q(qid="q", type_=None, gt=None, video="v1.mp4", **meta) -> JobQuestion:
    m = {"benchmark": "jsonl", "video_id": video, "type": type_, "tags": [], "source": None}
    m.update(meta)
    return JobQuestion(qid=qid, video=Path("/videos") / video, question="?", gt=gt, meta=m)


def ok(**fields) -> dict:
    rec = {"status": "ok", "answer": None, "choice": None, "interval": None}
    rec.update(fields)
    return rec


# ------------------------------------------------------------------------------------------------- loader


def test_load_fields(tmp_path):
    f = write_lines(tmp_path / "b.jsonl", [
        {"qid": "c1", "video": "bikes.mp4", "question": "What colour?\n(A) red\n(B) blue", "type": "choice",
         "answer": "b", "options": ["red", "blue"], "tags": ["colour", "mc:paren"], "source": "real",
         "how": "looked at frame 10"},
        "",
        {"qid": 7, "video": "/abs/x.avi", "question": "How many?", "type": "number", "answer": 3.0},
        {"qid": "t", "video": "v.mp4", "question": "What is written?", "type": "text", "answer": "EXIT 42"},
        {"qid": "i", "video": "v.mp4", "question": "When?", "type": "interval", "answer": [10, 20.5]},
        {"qid": "y", "video": "v.mp4", "question": "Is it raining?", "type": "yesno", "answer": "No"},
        {"qid": "ct", "video": "v.mp4", "question": "What temperature?", "type": "cannot_tell", "answer": None},
        {"qid": "ct2", "video": "v.mp4", "question": "Which?", "type": "cannot_tell", "answer": "C"},
        {"qid": "free", "video": "v.mp4", "question": "Describe it.", "answer": "a dog"},
        {"qid": "notruth", "video": "v.mp4", "question": "How many cars?", "type": "number"},
    ])
    qs = {x.qid: x for x in load_jsonl(f, tmp_path / "vids")}
    assert list(qs) == ["c1", "7", "t", "i", "y", "ct", "ct2", "free", "notruth"]
    c = qs["c1"]
    assert c.answer_type == "auto" and c.question.startswith("What colour?\n(A) red")  # as the user wrote it
    assert c.video == tmp_path / "vids" / "bikes.mp4" and c.gt == "B" and c.options == ["red", "blue"]
    assert c.meta == {"benchmark": "jsonl", "video_id": "bikes.mp4", "type": "choice", "tags": ["colour", "mc:paren"],
                      "source": "real", "file": "b.jsonl", "line": 1, "how": "looked at frame 10"}
    assert qs["7"].video == Path("/abs/x.avi") and qs["7"].gt == 3 and qs["7"].meta["line"] == 3
    assert qs["7"].meta["video_id"] == "/abs/x.avi" and qs["7"].meta["tags"] == []
    assert qs["t"].gt == ["EXIT 42"] and qs["i"].gt == [10.0, 20.5] and qs["y"].gt == "no"
    assert qs["ct"].gt is None and qs["ct2"].gt == "C"
    assert qs["free"].meta["type"] is None and qs["notruth"].gt is None


def test_load_folder_sorted_and_unique_across_files(tmp_path):
    d = tmp_path / "qs"
    d.mkdir()
    write_lines(d / "b.jsonl", [{"qid": "b1", "video": "v.mp4", "question": "?", "type": "yesno", "answer": "yes"}])
    write_lines(d / "a.jsonl", [{"qid": "a1", "video": "v.mp4", "question": "?"},
                                {"qid": "a2", "video": "v.mp4", "question": "?"}])
    (d / "notes.txt").write_text("not a question file")
    assert [x.qid for x in load_jsonl(d, tmp_path)] == ["a1", "a2", "b1"]
    assert load_jsonl(d, tmp_path)[2].meta["file"] == "b.jsonl"
    write_lines(d / "c.jsonl", [{"qid": "a2", "video": "w.mp4", "question": "?"}])
    with pytest.raises(InputError, match=r"c\.jsonl: line 1: question id 'a2' appears twice \(first at a\.jsonl "
                                         r"line 2\)"):
        load_jsonl(d, tmp_path)


@pytest.mark.parametrize("line, message", [
    ("{not json", r"line 2: not JSON"),
    ('["a list"]', r"line 2: expected a JSON object"),
    ({"video": "v.mp4", "question": "?"}, r"line 2: missing field 'qid'"),
    ({"qid": "x", "question": "?"}, r"line 2: missing field 'video'"),
    ({"qid": "x", "video": "v.mp4", "question": "  "}, r"line 2: the question is empty"),
    ({"qid": "x", "video": "v.mp4", "question": "?", "type": "essay"}, r"line 2: type 'essay' is not one of"),
    ({"qid": "x", "video": "v.mp4", "question": "?", "type": "choice", "answer": "AB"},
     r"line 2: answer 'AB' is not an option letter"),
    ({"qid": "x", "video": "v.mp4", "question": "?", "type": "choice", "answer": "C", "options": ["a", "b"]},
     r"line 2: answer 'C' is not an option letter \(A-B\)"),
    ({"qid": "x", "video": "v.mp4", "question": "?", "type": "number", "answer": "many"}, r"line 2: .*not a number"),
    ({"qid": "x", "video": "v.mp4", "question": "?", "type": "number", "answer": True}, r"line 2: .*not a number"),
    ({"qid": "x", "video": "v.mp4", "question": "?", "type": "yesno", "answer": "maybe"}, r"line 2: .*yes"),
    ({"qid": "x", "video": "v.mp4", "question": "?", "type": "interval", "answer": [5, 2]}, r"line 2: .*start <= end"),
    ({"qid": "x", "video": "v.mp4", "question": "?", "type": "interval", "answer": [5]}, r"line 2: .*start_s, end_s"),
    ({"qid": "x", "video": "v.mp4", "question": "?", "type": "text", "answer": ["ok", 3]}, r"line 2: .*accepted"),
    ({"qid": "x", "video": "v.mp4", "question": "?", "type": "text", "answer": ["..."]}, r"line 2: .*accepted"),
    ({"qid": "x", "video": "v.mp4", "question": "?", "type": "cannot_tell", "answer": {"a": 1}},
     r"line 2: .*cannot_tell"),
    ({"qid": "x", "video": "v.mp4", "question": "?", "tags": "ocr", "source": 3}, r"line 2: source 3"),
    ({"qid": "q1", "video": "v.mp4", "question": "?"}, r"line 2: question id 'q1' appears twice \(first at line 1\)"),
])
def test_load_errors_name_file_and_line(tmp_path, line, message):
    f = write_lines(tmp_path / "bad.jsonl", [{"qid": "q1", "video": "v.mp4", "question": "?"}, line])
    with pytest.raises(InputError, match=r"bad\.jsonl: " + message):
        load_jsonl(f, tmp_path)


def test_load_errors_paths(tmp_path):
    with pytest.raises(InputError, match="annotation file not found"):
        load_jsonl(tmp_path / "none.jsonl", tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no .jsonl files in folder"):
        load_jsonl(tmp_path / "empty", tmp_path)
    (tmp_path / "blank.jsonl").write_text("\n\n")
    with pytest.raises(InputError, match="no questions"):
        load_jsonl(tmp_path / "blank.jsonl", tmp_path)


# ------------------------------------------------------------------------------------------------- rules


def test_text_rule():
    assert text_match("The sign reads EXIT 42.", ["EXIT 42"]) == "EXIT 42"
    assert text_match("The sign reads EXIT 42.", ["EXIT 4"]) is None  # whole words: 4 is not 42
    assert text_match("It says: exit-42!", ["EXIT 42"]) == "EXIT 42"  # case and punctuation ignored
    assert text_match("a red car", ["blue", "red"]) == "red"
    assert text_match("a reddish car", ["red"]) is None
    assert text_match(None, ["red"]) is None
    t = q(type_="text", gt=["EXIT 42", "exit forty-two"])
    assert grade_jsonl(t, ok(answer="The sign reads EXIT 42."))["correct"] is True
    assert grade_jsonl(t, ok(answer="Exit forty two"))["correct"] is True
    assert grade_jsonl(q(type_="text", gt=["EXIT 4"]), ok(answer="EXIT 42"))["correct"] is False


def test_number_rule():
    assert first_number("3 or 4") == 3.0
    assert first_number("I count three, maybe 4") == 3.0
    assert first_number("There are 12 cars") == 12.0
    assert first_number("about 2.5 seconds") == 2.5
    assert first_number("1,200 people") == 1200.0
    assert first_number("In clip.mp4 I see 2") == 2.0  # digits inside a word are not a number
    assert first_number("Twenty birds") == 20.0
    assert first_number("twenty-one birds") is None  # only zero..twenty as words
    assert first_number("none visible") is None and first_number(None) is None
    g = grade_jsonl(q(type_="number", gt=3), ok(answer="3 or 4"))  # two numbers: strict reads none
    assert g["correct"] is False and g["pred"] is None and g["lenient"] is True
    g = grade_jsonl(q(type_="number", gt=4), ok(answer="3 or 4"))
    assert g["correct"] is False and g["lenient"] is False
    assert grade_jsonl(q(type_="number", gt=0), ok(answer="Zero people."))["correct"] is True
    assert grade_jsonl(q(type_="number", gt=2.5), ok(answer="2.5"))["correct"] is True
    # the lenient rule reads the clock time first; the strict one the count the statement gives
    g = grade_jsonl(q(type_="number", gt=3), ok(answer="At 0:44 there are 3 people."))
    assert g["correct"] is True and g["lenient"] is False


def test_yesno_rule():
    assert first_yes_no("Nothing is there, so no.") == "no"  # "nothing" is not a no
    assert first_yes_no("Nothing moves.") is None
    assert first_yes_no("I know it: yes, and no more") == "yes"
    assert first_yes_no("Yes.") == "yes"
    assert grade_jsonl(q(type_="yesno", gt="no"), ok(answer="Nothing, no."))["correct"] is True
    assert grade_jsonl(q(type_="yesno", gt="no"), ok(answer="Nothing is moving."))["correct"] is False
    assert grade_jsonl(q(type_="yesno", gt="yes"), ok(answer="No, yes"))["correct"] is False
    # a cannot-tell answer is no answer, whatever "no" it holds further on
    cannot = "Cannot tell on this profile: its tools do not see a pen, and no text or speech names one."
    assert grade_jsonl(q(type_="yesno", gt="no"), ok(answer=cannot))["correct"] is False
    assert grade_jsonl(q(type_="yesno", gt="no"), ok(answer="No.", cannot_tell=True))["correct"] is False


def test_leading_statement():
    assert leading_statement("At 0:44 there are 3 people. I also saw 2 cars.") == "At 0:44 there are 3 people"
    assert leading_statement("**Answer:** 7") == "7"
    assert leading_statement("Answer:\nred") == "red"
    assert leading_statement("About 2.5 s; then more") == "About 2.5 s"
    assert leading_statement("There are 3 (2 on the left, 1 on the right).") == "There are 3"
    assert leading_statement("Room C305 with Dr. Lindqvist. Other text") == "Room C305 with Dr. Lindqvist"
    assert leading_statement("No. I see 2 people") == "No"
    assert leading_statement(None) == ""


def test_strict_number_and_yes_no():
    assert stated_number("At 0:44 there are 3 people.") == 3.0
    assert stated_number("At 20 s, seven people are visible.") == 7.0
    assert stated_number("3 or 4") is None and stated_number("7, maybe 8") is None
    assert stated_number("There are 3 people (2 on the left). Later 5.") == 3.0
    assert stated_number("Nobody is on the lawn.") == 0.0 and stated_number("No cars.") == 0.0
    assert stated_number("Cannot say.") is None
    assert stated_yes_no("No, nobody is on the lawn.") == "no"
    assert stated_yes_no("There is no person there.") == "no"
    assert stated_yes_no("Yes. No one else is there.") == "yes"  # the first statement counts
    assert stated_yes_no("The man walks to the car, and yes, no one follows") is None  # both words
    assert stated_yes_no("The woman is on the lawn. No one else.") is None  # the leading statement has neither
    y = q(type_="yesno", gt="yes")
    g = grade_jsonl(y, ok(answer="The woman is on the lawn. Yes."))
    assert g["correct"] is False and g["lenient"] is True


def test_strict_text_rule():
    t = q(type_="text", gt=["red"])
    assert grade_jsonl(t, ok(answer="The jacket is red."))["correct"] is True
    for answer in ("red or blue", "It is either red or maroon.", "The jacket is red and blue.",
                   "Red/blue stripes"):
        g = grade_jsonl(t, ok(answer=answer))
        assert g["correct"] is False and g["lenient"] is True, answer
    assert strict_text("It is on the left side, not the right.", ["left"]) is None  # both sides
    assert strict_text("On the left.", ["left"]) == "left"
    assert lists_candidates("red car", "red") is False
    # the accepted string only after the leading statement
    g = grade_jsonl(q(type_="text", gt=["TAXI"]), ok(answer="The sign is unreadable. Texts seen: TAXI, BUS."))
    assert g["correct"] is False and g["lenient"] is True


def test_hedged_answers_are_wrong_when_strict():
    guess = "Cannot tell on this profile: its tools do not see a jacket; best guess: red (not measured)"
    for type_, gt, rec in (("text", ["red"], ok(answer=guess)),
                           ("text", ["red"], ok(answer="red (a guess)")),
                           ("number", 3, ok(answer="3, a guess")),
                           ("interval", [10, 20], ok(answer="[10s, 20s]", interval=[10, 20], cannot_tell=True))):
        g = grade_jsonl(q(type_=type_, gt=gt), rec)
        assert g["hedged"] is True and g["correct"] is False and g["lenient"] is True, (type_, rec)
    g = grade_jsonl(q(type_="interval", gt=[10, 20]), ok(interval=[10, 20], cannot_tell=True))
    assert g["iou"] == 0.0 and g["lenient_iou"] == pytest.approx(1.0)
    # a choice letter flagged as a guess still counts; the report counts it apart
    c = grade_jsonl(q(type_="choice", gt="B"), ok(choice="B", answer="Cannot tell ...; the option best supported is "
                                                                        "B. red (a guess)", cannot_tell=True))
    assert c["correct"] is True and c["hedged"] is True
    assert hedges({}, "I guess it is red") is True  # issue 53: a guess in any words is a hedge
    assert hedges({}, "The jacket is red.") is False
    assert hedges({"cannot_tell": True}, "red") is True


@pytest.mark.parametrize("type_, gt, answer", [
    ("yesno", "no", "No, the evidence does not measure what the question asks."),  # a refusal, not a no
    ("yesno", "no", "No. The tools are unable to see it."),
    ("yesno", "yes", "Yes, probably."),
    ("text", ["red"], "It is not red."),
    ("text", ["red"], "The jacket isn't red."),
    ("text", ["red"], "Probably red."),
    ("text", ["red"], "Red. Possibly blue."),
    ("text", ["red"], "Red. The other jacket is blue."),  # a second colour after the leading statement
    ("number", 3, "3. Maybe 4."),
    ("number", 3, "It seems to be 3."),
])
def test_strict_reads_negations_hedges_and_the_whole_answer(type_, gt, answer):
    """Issue 53, item 0: the holes the strict scorer had (each of these scored right before)."""
    g = grade_jsonl(q(type_=type_, gt=gt), ok(answer=answer))
    assert g["correct"] is False, answer


def test_strict_keeps_plain_answers_right():
    assert grade_jsonl(q(type_="yesno", gt="no"), ok(answer="No, nobody is on the lawn."))["correct"] is True
    assert grade_jsonl(q(type_="yesno", gt="yes"), ok(answer="Yes, a person walks in at 12 s."))["correct"] is True
    assert grade_jsonl(q(type_="text", gt=["red"]), ok(answer="The jacket is red, not dark."))["correct"] is True
    assert grade_jsonl(q(type_="text", gt=["left"]), ok(answer="On the left."))["correct"] is True
    assert grade_jsonl(q(type_="number", gt=0), ok(answer="No cars."))["correct"] is True


def test_choice_rule():
    c = q(type_="choice", gt="B")
    assert grade_jsonl(c, ok(choice="B", answer="A"))["correct"] is True  # avi's letter, not the text
    assert grade_jsonl(c, ok(choice="b"))["correct"] is True
    g = grade_jsonl(c, ok(choice=None, answer="B"))
    assert g["correct"] is False and g["pred"] is None
    assert grade_jsonl(c, {"status": "failed", "choice": "B"})["correct"] is False
    g = grade_jsonl(c, None)
    assert g["status"] == "missing" and g["correct"] is False


def test_interval_rule():
    i = q(type_="interval", gt=[10.0, 20.0])
    g = grade_jsonl(i, ok(interval=[12, 20]))
    assert g["iou"] == pytest.approx(0.8) and g["correct"] is True
    g = grade_jsonl(i, ok(interval=[15, 25]))  # overlap 5 / union 15
    assert g["iou"] == pytest.approx(1 / 3) and g["correct"] is False
    assert grade_jsonl(i, ok(interval=[20, 10]))["iou"] == pytest.approx(1.0)  # order does not matter
    assert grade_jsonl(i, ok(interval=[14, 24]))["correct"] is False  # overlap 6 / union 14 = 0.43
    assert grade_jsonl(i, ok(interval=[10, 20.0]))["correct"] is True
    assert grade_jsonl(i, ok(interval=None))["iou"] == 0.0
    assert grade_jsonl(i, {"status": "failed"})["iou"] == 0.0


def test_cannot_tell_rule():
    assert says_cannot_tell("I cannot tell the temperature from the frames.")
    assert says_cannot_tell("I can\u2019t tell.") and says_cannot_tell("It can not be determined.")
    assert says_cannot_tell("The weight cannot be determined from video alone.")
    assert says_cannot_tell("It is not possible to determine the speed.")
    assert says_cannot_tell("Reading heart rate is unsupported on this profile.")
    assert says_cannot_tell("No tool can measure the temperature.")
    assert not says_cannot_tell("I can tell: it is red.") and not says_cannot_tell(None)
    unknown = q(type_="cannot_tell", gt=None)
    assert grade_jsonl(unknown, ok(answer="It is 21 degrees.", cannot_tell=True)) == {
        "status": "ok", "type": "cannot_tell", "gt": None, "scored": True, "correct": True, "pred": None,
        "iou": None, "lenient": True, "lenient_iou": None, "hedged": True, "by": "flag"}
    g = grade_jsonl(unknown, ok(answer="I can't tell the temperature."))
    assert g["correct"] is True and g["by"] == "phrase"
    g = grade_jsonl(unknown, ok(answer="It is 21 degrees.", cannot_tell=False))
    assert g["correct"] is False and g["by"] is None
    assert grade_jsonl(unknown, {"status": "failed", "cannot_tell": True, "answer": "cannot tell"})["correct"] is False
    assert grade_jsonl(unknown, None)["correct"] is False
    # a known true answer: right by that answer's own rule
    assert grade_jsonl(q(type_="cannot_tell", gt="C"), ok(choice="C"))["by"] == "answer"
    assert grade_jsonl(q(type_="cannot_tell", gt="C"), ok(choice="A"))["correct"] is False
    assert grade_jsonl(q(type_="cannot_tell", gt=["red"]), ok(answer="It is red."))["correct"] is True
    g = grade_jsonl(q(type_="cannot_tell", gt=3), ok(answer="3 or 4"))
    assert g["correct"] is False and g["lenient"] is True
    assert grade_jsonl(q(type_="cannot_tell", gt=3), ok(answer="3."))["correct"] is True
    assert grade_jsonl(q(type_="cannot_tell", gt=4), ok(answer="3 or 4"))["correct"] is False
    assert grade_jsonl(q(type_="cannot_tell", gt=4), ok(answer="3 or 4; I cannot tell"))["by"] == "phrase"
    assert [truth_kind(v) for v in ("B", "yes", "red", ["a", "b"], 3, 2.5, [1, 2], True, None, {})] == [
        "choice", "yesno", "text", "text", "number", "number", "interval", None, None, None]


def test_unscored_questions_are_answered_not_scored():
    g = grade_jsonl(q(type_=None, gt="a dog"), ok(answer="a dog"))
    assert g["scored"] is False and g["correct"] is None
    assert grade_jsonl(q(type_="number", gt=None), ok(answer="3"))["scored"] is False
    assert grade(q(type_="number", gt=3), ok(answer="3")) == grade_jsonl(q(type_="number", gt=3), ok(answer="3"))


def test_percentile():
    assert percentile([], 50) is None
    assert percentile([7.0], 90) == 7.0
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([10, 20, 30, 40, 50, 60, 70, 80, 90, 100], 90) == pytest.approx(91.0)


# ------------------------------------------------------------------------------------------------- report

# Videos v1..v3. Expected (worked by hand):
#   right: q1 (A=A), q4 (EXIT 42 in text), q7 ("No; nothing moves." -> no),
#          q8 (IoU [12,20] vs [10,20] = 8/10), q10 (cannot_tell flag)
#   strict wrong, lenient right: q5 ("3 or 4" states two numbers; lenient reads the first, 3)
#   wrong: q2 (A for B), q3 (failed), q6 ("3 or 4", truth 4), q9 (IoU [5,20] vs [0,10] = 5/20), q11 (missing)
#   q12 has no type: answered, not scored.  => overall strict 5/11, lenient 6/11.
FIXTURE = [
    # qid, video, type, answer, options, tags, source, record
    ("q1", "v1.mp4", "choice", "A", ["x", "y", "z", "w"], ["ocr", "mc:dot"], "real",
     ok(choice="A", seconds={"index": 500.0, "agent": 10.0, "total": 510.0}, iterations=2, frames=8)),
    ("q2", "v1.mp4", "choice", "B", ["x", "y", "z", "w"], ["mc:paren"], "real",
     ok(choice="A", seconds={"agent": 20.0}, iterations=3, frames=16)),
    ("q3", "v2.mp4", "choice", "C", ["x", "y", "z", "w"], [], "synthetic",
     {"status": "failed", "error": "boom", "choice": None}),
    ("q4", "v2.mp4", "text", ["EXIT 42"], None, ["ocr"], "synthetic",
     ok(answer="The sign reads EXIT 42.", seconds={"agent": 30.0}, iterations=3, frames=16)),
    ("q5", "v2.mp4", "number", 3, None, ["count"], "synthetic",
     ok(answer="3 or 4", seconds={"agent": 40.0}, iterations=4, frames=16)),
    ("q6", "v3.mp4", "number", 4, None, ["count"], "synthetic",
     ok(answer="3 or 4", seconds={"agent": 50.0}, iterations=5, frames=16)),
    ("q7", "v3.mp4", "yesno", "no", None, [], "real",
     ok(answer="No; nothing moves.", seconds={"agent": 60.0}, iterations=2, frames=16)),
    ("q8", "v3.mp4", "interval", [10, 20], None, ["time_words"], "synthetic",
     ok(interval=[12.0, 20.0], seconds={"agent": 70.0}, iterations=6, frames=16)),
    ("q9", "v1.mp4", "interval", [0, 10], None, [], "synthetic",
     ok(interval=[5.0, 20.0], seconds={"agent": 80.0}, iterations=7, frames=16)),
    ("q10", "v1.mp4", "cannot_tell", None, None, [], "synthetic",
     ok(answer="About 20 degrees.", cannot_tell=True, seconds={"agent": 90.0}, iterations=1, frames=None)),
    ("q11", "v2.mp4", "cannot_tell", None, None, [], "synthetic", None),
    ("q12", "v3.mp4", None, None, None, [], None,
     ok(answer="A street.", seconds={"agent": 100.0}, iterations=2, frames=16)),
]


def fixture_files(tmp_path: Path) -> tuple[Path, list[dict]]:
    rows, records = [], []
    for qid, video, type_, answer, options, tags, source, record in FIXTURE:
        row = {"qid": qid, "video": video, "question": f"question {qid}?", "tags": tags}
        row.update({k: v for k, v in (("type", type_), ("answer", answer), ("options", options),
                                      ("source", source)) if v is not None})
        rows.append(row)
        if record is not None:
            records.append({"qid": qid, **record})
    return write_lines(tmp_path / "bench.jsonl", rows), records


def test_report_numbers(tmp_path):
    annotations, records = fixture_files(tmp_path)
    questions = load_jsonl(annotations, tmp_path)
    r = score_jsonl(questions, records + [{"qid": "stray", "status": "ok"}], annotations=annotations)
    assert r.counts == {"total": 12, "scored": 11, "not_scored": 1, "videos": 3, "answered": 10, "failed": 1,
                        "missing": 1, "extra_records": 1}
    assert r.overall.n == 11 and r.overall.total == 5 and r.overall.value == pytest.approx(500 / 11)
    assert r.lenient["overall"].total == 6 and r.lenient["by_type"]["number"].total == 1
    assert r.overall.videos == 3 and r.overall.ci is not None
    assert {t: (s.total, s.n) for t, s in r.by_type.items()} == {
        "choice": (1, 3), "text": (1, 1), "number": (0, 2), "yesno": (1, 1), "interval": (1, 2), "cannot_tell": (1, 2)}
    assert list(r.by_type) == ["choice", "text", "number", "yesno", "interval", "cannot_tell"]
    assert {k: (s.total, s.n) for k, s in r.by_source.items()} == {"real": (2, 3), "synthetic": (3, 8)}
    assert {k: (s.total, s.n) for k, s in r.by_tag.items()} == {
        "count": (0, 2), "mc:dot": (1, 1), "mc:paren": (0, 1), "ocr": (2, 2), "time_words": (1, 1)}
    assert r.by_split == {} and r.split is None
    # answering "cannot tell" to all 11: right on the two cannot_tell questions only
    assert r.cannot_tell_floor == {"n": 11, "cannot_tell": 2, "overall": pytest.approx(200 / 11)}
    assert r.hedged == {"answered": 1, "choice_right": 1, "choice_right_guessed": 0}
    # real: q1 = 1 (v1), q2 = 0 (v1), q7 = 1 (v3): mean 2/3, Var = 1/3, Var/n = 1/9; cluster v1 adds
    # (1/3 - 2/3)^2 - (1/9 + 4/9) = -4/9, over n^2 = 9: SE^2 = 1/9 - 4/81 = 5/81, SE = sqrt(5)/9.
    real = r.by_source["real"]
    se = 100 * math.sqrt(5) / 9
    assert real.value == pytest.approx(200 / 3) and real.se == pytest.approx(se)
    assert real.ci == pytest.approx([200 / 3 - 1.959963984540054 * se, 100.0])
    cl = r.choice_letters
    assert cl["n"] == 3 and cl["letters"] == ["A", "B", "C", "D", "none"]
    assert cl["answered"] == pytest.approx({"A": 200 / 3, "B": 0, "C": 0, "D": 0, "none": 100 / 3})
    assert cl["truth"] == pytest.approx({"A": 100 / 3, "B": 100 / 3, "C": 100 / 3, "D": 0, "none": 0})
    assert r.interval["mIoU"].value == pytest.approx(52.5) and r.interval["mIoU"].n == 2
    assert r.interval["R@0.3"].value == 50.0 and r.interval["R@0.5"].value == 50.0
    pq = r.per_question
    assert pq["answered"] == 10
    # agent seconds 10..100 (index time not counted): p50 at position 4.5 = 55, p90 at 8.1 = 90 + 0.1 * 10
    assert pq["seconds"] == pytest.approx({"p50": 55.0, "p90": 91.0, "mean": 55.0, "n": 10})
    # iterations 2,3,3,4,5,2,6,7,1,2 -> sorted 1,2,2,2,3,3,4,5,6,7
    assert pq["steps"] == pytest.approx({"median": 3.0, "mean": 3.5, "n": 10})
    # frames 8 and eight 16s (q10 has none)
    assert pq["frames"] == pytest.approx({"median": 16.0, "mean": 136 / 9, "n": 9})
    assert r.subset is None and not any("SUBSET" in n for n in r.notes)

    text = format_jsonl_report(r)
    assert text == format_report(r) and text.startswith("JSONL benchmark (bench.jsonl): 12 questions on 3 videos")
    assert "strict" in text and "lenient" in text and "would score 18.2 %" in text
    for piece in ("overall", "45.5", "54.5", "cannot_tell", "by source", "synthetic", "by tag", "time_words",
                  "choice letters (% of 3 choice questions", "none", "mIoU 52.5", "R@0.3 50.0",
                  "seconds p50 55.0, p90 91.0", "steps median 3.0, mean 3.5", "frames median 16.0, mean 15.1"):
        assert piece in text, piece
    data = json.loads(json.dumps(r.to_dict()))
    assert data["overall"]["n"] == 11 and data["by_type"]["choice"]["total"] == 1
    assert data["lenient"]["overall"]["total"] == 6
    assert score(questions, records).to_dict()["by_type"] == r.to_dict()["by_type"]  # score() dispatches


def test_report_of_an_unanswered_run(tmp_path):
    annotations, _ = fixture_files(tmp_path)
    r = score_jsonl(load_jsonl(annotations, tmp_path), [])
    assert r.overall.value == 0.0 and r.counts["missing"] == 12
    assert r.choice_letters["answered"]["none"] == 100.0 and r.per_question["seconds"]["p50"] is None
    assert "per answered question (" not in format_jsonl_report(r)


# ------------------------------------------------------------------------------------------------- subset


def typed(types: list[str | None]) -> list[JobQuestion]:
    return [q(qid=f"q{i}", type_=t, gt=None) for i, t in enumerate(types)]


def test_subset_is_stratified_and_deterministic():
    qs = typed(["choice", "choice", "choice", "text", "number", "number", "yesno", None, "choice"])
    ids = lambda xs: [x.qid for x in xs]  # noqa: E731
    # round 1: first of choice, text, number, yesno, untyped; round 2: second choice, second number
    assert ids(stratified_subset(qs, 5)) == ["q0", "q3", "q4", "q6", "q7"]
    assert ids(stratified_subset(qs, 7)) == ["q0", "q1", "q3", "q4", "q5", "q6", "q7"]
    assert ids(stratified_subset(qs, 2)) == ["q0", "q3"]
    assert ids(stratified_subset(qs, 5)) == ids(stratified_subset(list(qs), 5))
    assert ids(stratified_subset(qs, 50)) == ids(qs)
    with pytest.raises(InputError, match="--subset"):
        stratified_subset(qs, 0)


# ------------------------------------------------------------------------------------------------- CLI


class FakeExecutor:
    """Answers every question without a model: the FIXTURE record of its qid (or a plain answer)."""

    def __init__(self):
        self.asked: list[str] = []

    def run(self, jobs, traces_dir, emit, on_index):
        answers = {row[0]: row[7] for row in FIXTURE}
        for job in jobs:
            on_index({"video": str(job.video), "status": "ok", "duration_s": 10.0, "seconds": 1.0})
            for question in job.questions:
                self.asked.append(question.qid)
                rec = answers.get(question.qid) or {"status": "failed", "error": "no answer"}
                emit({"qid": question.qid, "video": str(question.video), "question": question.question, **rec})


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    from avi.cli import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    return exc.value.code, out, err


@pytest.fixture
def fake_executor(monkeypatch, tmp_path):
    monkeypatch.setenv("AVI_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AVI_INDEX_ROOT", str(tmp_path / "indexes"))
    ex = FakeExecutor()
    monkeypatch.setattr("avi.cli.batch.make_executor", lambda args, settings: ex)
    return ex


def test_cli_subset_run_and_report(tmp_path, capsys, fake_executor):
    annotations, _ = fixture_files(tmp_path)
    out = tmp_path / "run" / "r.jsonl"
    base = ["eval", "jsonl", "--annotations", str(annotations), "--videos", str(tmp_path), "--out", str(out),
            "--quiet"]
    code, stdout, err = run_cli(base + ["--subset", "6", "--json"], capsys)
    assert code == 0, err
    report = json.loads(stdout.strip().splitlines()[-1])
    # types in file order: choice (q1 q2 q3), text (q4), number (q5 q6), yesno (q7), interval (q8 q9),
    # cannot_tell (q10 q11), untyped (q12); within a type the videos take turns, sources alternating with the
    # larger one first: synthetic v2 (4 questions), real v1, synthetic v3 -> q3 q4 q5 q7 q9 q11
    assert sorted(fake_executor.asked, key=lambda s: int(s[1:])) == ["q3", "q4", "q5", "q7", "q9", "q11"]
    assert report["subset"] == {"n": 6, "of": 12} and report["counts"]["total"] == 6
    # q3 failed, q9 has IoU 0.25, q11 has no answer, q5 ("3 or 4") is right only by the lenient rule
    assert report["overall"]["total"] == 2 and report["overall"]["n"] == 6
    assert report["lenient"]["overall"]["total"] == 3
    assert any("SUBSET: 6 of 12" in n for n in report["notes"])
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    assert {r["qid"]: r["score"]["correct"] for r in recs} == {q_: q_ in ("q4", "q7")
                                                               for q_ in fake_executor.asked}
    assert {r["qid"]: r["score"]["lenient"] for r in recs} == {q_: q_ in ("q4", "q5", "q7")
                                                               for q_ in fake_executor.asked}
    assert all(r["score"]["type"] for r in recs)

    code, stdout, err = run_cli(["eval", "report", str(out)], capsys)
    assert code == 0, err
    assert "[SUBSET: 6 of 12 questions]" in stdout and "choice letters" in stdout
    code, stdout, _ = run_cli(["eval", "report", str(out), "--json"], capsys)
    assert json.loads(stdout)["overall"] == report["overall"]

    # the same --subset resumes (nothing asked again); another one is another job
    fake_executor.asked.clear()
    code, _, err = run_cli(base + ["--subset", "6"], capsys)
    assert code == 0 and fake_executor.asked == []
    code, _, err = run_cli(base + ["--subset", "3"], capsys)
    assert code == 2 and "another job" in err


def test_cli_full_run_and_report_numbers(tmp_path, capsys, fake_executor):
    annotations, records = fixture_files(tmp_path)
    out = tmp_path / "full.jsonl"
    code, stdout, err = run_cli(["eval", "jsonl", "--annotations", str(annotations), "--videos", str(tmp_path),
                                 "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    assert "JSONL benchmark (bench.jsonl): 12 questions on 3 videos (11 scored)" in stdout and "SUBSET" not in stdout
    # q11 has no FIXTURE record: the double fails it, so it is failed here rather than missing
    code, stdout, _ = run_cli(["eval", "report", str(out), "--json"], capsys)
    data = json.loads(stdout)
    assert data["overall"]["total"] == 5 and data["overall"]["n"] == 11 and data["subset"] is None
    assert data["counts"]["failed"] == 2 and data["counts"]["missing"] == 0
    assert data["interval"]["mIoU"]["value"] == pytest.approx(52.5)


def test_cli_report_from_job_and_results_files(tmp_path, capsys):
    """``avi eval report`` on a jsonl run with a question still missing: same numbers as score_jsonl."""
    annotations, records = fixture_files(tmp_path)
    questions = load_jsonl(annotations, tmp_path)
    out = tmp_path / "r.jsonl"
    write_job(out, "eval:jsonl", {"benchmark": "jsonl", "annotations": str(annotations), "subset": None},
              questions)
    out.write_text("".join(json.dumps(r) + "\n" for r in records))
    code, stdout, err = run_cli(["eval", "report", str(out), "--json"], capsys)
    assert code == 0, err
    expected = score_jsonl(questions, records, annotations=str(annotations)).to_dict()
    assert json.loads(stdout) == json.loads(json.dumps(expected))


def test_cli_errors(tmp_path, capsys, fake_executor):
    annotations, _ = fixture_files(tmp_path)
    base = ["eval", "jsonl", "--annotations", str(annotations), "--videos", str(tmp_path), "--out",
            str(tmp_path / "o.jsonl")]
    code, _, err = run_cli(base + ["--subset", "2", "--limit", "2"], capsys)
    assert code == 2 and "not both" in err
    code, _, err = run_cli(base + ["--subset", "0"], capsys)
    assert code == 2 and "--subset" in err
    bad = write_lines(tmp_path / "bad.jsonl", [{"qid": "x", "video": "v.mp4", "question": "?", "type": "colour"}])
    code, _, err = run_cli(["eval", "jsonl", "--annotations", str(bad), "--videos", str(tmp_path), "--out",
                            str(tmp_path / "o.jsonl")], capsys)
    assert code == 2 and "bad.jsonl: line 1: type 'colour'" in err and len(err.strip().splitlines()) == 1


# ------------------------------------------------------------------------------------------------- splits


def split_files(tmp_path: Path) -> Path:
    return write_lines(tmp_path / "split.jsonl", [
        {"qid": "t1", "video": "a.mp4", "question": "?", "type": "yesno", "answer": "yes", "split": "tune"},
        {"qid": "r1", "video": "b.mp4", "question": "?", "type": "yesno", "answer": "no", "split": "report",
         "source": "real"},
        {"qid": "r2", "video": "c.mp4", "question": "?", "type": "number", "answer": 2, "split": "report"},
        {"qid": "n1", "video": "a.mp4", "question": "?"},
    ])


def test_split_key_and_selection(tmp_path):
    qs = load_jsonl(split_files(tmp_path), tmp_path)
    assert [x.meta.get("split") for x in qs] == ["tune", "report", "report", None]
    assert [x.qid for x in select_split(qs, "report")] == ["r1", "r2"]
    with pytest.raises(InputError, match=r"no question has split 'held' \(the questions have: report, tune\)"):
        select_split(qs, "held")
    bad = write_lines(tmp_path / "bad.jsonl", [{"qid": "x", "video": "v.mp4", "question": "?", "split": 3}])
    with pytest.raises(InputError, match=r"bad\.jsonl: line 1: split 3 is not a non-empty string"):
        load_jsonl(bad, tmp_path)
    r = score_jsonl(qs, [{"qid": "t1", "status": "ok", "answer": "Yes."},
                         {"qid": "r1", "status": "ok", "answer": "No, it does not."}])
    assert {k: (s.total, s.n) for k, s in r.by_split.items()} == {"report": (1, 2), "tune": (1, 1)}
    assert "by split" in format_jsonl_report(r)


def test_cli_split_runs_only_that_split(tmp_path, capsys, fake_executor):
    annotations = split_files(tmp_path)
    out = tmp_path / "rep.jsonl"
    code, stdout, err = run_cli(["eval", "jsonl", "--annotations", str(annotations), "--videos", str(tmp_path),
                                 "--out", str(out), "--split", "report", "--quiet"], capsys)
    assert code == 0, err
    assert fake_executor.asked == ["r1", "r2"]
    assert "JSONL benchmark (split.jsonl), split report: 2 questions on 2 videos" in stdout
    code, stdout, _ = run_cli(["eval", "report", str(out)], capsys)
    assert ", split report: 2 questions" in stdout
    # a run over every split reports one of them
    whole = tmp_path / "whole.jsonl"
    code, _, err = run_cli(["eval", "jsonl", "--annotations", str(annotations), "--videos", str(tmp_path),
                            "--out", str(whole), "--quiet"], capsys)
    assert code == 0, err
    code, stdout, _ = run_cli(["eval", "report", str(whole), "--split", "tune", "--json"], capsys)
    data = json.loads(stdout)
    assert data["split"] == "tune" and data["counts"]["total"] == 1
    code, _, err = run_cli(["eval", "report", str(whole), "--split", "nope"], capsys)
    assert code == 2 and "no question has split 'nope'" in err
    code, _, err = run_cli(["eval", "jsonl", "--annotations", str(annotations), "--videos", str(tmp_path),
                            "--out", str(tmp_path / "x.jsonl"), "--split", "nope"], capsys)
    assert code == 2 and "no question has split 'nope'" in err and len(err.strip().splitlines()) == 1


def test_cli_videos_default_is_the_benchmark_folder(tmp_path, capsys, monkeypatch):
    import avi.cli.evaluate as evaluate

    monkeypatch.setenv("AVI_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(evaluate, "DEVBENCH_VIDEOS", tmp_path / "missing")
    from avi.cli import main

    with pytest.raises(SystemExit) as exc:  # no --videos: the folder bench/make_videos.py fills
        main(["eval", "jsonl", "--annotations", str(split_files(tmp_path)), "--out", str(tmp_path / "o.jsonl")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "bench/make_videos.py" in err and len(err.strip().splitlines()) == 1
