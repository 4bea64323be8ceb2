"""Benchmark annotation loaders (avi/eval/<benchmark>.py; registry in loaders.py) on tests/fixtures/eval/, and subtitles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from avi.errors import InputError
from avi.eval.charades import CHARADES_QUESTION, load_charades
from avi.eval.loaders import BENCHMARKS, load_benchmark
from avi.eval.longvideobench import load_longvideobench
from avi.eval.lvbench import load_lvbench, split_lvbench_question
from avi.eval.videomme import load_videomme
from avi.index.subtitles import load_subtitles

F = Path(__file__).parent / "fixtures" / "eval"


def by_qid(questions):
    return {q.qid: q for q in questions}


# ------------------------------------------------------------------------------------------------- LVBench


def test_lvbench_fields():
    qs = load_lvbench(F / "lvbench" / "video_info.meta.jsonl", F / "lvbench" / "videos")
    assert [q.qid for q in qs] == ["101", "102", "103", "201", "202", "301", "302"]
    q = by_qid(qs)["101"]
    assert q.question == "What is written on the sign at the door?\nA. EXIT\nB. ENTER\nC. STOP\nD. OPEN"
    assert q.options == ["EXIT", "ENTER", "STOP", "OPEN"] and q.gt == "A" and q.answer_type == "choice"
    assert q.video == F / "lvbench" / "videos" / "vid1.mp4"  # missing videos are not a load error
    assert q.meta["benchmark"] == "lvbench" and q.meta["video_id"] == "vid1" and q.meta["uid"] == 101
    assert q.meta["time_reference"] == "00:10-00:15" and q.meta["duration"] == pytest.approx(630.0)
    q102 = by_qid(qs)["102"]
    assert q102.meta["categories"] == ["EU", "Rea"]
    assert q102.meta["question_type"] == ["event understanding", "reasoning"]
    assert by_qid(qs)["201"].meta["duration"] is None


def test_lvbench_finds_the_video_extension(tmp_path):
    (tmp_path / "vid2.mkv").write_bytes(b"x")
    (tmp_path / "vid2.webm").write_bytes(b"x")
    qs = load_lvbench(F / "lvbench" / "video_info.meta.jsonl", tmp_path)
    assert by_qid(qs)["201"].video == tmp_path / "vid2.mkv"
    assert by_qid(qs)["101"].video == tmp_path / "vid1.mp4"


def test_split_lvbench_question():
    assert split_lvbench_question("Q?\n(A) a\n(B) b (x)\n(C) c") == ("Q?", ["a", "b (x)", "c"])
    assert split_lvbench_question("Is (A) bigger?\n(A) yes\n(B) no") == ("Is (A) bigger?", ["yes", "no"])
    assert split_lvbench_question("Q? (A) one (B) two") == ("Q?", ["one", "two"])
    with pytest.raises(ValueError):
        split_lvbench_question("no options here")


def test_lvbench_errors(tmp_path):
    lines = (F / "lvbench" / "video_info.meta.jsonl").read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(lines[0] + "\n{not json\n")
    with pytest.raises(InputError, match=r"bad\.jsonl: line 2: not JSON"):
        load_lvbench(bad, tmp_path)
    rec = json.loads(lines[1])
    del rec["qa"][0]["answer"]
    bad.write_text(lines[0] + "\n\n" + json.dumps(rec) + "\n")
    with pytest.raises(InputError, match=r"line 3: missing field 'answer'"):
        load_lvbench(bad, tmp_path)
    rec = json.loads(lines[1])
    rec["qa"][0]["question"] = "no options"
    bad.write_text(json.dumps(rec) + "\n")
    with pytest.raises(InputError, match=r"line 1: uid 201: no '\(A\) …' options found"):
        load_lvbench(bad, tmp_path)
    bad.write_text(lines[0] + "\n" + lines[0] + "\n")
    with pytest.raises(InputError, match=r"line 2: question id '101' appears twice"):
        load_lvbench(bad, tmp_path)
    with pytest.raises(InputError, match="annotation file not found"):
        load_lvbench(tmp_path / "none.jsonl", tmp_path)
    with pytest.raises(InputError) as exc:
        load_lvbench(bad, tmp_path)
    assert "\n" not in str(exc.value)


# ----------------------------------------------------------------------------------------------- Video-MME


def test_videomme_flat_long_split_by_default():
    qs = load_videomme(F / "videomme" / "videomme.json", F / "videomme" / "videos")
    assert [q.qid for q in qs] == ["001-1", "001-2", "001-3", "002-1", "002-2", "002-3"]
    q = qs[0]
    assert q.question == "Which decoration has the largest number?\nA. Apples.\nB. Candles.\nC. Berries.\nD. All the same."
    assert q.options == ["Apples.", "Candles.", "Berries.", "All the same."] and q.gt == "C"
    assert q.video == F / "videomme" / "videos" / "vid1.mp4" and q.subtitles is None
    assert q.meta == {"benchmark": "videomme", "video_id": "vid1", "video_number": "001", "duration_group": "long",
                      "domain": "Knowledge", "sub_category": "Humanity & History", "task_type": "Counting Problem",
                      "url": "https://www.youtube.com/watch?v=vid1", "subtitles": False}


def test_videomme_duration_choice_and_subtitles(tmp_path):
    path = F / "videomme" / "videomme.json"
    assert len(load_videomme(path, tmp_path, duration="all")) == 7
    assert [q.qid for q in load_videomme(path, tmp_path, duration="short")] == ["003-1"]
    assert len(load_videomme(path, tmp_path, duration=["short", "long"])) == 7
    assert len(load_videomme(path, tmp_path, duration="short,long")) == 7
    with pytest.raises(InputError, match="unknown Video-MME duration 'huge'"):
        load_videomme(path, tmp_path, duration="huge")
    qs = by_qid(load_videomme(path, F / "videomme" / "videos", with_subtitles=True))
    assert qs["001-1"].subtitles == F / "videomme" / "subtitle" / "vid1.srt" and qs["001-1"].meta["subtitles"]
    assert qs["002-1"].subtitles is None  # not every video has subtitles
    with pytest.raises(InputError, match="subtitles folder not found"):
        load_videomme(path, tmp_path / "videos", with_subtitles=True)


def test_videomme_jsonl(tmp_path):
    rows = json.loads((F / "videomme" / "videomme.json").read_text())
    p = tmp_path / "videomme.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert [q.qid for q in load_videomme(p, tmp_path)] == ["001-1", "001-2", "001-3", "002-1", "002-2", "002-3"]
    p2 = tmp_path / "rows.json"  # JSON lines under a .json name are recognised too
    p2.write_text(p.read_text())
    assert len(load_videomme(p2, tmp_path, duration="all")) == 7
    p.write_text(json.dumps(rows[0]) + "\n" + "oops\n")
    with pytest.raises(InputError, match=r"videomme\.jsonl: line 2: not JSON"):
        load_videomme(p, tmp_path)


def test_videomme_nested_template_with_trailing_commas(tmp_path):
    path = F / "videomme" / "output_test_template.json"
    with pytest.raises(json.JSONDecodeError):
        json.loads(path.read_text())  # like the official file
    qs = load_videomme(path, tmp_path, duration="all")
    assert [q.qid for q in qs] == ["001-1", "001-2", "002-1"]
    assert [q.qid for q in load_videomme(path, tmp_path)] == ["001-1", "001-2"]  # long only
    q = qs[2]
    assert "a lamp or a sword, ]?" in q.question  # commas inside strings are kept
    assert q.video == tmp_path / "002.mp4" and q.meta["video_id"] == "002" and q.meta["duration_group"] == "medium"
    assert q.meta["domain"] == "Film & Television" and q.gt == "B"
    old = [{"video_id": "005", "duration_category": "long", "video_category": "Knowledge",
            "video_subcategory": "Law", "questions": [{"question_id": "005-1", "task_type": "OCR Problems",
                                                       "question": "Q?", "choices": ["A. x", "B. y", "C. z", "D. w"],
                                                       "answer": "D", "response": "D"}]}]
    p = tmp_path / "old.json"
    p.write_text(json.dumps(old, indent=2))
    (q,) = load_videomme(p, tmp_path)
    assert q.options == ["x", "y", "z", "w"] and q.meta["domain"] == "Knowledge" and q.meta["sub_category"] == "Law"


def test_videomme_bad_record_names_the_line(tmp_path):
    rows = json.loads((F / "videomme" / "videomme.json").read_text())
    del rows[1]["question_id"]
    p = tmp_path / "v.json"
    p.write_text(json.dumps(rows, indent=1))  # item 2 starts on line 17
    start = p.read_text().splitlines().index(" {", 2) + 1
    with pytest.raises(InputError, match=rf"v\.json: line {start}: missing field 'question_id'"):
        load_videomme(p, tmp_path)
    rows = json.loads((F / "videomme" / "videomme.json").read_text())
    rows[0]["answer"] = "E"
    p.write_text(json.dumps(rows))
    with pytest.raises(InputError, match=r"line 1: answer 'E' is not one of the 4 option letters"):
        load_videomme(p, tmp_path)
    p.write_text('{"a": 1}')
    with pytest.raises(InputError):
        load_videomme(p, tmp_path)


# ------------------------------------------------------------------------------------------ LongVideoBench


def test_longvideobench_long_subset_by_default():
    qs = load_longvideobench(F / "longvideobench" / "lvb_val.json", F / "longvideobench" / "videos")
    assert [q.qid for q in qs] == ["vid1_0", "vid1_1", "vid2_0", "vid2_1", "vid2_2"]
    q = qs[0]
    assert q.gt == "E" and len(q.options) == 5 and q.question.endswith("\nE. Nothing on top")
    assert q.question.startswith("What is the man wearing when he enters the kitchen?\nA. A denim jacket\n")
    assert q.video == F / "longvideobench" / "videos" / "vid1.mp4"
    assert q.subtitles == F / "longvideobench" / "subtitles" / "vid1_en.json"
    assert q.meta["duration_group"] == 3600 and q.meta["question_category"] == "TOS"
    assert q.meta["duration"] == pytest.approx(3000.5) and q.meta["video_id"] == "vid1"
    assert by_qid(qs)["vid2_0"].meta["subtitle_offset_s"] == 12.5 and by_qid(qs)["vid2_0"].gt == "C"


def test_longvideobench_groups_and_test_file(tmp_path):
    path = F / "longvideobench" / "lvb_val.json"
    assert len(load_longvideobench(path, tmp_path, duration_groups="all")) == 6
    assert [q.qid for q in load_longvideobench(path, tmp_path, duration_groups=[600])] == ["vid3_0"]
    assert len(load_longvideobench(path, tmp_path, duration_groups="600,3600")) == 6
    with pytest.raises(InputError, match="unknown LongVideoBench duration group"):
        load_longvideobench(path, tmp_path, duration_groups=[601])
    qs = load_longvideobench(F / "longvideobench" / "lvb_test_wo_gt.json", tmp_path)
    assert [q.gt for q in qs] == [None, None]  # no correct_choice, and "@"
    assert all(q.subtitles is None for q in qs)  # vid4_en.json is not there


def test_longvideobench_parquet_rows_and_errors(tmp_path):
    row = {"id": "v_0", "video_path": "v.mp4", "question": "Q?", "option0": "a", "option1": "b", "option2": "c",
           "option3": "N/A", "option4": "N/A", "correct_choice": 1, "duration_group": 3600, "duration": 4000}
    p = tmp_path / "rows.json"
    p.write_text(json.dumps([row]))
    (q,) = load_longvideobench(p, tmp_path)
    assert q.options == ["a", "b", "c"] and q.gt == "B"
    p.write_text(json.dumps([dict(row, correct_choice=7)]))
    with pytest.raises(InputError, match="line 1: correct_choice 7 is not an index"):
        load_longvideobench(p, tmp_path)
    p.write_text("[\n" + json.dumps(row) + ",\n" + json.dumps({k: v for k, v in row.items() if k != "id"}) + "\n]")
    with pytest.raises(InputError, match=r"rows\.json: line 3: missing field 'id'"):
        load_longvideobench(p, tmp_path)


def test_longvideobench_json_subtitles():
    segs = load_subtitles(F / "longvideobench" / "subtitles" / "vid1_en.json")
    assert [(s.start_s, s.end_s, s.text) for s in segs] == [
        (0.0, 2.5, "Welcome back to the recap."), (2.5, 5.0, "Today: the kitchen scene."),
        (6.0, 8.0, "And then the dog barks.")]  # a null end: 2 s for the last entry
    assert {s.source for s in segs} == {"subtitles:vid1_en.json"}
    segs = load_subtitles(F / "longvideobench" / "subtitles" / "vid2_en.json", offset_s=12.5)
    assert [(s.start_s, s.end_s, s.text) for s in segs] == [
        (0.0, 2.0, "Before the video starts."), (1.5, 3.75, "Let us drive to the coast."),
        (50.0, 52.5, "It is raining now.")]


def test_bad_json_subtitles(tmp_path):
    for content in ('{"a": 1}', "[1, 2]", '[{"text": "no time"}]', "not json"):
        p = tmp_path / "s.json"
        p.write_text(content)
        with pytest.raises(InputError, match="cannot parse subtitles"):
            load_subtitles(p)


# ------------------------------------------------------------------------------------------- Charades-STA


def test_charades_txt():
    qs = load_charades(F / "charades" / "charades_sta_test.txt", F / "charades" / "videos", durations={"vid2": 30.0})
    assert [q.qid for q in qs] == ["vid1_0", "vid1_1", "vid2_0", "vid2_1", "vid3_0", "vid3_1"]
    q = by_qid(qs)["vid2_0"]
    assert q.answer_type == "interval" and q.gt == [20.0, 35.0]  # as annotated; clipped when scoring
    assert q.question == CHARADES_QUESTION.format(sentence="a person holds a towel.")
    assert q.question == ("When does this happen in the video: 'a person holds a towel.'? Answer with the start and "
                          "end time in seconds.")
    assert q.meta == {"benchmark": "charades", "video_id": "vid2", "sentence": "a person holds a towel.",
                      "duration": 30.0, "line": 3}
    assert q.video == F / "charades" / "videos" / "vid2.mp4" and by_qid(qs)["vid1_0"].meta["duration"] is None


def test_charades_json_forms(tmp_path):
    mmn = load_charades(F / "charades" / "charades_test.json", tmp_path)
    assert [q.qid for q in mmn] == ["vid1_0", "vid1_1", "vid2_0", "vid2_1"]
    assert by_qid(mmn)["vid2_0"].meta["duration"] == 30.0 and by_qid(mmn)["vid2_0"].gt == [20.0, 35.0]
    lmms = load_charades(F / "charades" / "charades_lmms.json", tmp_path)
    assert [q.qid for q in lmms] == ["vid1_0", "vid1_1", "vid2_0"]
    assert lmms[2].gt == [20.0, 35.0] and lmms[2].video == tmp_path / "vid2.mp4"
    assert "'a person holds a towel'?" in lmms[2].question
    p = tmp_path / "c.jsonl"
    p.write_text('{"video": "a.mp4", "caption": "x", "timestamp": [1, 2], "id": 7}\n')
    (q,) = load_charades(p, tmp_path)
    assert q.qid == "7" and q.gt == [1.0, 2.0]


def test_charades_errors(tmp_path):
    p = tmp_path / "c.txt"
    p.write_text("vid1 0.0 6.9##ok\nvid1 5.0##missing end\n")
    with pytest.raises(InputError, match=r"c\.txt: line 2: expected 'VID start end##sentence'"):
        load_charades(p, tmp_path)
    p.write_text("vid1 0.0 six##not a number\n")
    with pytest.raises(InputError, match=r"line 1: ValueError"):
        load_charades(p, tmp_path)
    p = tmp_path / "c.json"
    p.write_text('{"vid1": {"duration": 3, "timestamps": [[0, 1]], "sentences": []}}')
    with pytest.raises(InputError, match=r"video 'vid1': 1 timestamps but 0 sentences"):
        load_charades(p, tmp_path)
    p.write_text('[{"video": "a.mp4", "caption": "x", "timestamp": [1, 2]},\n {"video": "a.mp4", "caption": "y"}]')
    with pytest.raises(InputError, match=r"line 2: missing field 'timestamp'"):
        load_charades(p, tmp_path)


# ------------------------------------------------------------------------------------------------ registry


def test_registry_and_load_benchmark(tmp_path):
    assert set(BENCHMARKS) == {"lvbench", "videomme", "longvideobench", "charades"}
    assert BENCHMARKS["charades"].answer_type == "interval"
    qs = load_benchmark("videomme", F / "videomme" / "videomme.json", tmp_path, duration="all", subtitles_dir=None)
    assert len(qs) == 7
    assert len(load_benchmark("LVBench", F / "lvbench" / "video_info.meta.jsonl", tmp_path)) == 7
    with pytest.raises(InputError, match="unknown benchmark 'mvbench'"):
        load_benchmark("mvbench", F / "lvbench" / "video_info.meta.jsonl", tmp_path)
    with pytest.raises(InputError, match="LVBench has no option duration"):
        load_benchmark("lvbench", F / "lvbench" / "video_info.meta.jsonl", tmp_path, duration="long")
    with pytest.raises(InputError, match=r"video_info\.meta\.jsonl: line 1: missing field 'id'"):
        load_benchmark("longvideobench", F / "lvbench" / "video_info.meta.jsonl", tmp_path)
    with pytest.raises(InputError, match=r"vid1\.srt: line 1: expected 'VID start end##sentence'"):
        load_benchmark("charades", F / "videomme" / "subtitle" / "vid1.srt", tmp_path)
    broken = tmp_path / "broken.json"
    broken.write_text('[\n  {"video": "a.mp4",\n  "caption": }\n]')
    with pytest.raises(InputError, match=r"broken\.json: line 3: not valid JSON"):
        load_benchmark("charades", broken, tmp_path)


def test_charades_durations_file(tmp_path):
    csv_path = F / "charades" / "Charades_v1_test.csv"
    qs = by_qid(load_charades(F / "charades" / "charades_sta_test.txt", tmp_path, durations=csv_path))
    assert qs["vid1_0"].meta["duration"] == 30.5 and qs["vid2_0"].meta["duration"] == 30.0
    assert qs["vid3_0"].meta["duration"] is None
    j = tmp_path / "d.json"
    j.write_text('{"vid3": 20}')
    qs = by_qid(load_benchmark("charades", F / "charades" / "charades_sta_test.txt", tmp_path, durations=str(j)))
    assert qs["vid3_0"].meta["duration"] == 20.0
    bad = tmp_path / "d.csv"
    bad.write_text("id,len\nvid1,3\n")
    with pytest.raises(InputError, match=r"d\.csv: line 1: expected the columns 'id' and 'length'"):
        load_charades(F / "charades" / "charades_sta_test.txt", tmp_path, durations=bad)
