"""Questions over several videos outside the agent (issue 21): the JSONL benchmark format and its scoring, batch
manifests, answer keys, the HTML page with one timeline row per video, and the command line's one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli_errors import AVI, AVI_RUN, QUESTION, assert_no_index, assert_one_line_error, cli  # noqa: F401

from avi.errors import InputError
from avi.eval.jsonl import grade_jsonl, load_jsonl
from avi.jobs.keys import answer_key
from avi.jobs.manifest import load_manifest
from avi.jobs.spec import JobQuestion
from avi.videos.view import render_videos_html


def _write(path: Path, rows: list) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_jsonl_lists_videos_and_scores_video_answers(tmp_path):
    f = _write(tmp_path / "q.jsonl", [
        {"qid": "a", "video": ["cams/north.mp4", "south.avi"], "question": "Which video shows a bus?", "type": "video",
         "answer": "south.avi"},
        {"qid": "b", "video": ["n.mp4", "s.mp4", "w.mp4"], "question": "Order the videos by length.",
         "type": "video_order", "answer": ["w.mp4", "n", "s.mp4"]},
        {"qid": "c", "video": ["n.mp4", "s.mp4", "w.mp4"], "question": "Which of the videos show rain?",
         "type": "videos", "answer": ["s.mp4", "n.mp4"]},
        {"qid": "d", "video": ["n.mp4", "s.mp4"], "question": "How many buses in both?", "type": "number", "answer": 3},
        {"qid": "e", "video": "one.mp4", "question": "What is shown?"}])
    qs = {q.qid: q for q in load_jsonl(f, tmp_path / "vids")}
    assert qs["a"].video == tmp_path / "vids" / "cams/north.mp4"
    assert qs["a"].videos == [tmp_path / "vids" / "cams/north.mp4", tmp_path / "vids" / "south.avi"]
    assert qs["a"].gt == ["south"] and qs["b"].gt == ["w", "n", "s"] and qs["c"].gt == ["s", "n"]
    assert qs["e"].videos is None and qs["e"].meta["video_id"] == "one.mp4"
    ok = {"status": "ok"}
    assert grade_jsonl(qs["a"], {**ok, "answer_videos": ["south"], "answer": "south"})["correct"] is True
    assert grade_jsonl(qs["a"], {**ok, "answer": "It is south.avi"})["correct"] is True  # read from the text
    assert grade_jsonl(qs["a"], {**ok, "answer_videos": ["north"]})["correct"] is False
    assert grade_jsonl(qs["b"], {**ok, "answer_videos": ["w", "n", "s"]})["correct"] is True
    assert grade_jsonl(qs["b"], {**ok, "answer_videos": ["n", "w", "s"]})["correct"] is False
    assert grade_jsonl(qs["c"], {**ok, "answer_videos": ["n", "s"]})["correct"] is True
    assert grade_jsonl(qs["c"], {**ok, "answer_videos": ["n"]})["correct"] is False
    assert grade_jsonl(qs["d"], {**ok, "answer": "3 buses"})["correct"] is True
    assert grade_jsonl(qs["a"], None)["correct"] is False


@pytest.mark.parametrize("row, needle", [
    ({"video": ["a.mp4"], "type": "video", "answer": "a.mp4"}, "at least two"),
    ({"video": ["a.mp4", "b.mp4"], "type": "video", "answer": "c.mp4"}, "not one of the question's videos"),
    ({"video": "a.mp4", "type": "video", "answer": "a.mp4"}, "needs \"video\" to list"),
    ({"video": ["a.mp4", "b.mp4"], "type": "video_order", "answer": ["a.mp4", "a.mp4"]}, "two different"),
])
def test_jsonl_bad_video_lines_name_the_line(tmp_path, row, needle):
    f = _write(tmp_path / "q.jsonl", [{"qid": "x", "question": "q?", **row}])
    with pytest.raises(InputError, match="line 1") as e:
        load_jsonl(f, tmp_path)
    assert needle in str(e.value)


def test_manifest_question_over_several_videos(tmp_path):
    f = _write(tmp_path / "m.jsonl", [
        {"videos": ["a.mp4", "b.mp4"], "question": "Which video shows a dog?"},
        {"videos": ["a.mp4", "b.mp4"], "questions": ["Which one is longer?", {"question": "Same man?", "qid": "q9"}]},
        {"video": "a.mp4", "question": "What is it?"}])
    qs = load_manifest(f)
    assert [q.qid for q in qs] == ["a.mp4+b.mp4#1", "a.mp4+b.mp4#2", "q9", "a.mp4#1"]
    assert qs[0].videos == [tmp_path / "a.mp4", tmp_path / "b.mp4"] and qs[0].video == tmp_path / "a.mp4"
    assert qs[3].videos is None
    for bad in ({"videos": ["a.mp4"], "question": "q"}, {"videos": ["a.mp4", "b.mp4"], "video": "a.mp4",
                                                          "question": "q"}):
        with pytest.raises(InputError, match="line 1"):
            load_manifest(_write(tmp_path / "bad.jsonl", [bad]))


def test_answer_key_covers_every_video(tmp_path, settings):
    for n, data in (("a.mp4", b"a"), ("b.mp4", b"b"), ("c.mp4", b"c")):
        (tmp_path / n).write_bytes(data)
    one = JobQuestion(qid="1", video=tmp_path / "a.mp4", question="q")
    two = one.model_copy(update={"videos": [tmp_path / "a.mp4", tmp_path / "b.mp4"]})
    other = one.model_copy(update={"videos": [tmp_path / "a.mp4", tmp_path / "c.mp4"]})
    keys = {answer_key(q, settings) for q in (one, two, other)}
    assert len(keys) == 3
    assert "videos" not in one.model_dump(exclude_none=True)  # one video: the key's payload is as before


def test_page_has_one_timeline_row_per_video(tmp_path, sign_video):
    import shutil

    other = tmp_path / "lobby.mp4"
    shutil.copy(sign_video, other)
    trace = {"question": "Which video shows <b>EXIT</b>?", "answer": "signs", "answer_videos": ["signs"],
             "evidence": [[4.0, 9.0, "signs"], [1.0, 2.0, "lobby"]], "settings": {"max_side": 1280},
             "videos": [{"name": "signs", "path": str(sign_video), "duration_s": 20.0, "index_dir": "i1"},
                        {"name": "lobby", "path": str(other), "duration_s": 20.0, "index_dir": "i2"},
                        {"name": "gone", "path": str(tmp_path / "gone.mp4"), "duration_s": 5.0, "index_dir": "i3"}],
             "steps": [{"index": 0, "phase": "retrieve", "kind": "tool_call", "tool": "clip_retrieve",
                        "arguments": {"query": "exit"}, "observation_data": {"clips": []}},
                       {"index": 1, "phase": "perceive", "kind": "tool_call", "tool": "text_extract",
                        "arguments": {"video": "signs", "time_ranges": [[4, 6]]}, "frames_s": [4.0, 5.0, 6.0]},
                       {"index": 2, "phase": "perceive", "kind": "tool_call", "tool": "text_extract",
                        "arguments": {"video": "lobby", "time_ranges": [[1, 2]]}, "frames_s": [1.0]}]}
    page = render_videos_html(trace, tmp_path / "p.html").read_text()
    svg = page[page.index("<svg"):page.index("</svg>")]
    assert [svg.count(f'class="rowlabel">{n}<') for n in ("signs", "lobby", "gone")] == [1, 1, 1]
    assert "evidence in signs: 4.0s–9.0s" in svg and "evidence in lobby: 1.0s–2.0s" in svg
    assert "#1 looked at signs 5.00s" in svg and "#2 looked at lobby 1.00s" in svg
    assert page.count("<figure>") == 4 and "Thumbnails of gone unavailable" in page
    assert "&lt;b&gt;EXIT&lt;/b&gt;" in page and "<b>EXIT</b>" not in page
    assert "default-src 'none'" in page and "http://" not in page.replace("http://www.w3.org/2000/svg", "")


@pytest.mark.parametrize("extra, needle", [
    (["--video", "/nonexistent/dir/*.mp4"], "no file matches"),
    (["--video", "/nonexistent/b.mp4"], "b.mp4"),
])
def test_avi_run_several_videos_bad_input(cli, sign_video, extra, needle):  # noqa: F811
    r = cli([AVI_RUN, "--video", str(sign_video), *extra, "--question", QUESTION])
    assert r.returncode == 2 and needle in assert_one_line_error(r)
    assert_no_index(cli.index_root)


def test_avi_view_multi_trace_refuses_video(cli, tmp_path, sign_video):  # noqa: F811
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"question": "q", "steps": [], "videos": [
        {"name": "a", "path": str(sign_video), "duration_s": 20.0}, {"name": "b", "path": str(sign_video),
                                                                      "duration_s": 20.0}]}))
    r = cli([AVI, "view", str(trace), "--video", str(sign_video)])
    assert r.returncode == 2 and "several videos" in assert_one_line_error(r)
    r = cli([AVI, "view", str(trace)])
    assert r.returncode == 0 and Path(r.stdout.strip()).read_text().count('class="rowlabel"') == 2
