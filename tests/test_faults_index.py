"""Fault injection, issue 55: damage anywhere in an index is reported and repaired, never a traceback.

Two small real indexes are built once per module by ``avi index``: an 8 s video with drawn text and a subtitle
sidecar (captions, transcript, both Chroma collections, entity graph, summary, tracks, subjects, face
descriptors) and a 6 s one for questions over two videos. Each case damages a copy of them the way a disk or a
careless hand does and runs the real command (``python -m avi.cli``: ``ask``, ``tool``, ``index``) as a
subprocess, with a scripted orchestrator (tests/batch_model.py behind tests/fake_openai_server.py). Every case
asserts: no traceback, at most the one ``avi:`` line it expects on stderr, the documented exit status, a working
answer, the index usable afterwards (rebuilt or salvaged: the next command says nothing) and the user's own
files (video, subtitles) unchanged.

The damage sweep does this for every file of the index (truncated, a page zeroed, garbage, valid JSON of the
wrong shape or, for binary files, emptied; :func:`kinds_of`), a question each time; tests below make sure the
sweep and the index check (avi/index/stage_files.py) cover every file a build writes. That the index works
afterwards is checked in-process with the check every command runs first (:func:`assert_quiet_again`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from batch_model import sign_reader
from fake_openai_server import FakeOpenAIServer
from synth import Spec, Text, make_video

pytestmark = pytest.mark.faults

REPO = Path(__file__).resolve().parent.parent
AVI = [sys.executable, "-m", "avi.cli"]
QUESTION = "What does the sign say?"
SRT = "1\n00:00:01,000 --> 00:00:04,000\nThe exit is at gate forty two.\n\n2\n00:00:05,000 --> 00:00:07,500\n" \
      "Walk to the sign.\n"


def base_env(root: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AVI_")}
    env.update(AVI_HOME=str(root / "home"), AVI_GRAPH_LLM="false", AVI_SUMMARY_LLM="false", PYTHONPATH=str(REPO),
               AVI_TRACE_DIR=str(root / "traces"), AVI_LLM_BASE_URL="http://127.0.0.1:9/v1")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run(argv: list, env: dict, prefix: list | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    r = subprocess.run((prefix or []) + AVI + argv, env=env, capture_output=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    return subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode(errors="replace"),
                                       r.stderr.decode(errors="replace"))


def clean(r: subprocess.CompletedProcess, lines: int = 1) -> list[str]:
    """The stderr lines of ``r`` after checking there is no traceback, no internal error, no Rust panic report
    and at most ``lines`` lines, each an ``avi:`` line."""
    both = r.stdout + r.stderr
    assert "Traceback" not in both and "internal error" not in both and "panicked" not in both, r.stderr[-3000:]
    err = r.stderr.splitlines()
    assert len(err) <= lines and all(e.startswith("avi: ") for e in err), r.stderr[-3000:]
    return err


def sha16(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The two videos (the sign video with its subtitle sidecar) and their indexes, built once."""
    root = tmp_path_factory.mktemp("faults-index")
    video = make_video(root / "sign.mp4", Spec(duration_s=8, texts=[Text("EXIT 42", 0, 8)]))
    (root / "sign.srt").write_text(SRT)
    other = make_video(root / "room.mp4", Spec(duration_s=6, scenes=[(0.0, "darkgreen")],
                                                texts=[Text("ROOM 7B", 0, 6)]))
    r = run(["index", str(video), str(other), "--quiet"], base_env(root))
    assert r.returncode == 0, r.stderr
    indexes = root / "home" / "indexes"
    sign = next(p for p in indexes.iterdir() if p.name.startswith(sha16(video)))
    return SimpleNamespace(root=root, video=video, other=other, indexes=indexes, sign=sign.name,
                           room=next(p.name for p in indexes.iterdir() if p.name.startswith(sha16(other))))


@pytest.fixture
def world(built, tmp_path):
    """A private copy of the built index root (``<tmp>/home/indexes``), the scripted LLM, the environment."""
    shutil.copytree(built.indexes, tmp_path / "home" / "indexes")
    with FakeOpenAIServer(reply_fn=sign_reader, models=["scripted"]) as srv:
        user_files = {p: p.read_bytes() for p in (built.video, built.root / "sign.srt", built.other)}
        yield SimpleNamespace(tmp=tmp_path, indexes=tmp_path / "home" / "indexes", sign=tmp_path / "home" /
                              "indexes" / built.sign, room=tmp_path / "home" / "indexes" / built.room,
                              video=built.video, other=built.other, llm=srv.base_url, env=base_env(tmp_path))
        assert all(p.read_bytes() == data for p, data in user_files.items()), "a file of the user's changed"


def ask(w, *videos: Path) -> list:
    argv = ["ask", "--question", QUESTION, "--quiet", "--llm-url", w.llm]
    for v in videos or (w.video,):
        argv += ["--video", str(v)]
    return argv


def tool(w, name: str = "clip_retrieve", args: dict | None = None, video: Path | None = None) -> list:
    return ["tool", name, "--video", str(video or w.video), "--args", json.dumps(args or {"query": "exit sign"}),
            "--quiet", "--json"]


def manifest(index: Path) -> dict:
    return json.loads((index / "manifest.json").read_text())


def assert_quiet_again(index: Path) -> None:
    """The index at ``index`` is usable as it is now, so the next command neither warns nor rebuilds: it passes
    :func:`avi.index.opening.open_checked`, the check ``avi index``, every question and ``avi tool`` run before
    they use an index (the stage files questions read, Chroma answering with the captions' and transcript's
    counts). In-process: a second ``avi tool`` subprocess per case did the same check at about 2 s a case."""
    from avi.index.opening import open_checked
    from avi.index.store import release_chroma

    opened = open_checked(index)
    release_chroma(opened.chroma_dir())
    assert manifest(index)["complete"]


# ---------------------------------------------------------------- item 1: a damaged page of chroma.sqlite3


@pytest.mark.parametrize("page, command", [(1, "ask"), (2, "ask"), (5, "ask"), (1, "tool"), (1, "index")])
def test_a_zeroed_page_of_the_chroma_database_is_rebuilt(world, page, command):
    """A 4 kB page of chroma.sqlite3 zeroed made Chroma's Rust code panic (pyo3's PanicException, a
    BaseException): a 45-line traceback on every command. Now: one warning naming the damaged database, the
    embeddings built again (captions taken over), the answer given, and the next command quiet."""
    db = world.sign / "chroma" / "chroma.sqlite3"
    data = bytearray(db.read_bytes())
    data[4096 * page:4096 * (page + 1)] = bytes(4096)
    db.write_bytes(bytes(data))
    captions = (world.sign / "captions.jsonl").read_bytes()
    argv = {"ask": ask(world), "tool": tool(world), "index": ["index", str(world.video), "--quiet"]}[command]
    r = run(argv, world.env)
    err = clean(r)
    assert r.returncode == 0, r.stderr
    if err:  # most pages hold Chroma's tables; a free page is no damage at all
        assert err[0].startswith("avi: warning: the index") and "Chroma database" in err[0], err
        assert "rebuilding it: the embeddings again, the rest taken over" in err[0], err
        assert "chroma" in manifest(world.sign)["broken_files"]
        assert (world.sign / "captions.jsonl").read_bytes() == captions
    if command == "ask":
        assert "Answer: EXIT 42" in r.stdout, r.stdout
    assert_quiet_again(world.sign)


# ---------------------------------------------------------------- item 2: reuse copies nothing unchecked


def _sibling_env(w) -> dict:
    """An environment whose index key differs from the built one only by a graph prompt: with graph_llm off every
    stage of the built index (the sibling) can be reused."""
    prompts = w.tmp / "prompts"
    shutil.copytree(REPO / "prompts", prompts)
    (prompts / "graph_extract.md").write_text((prompts / "graph_extract.md").read_text() + "\nPeople only.\n")
    return {**w.env, "AVI_PROMPTS_DIR": str(prompts)}


def _captions_typed_wrong(index: Path) -> None:
    for name in ("captions.jsonl", "captions.partial.jsonl"):
        rows = [json.loads(x) for x in (index / name).read_text().splitlines()]
        rows[0]["start_s"] = "zero"
        (index / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


SIBLING_DAMAGE = {
    "transcript-torn": (lambda p: (p / "transcript.jsonl").write_text('{"start_s": 1.0, "end'), "transcript"),
    "summary-a-list": (lambda p: (p / "summary.json").write_text("[1, 2]"), "summary"),
    "caption-values-typed-wrong": (_captions_typed_wrong, "captions"),
    "chroma-zeroed": (lambda p: (p / "chroma" / "chroma.sqlite3").write_bytes(
        bytes((p / "chroma" / "chroma.sqlite3").stat().st_size)), "embeddings"),
}


@pytest.mark.parametrize("damage", list(SIBLING_DAMAGE))
def test_a_damaged_sibling_is_not_copied(world, damage):
    """A new key of the same video starts from a sibling's stages; a damaged one used to be copied unchecked and
    made every new-key build an internal error (its .partial poisoned for good). Now the copy is checked, the
    damaged stage is built instead (one warning naming it), the index works, and nothing is left behind."""
    hurt, stage = SIBLING_DAMAGE[damage]
    hurt(world.sign)
    env = _sibling_env(world)
    r = run(["index", str(world.video), "--quiet", "--json"], env)
    err = clean(r, lines=2)
    assert r.returncode == 0, r.stderr
    assert any(f"could not reuse the {stage} stage" in e for e in err), err
    new = Path(json.loads(r.stdout)["index_dir"])
    assert new != world.sign and stage not in (manifest(new)["reused"] or {}).get("stages", [])
    assert not list(world.indexes.glob(".*.partial"))
    r = run(ask(world), env)
    assert clean(r, lines=0) == [] and "Answer: EXIT 42" in r.stdout, r.stderr


def test_a_poisoned_work_directory_is_cleaned_on_resume(world):
    """A work directory an older avi seeded from a damaged sibling (a summary that is a list, a transcript that
    does not parse, a Chroma database marked finished but zeroed) resumes: the damaged stages are built again."""
    env = _sibling_env(world)
    r = run(["index", str(world.video), "--quiet", "--json"], env)
    assert r.returncode == 0, r.stderr
    new = Path(json.loads(r.stdout)["index_dir"])
    work = new.parent / f".{new.name}.partial"
    shutil.copytree(new, work)
    shutil.rmtree(new)
    (work / "manifest.json").unlink()
    (work / "captions.jsonl").unlink()
    (work / "summary.json").write_text("[1, 2]")
    (work / "transcript.jsonl").write_text("{not json\n")
    (work / "chroma" / "chroma.sqlite3").write_bytes(bytes(4096))
    (work / "embeddings.done").touch()
    r = run(["index", str(world.video), "--quiet"], env)
    err = clean(r)
    assert r.returncode == 0 and "held damaged files" in err[0], r.stderr
    assert not work.exists() and manifest(new)["complete"]
    assert_quiet_again(new)


# ---------------------------------------------------------------- item 3: person_faces.npz


def _faces_wrong_width(index: Path) -> None:
    np.savez(index / "person_faces.npz", P1=np.ones((3, 512), np.float16))


FACES_DAMAGE = {
    "truncated": lambda p: (p / "person_faces.npz").write_bytes((p / "person_faces.npz").read_bytes()[:10]),
    "empty": lambda p: (p / "person_faces.npz").write_bytes(b""),
    "wrong-width": _faces_wrong_width,
}


@pytest.mark.parametrize("damage", list(FACES_DAMAGE))
def test_damaged_face_descriptors(world, damage):
    """A truncated, empty or 512-wide person_faces.npz was an internal error on every question over several
    videos, and avi index did not notice. Now avi index notices (one warning) and rebuilds the tracks stage;
    a question over both videos answers."""
    FACES_DAMAGE[damage](world.sign)
    r = run(["index", str(world.video), "--quiet"], world.env)
    err = clean(r)
    assert r.returncode == 0 and "person_faces.npz" in err[0] and "object tracks again" in err[0], r.stderr
    assert list(manifest(world.sign)["broken_files"]) == ["person_faces.npz"]
    FACES_DAMAGE[damage](world.sign)
    r = run(ask(world, world.video, world.other), world.env)
    err = clean(r)
    assert r.returncode == 0 and "Answer:" in r.stdout, r.stderr
    assert err and "person_faces.npz" in err[0]
    assert_quiet_again(world.sign)


# ---------------------------------------------------------------- item 4: a manifest of the wrong shape


MANIFESTS = ["[1, 2]", '{"complete": true, "schema": 2}', '{"complete": true, "schema": 2, "counts": [], "video": "x"}']


@pytest.mark.parametrize("text, command", [(MANIFESTS[0], "ask"), (MANIFESTS[1], "ask"), (MANIFESTS[2], "ask"),
                                           (MANIFESTS[2], "tool"), (MANIFESTS[2], "index")])
def test_a_manifest_of_the_wrong_shape_is_rebuilt(world, text, command):
    """Valid JSON of the wrong shape was an internal error on every run, never rebuilt. Now: one warning naming
    manifest.json, every stage taken over (nothing captioned or embedded again), the manifest written again."""
    (world.sign / "manifest.json").write_text(text)
    argv = {"ask": ask(world), "tool": tool(world), "index": ["index", str(world.video), "--quiet"]}[command]
    r = run(argv, world.env)
    err = clean(r)
    assert r.returncode == 0 and err and "manifest.json" in err[0], r.stderr
    assert "its files taken over, its manifest written again" in err[0], err
    m = manifest(world.sign)
    assert m["complete"] and set(m["reused"]["stages"]) == {"transcript", "captions", "embeddings", "graph",
                                                             "summary"}
    if command == "ask":
        assert "Answer: EXIT 42" in r.stdout
    assert_quiet_again(world.sign)


# ---------------------------------------------------------------- item 5: graph.json / summary.json holding a list


@pytest.mark.parametrize("name, tool_name", [("graph.json", "graph_retrieve"), ("summary.json", "global_explore")])
def test_a_graph_or_summary_holding_a_list(world, name, tool_name):
    """graph.json or summary.json holding a list put a Python traceback into the tool's --json data and showed
    the model "AttributeError: 'list' object has no attribute 'get'". Now the stage is rebuilt alone and the tool
    answers."""
    (world.sign / name).write_text("[1, 2]")
    r = run(tool(world, tool_name, {"query": "exit"}), world.env)
    err = clean(r)
    assert r.returncode == 0 and err and name in err[0], r.stderr
    obs = json.loads(r.stdout)
    assert not obs["error"] and "traceback" not in obs["data"] and "AttributeError" not in obs["text"], obs
    assert list(manifest(world.sign)["broken_files"]) == [name]
    assert manifest(world.sign)["reused"]["stages"] == [s for s in ["transcript", "captions", "embeddings", "graph",
                                                                    "summary"] if s != name.split(".")[0]]


def test_a_list_met_after_the_index_was_opened(built, tmp_path):
    """Damage after the open check (another process, a disk): graph_retrieve answers with an error observation
    and global_explore without the summary; neither has a traceback in its data."""
    from avi.config import Settings
    from avi.index.store import VideoIndex
    from avi.tools import ALL_TOOLS, ToolContext
    from avi.video.decode import VideoReader, probe

    shutil.copytree(built.indexes / built.sign, tmp_path / built.sign)
    index = VideoIndex(tmp_path / built.sign)
    (index.path / "graph.json").write_text("[1, 2]")
    (index.path / "summary.json").write_text('{"segments": "none"}')
    settings = Settings(home=tmp_path / "home", graph_llm=False, summary_llm=False)
    from avi.backends import Backends

    backends = Backends(settings)
    try:
        ctx = ToolContext(settings=settings, index=index, video=VideoReader(probe(built.video), settings.max_side),
                          backends=backends)
        g = ALL_TOOLS["graph_retrieve"].run(ctx, {"query": "exit"})
        s = ALL_TOOLS["global_explore"].run(ctx, {"query": "exit"})
    finally:
        backends.close()
    assert g.error and "cannot be read" in g.text and "traceback" not in g.data and "AttributeError: '" not in g.text
    assert not s.error and not s.data["has_summary"] and "traceback" not in s.data


# ---------------------------------------------------------------- item 11: a full disk during the Chroma check


def _can_mount_tmpfs(mnt: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    r = subprocess.run(["unshare", "-rm", "sh", "-c", 'mount -t tmpfs -o size=64k tmpfs "$0"', str(mnt)],
                       capture_output=True, timeout=30)
    return r.returncode == 0


def test_a_disk_that_fills_during_the_chroma_check(world):
    """The index on a file system with nothing left: Chroma cannot open its database for the check. That was
    reported as a broken database and rebuilt (failing again). Now: exit 1, one line "no space left on ...", the
    index untouched; with space again the same index is used without a rebuild."""
    mnt = world.tmp / "small-disk"
    mnt.mkdir()
    if not _can_mount_tmpfs(mnt):
        pytest.skip("cannot mount a tmpfs in a user namespace here (unshare -rm)")
    out = world.tmp / "out"
    out.mkdir()
    script = ('mount -t tmpfs -o size=2m tmpfs "$MNT" && cp -a "$SRC" "$MNT/" && '
              '(dd if=/dev/zero of="$MNT/fill" bs=4k 2>/dev/null; true) && '
              '"$@" > "$OUT/full.out" 2> "$OUT/full.err"; echo $? > "$OUT/full.rc"; '
              'find "$MNT" -type f -not -name fill -not -name "*.lock" | sort > "$OUT/files.txt"; '
              'rm "$MNT/fill" && "$@" > "$OUT/free.out" 2> "$OUT/free.err"; echo $? > "$OUT/free.rc"')
    env = {**world.env, "AVI_INDEX_ROOT": str(mnt), "MNT": str(mnt), "SRC": str(world.sign), "OUT": str(out)}
    r = subprocess.run(["unshare", "-rm", "sh", "-c", script, "sh"] + AVI + tool(world), env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    full = subprocess.CompletedProcess([], int((out / "full.rc").read_text()), (out / "full.out").read_text(),
                                       (out / "full.err").read_text())
    err = clean(full)
    assert full.returncode == 1 and len(err) == 1, full.stderr
    assert err[0].startswith("avi: error: no space left on tmpfs (mounted at") and "could not be checked" in err[0]
    assert "rebuilding" not in full.stderr
    files = (out / "files.txt").read_text().split()
    assert {Path(f).relative_to(mnt).parts[0] for f in files} == {world.sign.name}, files  # no work directory
    free = subprocess.CompletedProcess([], int((out / "free.rc").read_text()), (out / "free.out").read_text(),
                                       (out / "free.err").read_text())
    assert clean(free, lines=0) == [] and free.returncode == 0, free.stderr
    assert not json.loads(free.stdout)["error"]


# ---------------------------------------------------------------- the damage sweep


SWEEP = ["manifest.json", "captions.jsonl", "captions.partial.jsonl", "transcript.jsonl", "transcript_info.json",
         "tracks.json", "person_faces.npz", "subjects.json", "graph.json", "summary.json", "chroma/chroma.sqlite3",
         "chroma/*/data_level0.bin", "chroma/*/header.bin", "chroma/*/length.bin", "chroma/*/link_lists.bin",
         "memory.sqlite", "shots.json"]
"""Every file of an index, as paths or globs under its directory (test_the_sweep_covers_every_file)."""

WRONG_SHAPE = {".jsonl": '[1, 2]\n{"clip_index": "first"}\n', ".json": "[1, 2]"}
"""Valid JSON of the wrong shape (manifest.json gets a dict missing its fields)."""

KINDS = ("truncate", "zero-page", "garbage", "shape")


def kinds_of(name: str) -> tuple[str, ...]:
    """The damages the sweep gives file ``name``. A JSON or JSONL file of the small index is under one page, so
    ``zero-page`` writes NUL bytes over all of it: unreadable text, as ``garbage`` is, and left out; Chroma's
    ``link_lists.bin`` is empty in an index this small, so only ``garbage`` changes it."""
    if name.endswith("link_lists.bin"):
        return ("garbage",)
    if name.endswith((".json", ".jsonl")):
        return ("truncate", "garbage", "shape")
    return KINDS


def damage(path: Path, kind: str) -> None:
    """Damage one file: ``truncate`` (half), ``zero-page`` (NUL bytes over the first 4 KiB page past the first
    that holds data, or all of a file with no such page),
    ``garbage`` (random bytes of the same length), ``shape`` (valid JSON of the wrong shape; empty for a binary
    file)."""
    data = path.read_bytes()
    if kind == "truncate":
        path.write_bytes(data[:len(data) // 2])
    elif kind == "zero-page":
        b = bytearray(data)
        pages = [at for at in range(4096, len(b), 4096) if any(b[at:at + 4096])]
        if pages:  # the first page past the header that holds data: where Chroma's HNSW puts its first elements
            b[pages[0]:pages[0] + 4096] = bytes(len(b[pages[0]:pages[0] + 4096]))  # varies from build to build
        else:
            b = bytearray(len(b))
        path.write_bytes(bytes(b))
    elif kind == "garbage":
        path.write_bytes(np.random.default_rng(len(data)).integers(0, 256, max(len(data), 64), np.uint8).tobytes())
    elif path.name == "manifest.json":
        path.write_text('{"complete": true, "schema": 2}')
    else:
        path.write_text(WRONG_SHAPE.get(path.suffix, ""))


@pytest.mark.slow
@pytest.mark.parametrize("name, kind", [(name, kind) for name in SWEEP for kind in kinds_of(name)])
def test_damage_sweep(world, name, kind):
    """Each file of the index damaged: a question gives a working answer, with no traceback and at most one
    warning line, and the index is usable afterwards (the next command neither warns nor rebuilds)."""
    targets = sorted(world.sign.glob(name))
    assert targets, f"{name}: no such file in the built index"
    changed = 0
    for target in targets:
        before = target.read_bytes()
        damage(target, kind)
        changed += target.read_bytes() != before
    assert changed, f"{name}: {kind} left every such file as it was (not a case: see kinds_of)"
    r = run(ask(world), world.env)
    clean(r)
    assert r.returncode == 0 and "Answer: EXIT 42" in r.stdout, (r.stdout, r.stderr)
    assert_quiet_again(world.sign)


def test_the_sweep_covers_every_file(built):
    """A file a build writes that the sweep does not damage (a new stage file) fails here: add it to SWEEP."""
    index = built.indexes / built.sign
    covered = {p for name in SWEEP for p in index.glob(name)}
    files = {p for p in index.rglob("*") if p.is_file()}
    assert files - covered == set(), sorted(str(p.relative_to(index)) for p in files - covered)


def test_every_index_file_has_a_check(built):
    """Every file or folder at the top of a built index has a row in avi.index.stage_files.STAGE_FILES (its stage
    and its check): one more stage file is one more row there."""
    from avi.index.stage_files import STAGE_FILES, check_index_files

    index = built.indexes / built.sign
    assert {p.name for p in index.iterdir()} - set(STAGE_FILES) == set()
    assert check_index_files(index, for_questions=False) == {}
