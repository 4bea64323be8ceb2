"""The perception memory (avi/memory, issue 53): the store built from a real index of a synthetic video with known
ground truth, the typed query's schema, the host evaluator's operations, the time grounding and the route."""

from __future__ import annotations

import json

import pytest
from synth import Shape, Spec, Text, make_video

from avi.agent.memory_route import decide, host_answer
from avi.agent.question import parse_question
from avi.index.memory_stage import ensure_memory, memory_stale
from avi.memory.evaluate import evaluate
from avi.memory.match import runs, snap
from avi.memory.parse import example_json, ground_time, load_bank
from avi.memory.query import MemoryQuery, TimeScope, parse_model, parse_schema
from avi.memory.store import MEMORY_FILE, MEMORY_VERSION


def memory_spec() -> Spec:
    """30 s: navy 0-10 s, black 10-14 s, dark green 14-30 s (cuts at 10 and 14); "EXIT 42" 2-8 s, "ROOM 7B"
    16-24 s; a red circle 1-9 s and a yellow one 4-9 s at the top right; a blue square 16-28 s at the bottom
    left; a yellow triangle moving right at the top 20-28 s."""
    return Spec(duration_s=30.0, scenes=[(0.0, "navy"), (10.0, "black"), (14.0, "darkgreen")],
                texts=[Text("EXIT 42", 2.0, 8.0), Text("ROOM 7B", 16.0, 24.0)],
                shapes=[Shape("circle", 1.0, 9.0, "red", x0=420, y=30), Shape("circle", 4.0, 9.0, "yellow", x0=530, y=30),
                        Shape("square", 16.0, 28.0, "blue", x0=40, y=250),
                        Shape("triangle", 20.0, 28.0, "yellow", x0=100, y=30, speed_px_s=50.0)])


@pytest.fixture(scope="module")
def memory_index(tmp_path_factory, session_backends):
    from avi.config import Settings
    from avi.index.build import ensure_index

    video = make_video(tmp_path_factory.mktemp("videos") / "memory.mp4", memory_spec())
    s = Settings(index_root=tmp_path_factory.mktemp("indexes"), graph_llm=False, summary_llm=False)
    return s, ensure_index(video, s, session_backends, progress=False)


@pytest.fixture(scope="module")
def mem(memory_index, session_backends):
    s, index = memory_index
    m, note = ensure_memory(index, s, session_backends)
    assert m is not None, note
    yield m
    m.close()


def q(**fields) -> MemoryQuery:
    fields.setdefault("noun", "")
    for name in ("label", "pattern", "colour"):
        fields.setdefault(name, None)
    time = fields.pop("time", None)
    return MemoryQuery(**fields, time=TimeScope(start_s=time[0], end_s=time[1]) if time else TimeScope())


# ------------------------------------------------------------------------------------------------ the store


def test_memory_holds_every_modality_with_its_coverage(memory_index, mem):
    s, index = memory_index
    assert (index.path / MEMORY_FILE).stat().st_mode & 0o777 == 0o600
    assert mem.meta["version"] == MEMORY_VERSION and mem.duration_s == pytest.approx(30.0, abs=0.1)
    n_frames = mem.rows("SELECT COUNT(*) FROM frames")[0][0]
    assert n_frames == index.manifest["counts"]["frames"]
    assert [r[0] for r in mem.rows("SELECT t_s FROM cuts ORDER BY t_s")] == pytest.approx([10.0, 14.0], abs=0.15)
    assert mem.rows("SELECT COUNT(*) FROM shots")[0][0] == 3
    texts = {r["norm"] for r in mem.rows("SELECT norm FROM texts")}
    assert {"exit 42", "room 7b"} <= texts
    kinds = {r[0] for r in mem.rows("SELECT DISTINCT kind FROM shapes")}
    assert {"circle", "square"} <= kinds
    for modality in ("objects", "pixels", "shapes", "text", "cuts", "speech"):
        assert mem.covered(modality), modality
    dark = mem.rows("SELECT t_s FROM frames WHERE colour = 'black' AND colour_share > 0.85 ORDER BY t_s")
    assert dark and dark[0][0] >= 9.9 and dark[-1][0] <= 14.0
    assert memory_stale(index.path, people=True) is None
    assert "switched differently" in memory_stale(index.path, people=False)


def test_a_damaged_memory_is_rebuilt_alone(memory_index, session_backends, tmp_path):
    import shutil

    from avi.index.store import VideoIndex

    s, index = memory_index
    copy = tmp_path / index.path.name
    shutil.copytree(index.path, copy)
    (copy / MEMORY_FILE).write_bytes(b"not sqlite at all" * 100)
    other = VideoIndex(copy)
    assert memory_stale(copy, people=True).startswith("unreadable")
    m, note = ensure_memory(other, s, session_backends)
    assert m is not None and note.startswith("built now") and "unreadable" in note
    assert m.rows("SELECT COUNT(*) FROM cuts")[0][0] == 2
    m.close()
    assert sorted(p.name for p in copy.iterdir()) == sorted(p.name for p in index.path.iterdir())  # nothing else


def test_a_captioner_without_boxes_reads_no_objects(memory_index, session_backends, tmp_path):
    """A captioner that records no detector boxes (the gpu profile's VLM captions hold none) leaves the objects
    modality unread: "is there a car" is then not covered, never a "no" from an empty boxes table; what the
    memory measured from the pixels (shapes, colours) and the OCR lines stay covered."""
    import shutil

    from avi.index.store import VideoIndex

    s, index = memory_index
    copy = tmp_path / index.path.name
    shutil.copytree(index.path, copy)
    captions = [json.loads(line) for line in (copy / "captions.jsonl").read_text().splitlines() if line.strip()]
    for cap in captions:
        (cap.get("data") or {}).pop("boxes", None)
    (copy / "captions.jsonl").write_text("".join(json.dumps(c) + "\n" for c in captions))
    (copy / MEMORY_FILE).unlink()
    m, note = ensure_memory(VideoIndex(copy), s, session_backends)
    assert m is not None, note
    try:
        assert not m.covered("objects") and m.covered("shapes") and m.covered("text")
        assert "no detector boxes" in m.coverage["objects"]["why"]
        car = evaluate(m, q(target="object", label="car", op="exists"))
        assert not car.covered and car.value is not True
        assert evaluate(m, q(target="shape", label="circle", op="exists")).value is True
    finally:
        m.close()


# ------------------------------------------------------------------------------------------------ evaluator


@pytest.mark.parametrize("query, kind, value", [
    (dict(target="shape", label="circle", op="count", time=(6.0, 6.0)), "number", 2),
    (dict(target="shape", label="circle", op="count", time=(2.0, 2.0)), "number", 1),
    (dict(target="shape", label="circle", op="max_count"), "number", 2),
    (dict(target="shape", op="exists", compare={"relation": "more_than", "value": 1}, time=(6.0, 6.0)), "yesno", True),
    (dict(target="shape", op="exists", compare={"relation": "more_than", "value": 1}, time=(12.0, 12.0)), "yesno", False),
    (dict(target="shape", label="triangle", op="direction"), "text", "right"),
    (dict(target="shape", label="square", op="direction"), "text", None),
    (dict(target="text", op="exists", pattern="EXIT", time=(0.0, 10.0)), "yesno", True),
    (dict(target="text", op="exists", pattern="EXIT", time=(12.0, 30.0)), "yesno", False),
    (dict(target="text", op="read", time=(16.0, 24.0)), "text", "ROOM 7B"),
    (dict(target="text", op="read", form="number", time=(0.0, 10.0)), "text", "42"),
    (dict(target="text", op="read", form="number"), "text", "42"),  # both lines hold one: the surer read
    (dict(target="text", op="read", form="number", pattern="room"), "text", "7B"),
    (dict(target="text", op="read", form="date"), "text", None),
    (dict(target="cut", op="count"), "number", 2),
    (dict(target="cut", op="count", noun="different shots"), "number", 3),  # shots: one more than the cuts
    (dict(target="cut", op="count", noun="scenes", time=(0.0, 12.0)), "number", 2),
    (dict(target="cut", op="count", noun="scene changes"), "number", 2),
    (dict(target="cut", op="exists", compare={"relation": "exactly", "value": 0}), "yesno", False),
    (dict(target="cut", op="exists", time=(15.0, 30.0)), "yesno", False),
    (dict(target="person", label="person", op="exists"), "yesno", False),
    (dict(target="object", label="dog", op="exists"), "yesno", False),
    (dict(target="shape", label="square", op="colour"), "text", "blue"),
    (dict(target="frame", op="colour", time=(0.0, 9.0)), "text", "blue"),
    (dict(target="shape", label="square", op="exists", region="bottom_left"), "yesno", True),
    (dict(target="shape", label="square", op="exists", region="top_right"), "yesno", False),
])
def test_operations_on_known_truth(mem, query, kind, value):
    r = evaluate(mem, q(**query))
    assert r.kind == kind and r.value == value and r.covered == (value is not None), r.to_dict()
    if value not in (None, False, 0):
        assert r.rows or r.evidence


@pytest.mark.parametrize("query, truth", [
    (dict(target="shape", label="square", op="span"), (16.0, 28.0)),
    (dict(target="frame", colour="black", op="span"), (10.0, 14.0)),
    (dict(target="text", pattern="ROOM", op="span"), (16.0, 24.0)),
    (dict(target="shape", label="circle", op="first"), (1.0, 9.0)),
])
def test_intervals_cover_the_truth(mem, query, truth):
    from avi.video.spans import temporal_iou

    r = evaluate(mem, q(**query))
    assert r.kind == "interval" and r.covered
    assert temporal_iou(list(truth), r.value) >= 0.6, (r.value, truth)


def test_a_distinct_person_is_seen_twice_and_named_once(mem, tmp_path):
    """Over a range, people are counted as distinct subjects seen in MIN_FRAMES frames with one box scoring at least
    SURE_SCORE: a weak box seen twice (a flag at the picture's edge) is no one."""
    import shutil
    import sqlite3

    from avi.memory.match import MIN_FRAMES, SURE_SCORE
    from avi.memory.store import Memory

    copy = tmp_path / "memory.sqlite"
    shutil.copy(mem.path, copy)
    db = sqlite3.connect(copy)
    times = [r[0] for r in db.execute("SELECT t_s FROM frames ORDER BY t_s LIMIT 6")]
    boxes = [(t, "P1", SURE_SCORE + 0.2) for t in times[:3]]  # sure, in three frames
    boxes += [(t, "P2", SURE_SCORE - 0.02) for t in times[:MIN_FRAMES]]  # weak in every frame: not counted
    boxes += [(times[4], "P3", SURE_SCORE + 0.3)]  # sure but once: not counted
    boxes += [(t, "P4", s) for t, s in zip(times[3:5], (SURE_SCORE - 0.1, SURE_SCORE + 0.1))]  # weak once, sure once
    db.executemany("INSERT INTO boxes(t_s, label, score, x1, y1, x2, y2, cx, cy, track, subject, colour) "
                   "VALUES (?, 'person', ?, 10, 10, 50, 90, 30, 50, NULL, ?, NULL)", [(t, s, p) for t, p, s in boxes])
    db.commit()
    db.close()
    m = Memory(copy)
    try:
        r = evaluate(m, q(target="person", label="person", noun="different people", op="count"))
        assert r.value == 2 and sorted(row["id"] for row in r.rows) == ["P1", "P4"], r.to_dict()
    finally:
        m.close()


def test_what_no_tool_measures_is_unsupported_and_never_a_no(mem):
    r = evaluate(mem, q(target="object", noun="traffic cone", label="other", op="exists"))
    assert r.unsupported and r.value is None and not r.covered
    r = evaluate(mem, q(target="person", label="person", op="exists", posture="sitting"))
    assert r.value is None and not r.covered  # attributes never give a "no"
    r = evaluate(mem, q(target="frame", noun="kind of place", op="unsupported"))
    assert r.unsupported and "no tool" in r.describe()


def test_runs_and_snapping():
    assert runs([1.0, 1.5, 2.0, 5.0, 5.5], 2.0) == [[1.0, 2.5], [5.0, 6.0]]
    assert snap([9.6, 14.4], [10.0, 14.0], 30.0) == [10.0, 14.0]
    assert snap([3.0, 6.0], [10.0], 30.0) == [3.0, 6.0]


# ------------------------------------------------------------------------------------------------ the query


def test_schema_is_generated_from_the_one_definition():
    schema = parse_schema(["person", "car"])
    assert schema["required"] == ["target", "noun", "label", "op", "pattern", "colour", "region"]
    assert schema["additionalProperties"] is False
    labels = next(a for a in schema["properties"]["label"]["anyOf"] if "enum" in a)["enum"]
    assert labels[:2] == ["person", "car"] and "circle" in labels and "other" in labels
    assert "time" not in schema["properties"] and "form" not in schema["properties"]  # grounded by the host
    open_vocab = parse_schema(None)
    assert "enum" not in json.dumps(open_vocab["properties"]["label"])
    model = parse_model(["person", "car"])
    with pytest.raises(ValueError):
        model.model_validate_json('{"target": "object", "noun": "x", "label": "dog", "op": "exists"}')


def test_bank_is_valid_and_holds_no_report_question():
    from avi.config import Settings

    s = Settings()
    bank = load_bank(s.prompts_dir / "memory_examples.jsonl")
    assert len(bank) >= 80
    report = set()
    for f in (s.prompts_dir.parent / "bench" / "questions").glob("*.jsonl"):
        for line in f.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("split") == "report":
                report.add(parse_question(rec["question"]).stem.strip())
    for pair in bank:
        assert pair["question"].strip() not in report, pair["question"]
        json.loads(example_json(pair["query"]))


@pytest.mark.parametrize("question, scope", [
    ("How many people are visible at 0:30?", (30.0, 30.0)),
    ("Around 0:44, how many people can be seen?", (44.0, 44.0)),
    ("In the first 40 seconds, does anyone walk onto the lawn?", (0.0, 40.0)),
    ("Between 1:00 and 1:20, what colour is the car?", (60.0, 80.0)),
    ("What colour is the car?", (None, None)),
])
def test_time_is_grounded_by_the_host(question, scope):
    t = ground_time(parse_question(question, 120.0), 120.0)
    assert (t.start_s, t.end_s) == scope


# ------------------------------------------------------------------------------------------------ the route


def _result(mem, question, **query):
    pq = parse_question(question, 30.0)
    query.setdefault("time", None)
    r = evaluate(mem, q(**query))
    return pq, r


def test_host_answers_each_question_type(mem):
    pq, r = _result(mem, "How many circles are on screen at 0:06?", target="shape", label="circle", op="count",
                    time=(6.0, 6.0))
    assert host_answer(pq, r).text == "2"
    pq, r = _result(mem, "Is the word EXIT shown?", target="text", op="exists", pattern="EXIT")
    assert host_answer(pq, r).text == "Yes."
    pq, r = _result(mem, "When is the blue square on screen?", target="shape", label="square", op="span")
    a = host_answer(pq, r)
    assert a.interval and a.text.startswith("[")
    pq, r = _result(mem, "How many cuts are there? A. one B. two C. three", target="cut", op="count")
    assert host_answer(pq, r).choice == "B"
    pq, r = _result(mem, "What colour is the square? A. red B. green C. blue", target="shape", label="square",
                    op="colour")
    assert host_answer(pq, r).choice == "C"


def test_route_goes_to_the_agent_when_the_memory_does_not_cover(mem):
    from avi.memory.parse import Parse

    pq, r = _result(mem, "Is anyone sitting?", target="person", label="person", op="exists", posture="sitting")
    routed = decide(pq, Parse(r.query), r, "read")
    assert routed.route == "agent" and "does not cover" in routed.reason
    pq, r = _result(mem, "When is the blue square on screen?", target="shape", label="square", op="count")
    routed = decide(pq, Parse(r.query), r, "read")
    assert routed.route == "agent" and "not what the question asks" in routed.reason
    routed = decide(pq, Parse(None, error="the reply is not a valid query"), None, "read")
    assert routed.route == "agent" and routed.unsupported is None


@pytest.mark.parametrize("question, scoped", [
    ("What does the man hold after the woman leaves the room?", True),
    ("How many people are seen while he is talking?", True),
    ("When does the slide about revenue appear?", True),
    ("How many cars are there before the end of the video?", False),
    ("During the first minute, is a dog seen?", False),
    ("How many people are there at 0:44?", False),
    ("What is written on the sign?", False),
])
def test_a_time_placed_by_an_event_is_read(question, scoped):
    from avi.agent.memory_route import event_scoped

    assert event_scoped(parse_question(question, 60.0)) is scoped


def test_host_gives_no_answer_the_memory_cannot_place_or_read(mem):
    """The host refusals (memory_route.host_refusal): an event-placed time with no time in the query, a "when"
    over nearly the whole scope, a read that is no plain reading, a colour the question did not ask for; each goes
    to the agent with its reason, and a time the query holds keeps the host's answer."""
    from avi.agent.memory_route import host_refusal
    from avi.memory.parse import Parse

    pq, r = _result(mem, "How many circles are on screen after the square leaves?", target="shape", label="circle",
                    op="count")
    routed = decide(pq, Parse(r.query), r, "read", 30.0)
    assert routed.route == "agent" and "event" in routed.reason and host_answer(pq, r, 30.0) is None
    pq, r = _result(mem, "How many circles are on screen at 0:06?", target="shape", label="circle", op="count",
                    time=(6.0, 6.0))
    assert decide(pq, Parse(r.query), r, "read", 30.0).route == "host"
    from avi.memory.evaluate import Result

    pq = parse_question("When is a car on screen?", 30.0)
    whole = Result(q(target="object", label="car", op="span"), "interval", [0.5, 29.5], True)
    assert "whole" in host_refusal(pq, whole, 30.0) and host_refusal(pq, whole, None) is None
    assert decide(pq, Parse(whole.query), whole, "read", 30.0).route == "agent"
    pq, r = _result(mem, "When is the blue square on screen?", target="shape", label="square", op="span")
    assert host_refusal(pq, r, 30.0) is None and host_answer(pq, r, 30.0).interval
    pq = parse_question("What else is written apart from CAMPRODON?", 30.0)
    read = Result(q(target="text", op="read"), "text", "COMPRODON", True)
    assert "plain reading" in host_refusal(pq, read)
    read.value = "A-A"
    assert "plain reading" in host_refusal(pq, read)
    read.value = "ROOM 7B"
    assert host_refusal(pq, read) is None and host_answer(pq, read).text == "ROOM 7B."
    read.value = "CAMPRODON 42"  # the question's word and one it does not hold: a reading
    assert host_refusal(pq, read) is None
    colour = Result(q(target="shape", label="square", op="colour"), "text", "blue", True)
    assert "colour" in host_refusal(parse_question("What is the square doing?", 30.0), colour)
    assert host_refusal(parse_question("What colour is the square?", 30.0), colour) is None


@pytest.mark.parametrize("question, op, target, want_op", [
    ("What colour is the car?", "exists", "object", "colour"),
    ("Which colour is the shirt? A. red B. blue", "read", "object", "colour"),
    ("What is written on the sign?", "exists", "text", "read"),
    ("What does the speaker say about the budget?", "exists", "speech", "read"),
    ("Is anything written on the sign?", "exists", "text", "exists"),
    ("Which word is on the sign?", "span", "text", "read"),
])
def test_the_op_yields_what_the_question_asks(question, op, target, want_op):
    from avi.agent.memory_check import check_query

    pq = parse_question(question, 60.0)
    label = "car" if target == "object" else None
    query, notes = check_query(q(target=target, op=op, label=label, pattern=None), pq, ["person", "car"])
    assert query is not None and query.op == want_op, notes


def test_the_check_reads_a_count_the_question_states():
    from avi.agent.memory_check import check_query

    for text in ("When are there five circles on screen?", "Are there five circles at the top?"):
        pq = parse_question(text, 60.0)
        for stated in (None, {"relation": "at_least", "value": 5}):  # a comparison the parser put there is read again
            query, notes = check_query(q(target="shape", op="exists", label="circle", compare=stated), pq, ["person"])
            assert query.op in ("exists", "span") and query.compare is not None, notes
            assert (query.compare.relation, query.compare.value) == ("exactly", 5), notes


@pytest.mark.parametrize("question, form", [
    ("What date is written under the title on the banner?", "date"),
    ("According to the slides, in which year was the lens invented?", "year"),
    ("What is the number on the player's shirt?", "number"),
    ("What is written on the sign?", None),
    ("What time does the clock's display show?", "time"),
    ("What time does the watch show?", "time"),
    ("Which day did the lecturer say the quiz has been moved to?", None),
])
def test_a_read_takes_the_form_the_question_asks_for(question, form):
    from avi.agent.memory_check import check_query
    from avi.memory.match import form_match

    pq = parse_question(question, 60.0)
    query, notes = check_query(q(target="text", op="read"), pq, ["person"])
    assert query.form == form, notes
    assert check_query(q(target="person", label="person", op="count"), pq, ["person"])[0].form is None
    line = {"date": "STATEMENT - JULY 14, 2015", "year": "Invented in 1822 by Fresnel", "number": "No. 23",
            "time": "ALARM 5:40 PM", None: "EXIT"}[form]
    assert form_match(line, form) == {"date": "JULY 14, 2015", "year": "1822", "number": "23", "time": "5:40 PM",
                                      None: "EXIT"}[form]
    assert form is None or form_match("PRESIDENT OBAMA STATEMENT ON IRAN", form) is None


def test_the_host_delivers_a_short_read_of_the_asked_form(mem):
    from avi.agent.memory_route import host_refusal

    pq = parse_question("What number is written on the sign?", 30.0)
    r = evaluate(mem, q(target="text", op="read", form="number", time=(0.0, 10.0)))
    assert r.value == "42" and host_refusal(pq, r, 30.0) is None and host_answer(pq, r, 30.0).text == "42."
    plain = evaluate(mem, q(target="text", op="read", time=(0.0, 10.0)))
    assert plain.value == "EXIT 42"


VOCAB = ["person", "car", "truck", "umbrella", "cup", "bicycle", "cell phone"]


@pytest.mark.parametrize("question, decoded, want", [
    # the thing whose colour is asked
    ("What colour is the umbrella the man carries?", dict(target="person", label="person", noun="man with umbrella"),
     dict(target="object", label="umbrella")),
    ("What colour is the shirt of the person on the left?", dict(target="object", label="other", noun="shirt"),
     dict(target="person", label="person")),
    ("What colour is the van parked at the top right?", dict(target="object", label="other",
                                                            noun="van parked at the top right"),
     dict(target="object", label="car")),
    ("What colour is the box on the table?", dict(target="object", label="other", noun="box"),
     dict(target="object", label="other")),
    ("What colour is the cell phone the man holds?", dict(target="person", label="person", noun="man's phone"),
     dict(target="object", label="cell phone")),
])
def test_the_check_measures_the_thing_whose_colour_is_asked(question, decoded, want):
    from avi.agent.memory_check import check_query

    query, notes = check_query(q(op="colour", **decoded), parse_question(question, 60.0), VOCAB)
    assert {k: getattr(query, k) for k in want} == want, notes


@pytest.mark.parametrize("question, decoded, want", [
    # an object of the person class is a person
    ("During which time span is the cyclist in a helmet on screen?", dict(target="object", label="person",
                                                                          noun="cyclist in a helmet", op="span"),
     dict(target="person", label="person")),
    # a colour the question gives to another thing is no condition; one it gives to the target, or to what a
    # person wears, is
    ("During which time span is the cyclist waiting behind a grey van on screen?",
     dict(target="person", label="person", noun="cyclist", op="span"), dict(colour=None)),
    ("Does a red car drive by?", dict(target="object", label="car", noun="car", op="exists"), dict(colour="red")),
    ("When is the woman in a long black coat on the lawn?", dict(target="person", label="person", noun="woman",
                                                                 op="span"), dict(colour="black")),
    ("When is the picture mostly green?", dict(target="frame", noun="picture", op="span"), dict(colour="green")),
    # a posture or an expression the question states, in so many words
    ("Is someone standing behind the man?", dict(target="person", label="person", noun="someone", op="exists"),
     dict(posture="standing")),
    ("When does the man stand still next to the car?", dict(target="person", label="person", noun="man", op="span"),
     dict(posture=None)),
    ("Does the woman smile at any point?", dict(target="person", label="person", noun="woman", op="exists"),
     dict(expression="happy")),
    # someone holding a thing is a person holding it
    ("During which time span is someone holding a cup?", dict(target="object", label="cup", noun="cup", op="span"),
     dict(target="person", label="person", holding="cup")),
    ("Is someone holding an umbrella at 1:10?", dict(target="object", label="umbrella", noun="umbrella", op="exists",
                                                    holding="umbrella"),
     dict(target="person", label="person", holding="umbrella")),
    ("Is there a cup on the table?", dict(target="object", label="cup", noun="cup", op="exists"),
     dict(target="object", label="cup", holding=None)),
    # a thing a phrase is of names no class of the noun ("the rear hatch of the car" is no car)
    ("During which time span is the rear hatch of the car open?", dict(target="object", label="other",
                                                                        noun="rear hatch of the car", op="span"),
     dict(label="other")),
])
def test_the_check_grounds_what_is_measured_in_the_question(question, decoded, want):
    from avi.agent.memory_check import check_query

    query, notes = check_query(q(**decoded), parse_question(question, 60.0), VOCAB)
    assert {k: getattr(query, k) for k in want} == want, notes


def test_a_colour_is_never_of_a_cut_a_text_or_speech():
    from avi.agent.memory_check import check_query

    pq = parse_question("A little after the one-minute mark the background changes colour. What colour does it "
                        "change to?", 120.0)
    query, notes = check_query(q(target="cut", op="colour"), pq, ["person"])
    assert (query.target, query.op) == ("frame", "colour"), notes
    banner = parse_question("What is written in white letters on the blue banner?", 60.0)
    query, notes = check_query(q(target="text", op="read", colour="white"), banner, ["person"])
    assert query.colour is None and query.op == "read", notes


def test_a_read_is_of_text_or_speech_as_the_question_says():
    from avi.agent.memory_check import check_query

    slides = parse_question("According to the slides, in which year was the lens invented?", 60.0)
    query, notes = check_query(q(target="frame", op="read"), slides, ["person"])
    assert (query.target, query.op, query.form) == ("text", "read", "year"), notes
    said = parse_question("What does the narrator say about the weather?", 60.0)
    assert check_query(q(target="object", label="other", op="read"), said, ["person"])[0].target == "speech"
    seen = parse_question("What is the man holding?", 60.0)  # names nothing read: left as parsed
    assert check_query(q(target="person", label="person", op="read"), seen, ["person"])[0].target == "person"


def test_a_region_in_the_picture_keeps_its_lines_a_region_of_a_thing_takes_the_furthest():
    from avi.agent.memory_step import pick_line, placed_in_picture

    size = (640, 360)
    texts = [{"text": "WHITE HOUSE", "score": 0.99, "box": [200, 20, 440, 50]},
             {"text": "PRESIDENT OBAMA STATEMENT ON IRAN", "score": 0.99, "box": [100, 250, 540, 280]},
             {"text": "IDENT OF THE", "score": 0.85, "box": [280, 330, 360, 350]}]
    banner = parse_question("What is written on the blue banner at the bottom of the picture?", 10.0)
    assert placed_in_picture(banner, "bottom")
    assert pick_line(texts, "bottom", True, size)["text"] == "PRESIDENT OBAMA STATEMENT ON IRAN"
    listed = parse_question("Which lighthouse is at the bottom of the list?", 10.0)
    assert not placed_in_picture(listed, "bottom")
    assert pick_line(texts, "bottom", False, size)["text"] == "IDENT OF THE"
    assert pick_line(texts, "top", True, size)["text"] == "WHITE HOUSE"
    assert pick_line(texts, "any", False, size)["text"] == "PRESIDENT OBAMA STATEMENT ON IRAN"  # surest, longest
