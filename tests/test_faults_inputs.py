"""Fault injection, issue 39 (item 3): the bad inputs that still ended as "internal error", a full disk inside
Chroma, an invisible question, a results file that is an input, and a damaged Chroma database.

Each case runs the real command (``python -m avi.cli ...``) as a subprocess with its AVI_* roots in a temporary
directory and asserts the exit status, exactly one stderr line naming the cause (``avi: error: ...``; for the
damaged database, which is rebuilt, the one warning line saying why), no traceback, and that nothing it must not
touch changed. The full disk is a 120 kB tmpfs mounted over the index root in a private mount namespace
(``unshare -rm``); the case is skipped where user namespaces are not allowed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest
from synth import Spec, Text, make_video

pytestmark = pytest.mark.faults

REPO = Path(__file__).resolve().parent.parent
AVI = [sys.executable, "-m", "avi.cli"]
QUESTION = "What does the sign say?"


@dataclass
class World:
    """A case's temporary folder, the shared video, and the folder holding its built index (``home``)."""

    tmp: Path
    video: Path
    built: Path

    def env(self, **extra: str) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AVI_")}
        env.update(AVI_HOME=str(self.tmp / "home"), AVI_GRAPH_LLM="false", AVI_SUMMARY_LLM="false",
                   AVI_TRANSCRIPT="off", PYTHONPATH=str(REPO), AVI_LLM_BASE_URL="http://127.0.0.1:9/v1")
        env.update(extra)
        return env

    def copy_built(self) -> Path:
        """A copy of the built index root for this case (``<tmp>/home/indexes``)."""
        dst = self.tmp / "home" / "indexes"
        shutil.copytree(self.built, dst)
        return dst


@dataclass
class Run:
    argv: list
    env: dict = field(default_factory=dict)
    prefix: list = field(default_factory=list)
    check: Callable[[subprocess.CompletedProcess, World], None] | None = None


@dataclass
class Case:
    """One fault: ``setup(world) -> Run``, the exit status and phrases of the one stderr line."""

    id: str
    setup: Callable[[World], Run]
    code: int
    needles: tuple = ()


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """The video and its index (captions only, no transcript), built once by ``avi index``."""
    root = tmp_path_factory.mktemp("faults-inputs")
    video = make_video(root / "sign.mp4", Spec(duration_s=8, texts=[Text("EXIT 42", 0, 8)]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AVI_")}
    env.update(AVI_HOME=str(root / "home"), AVI_GRAPH_LLM="false", AVI_SUMMARY_LLM="false", AVI_TRANSCRIPT="off",
               PYTHONPATH=str(REPO))
    r = subprocess.run(AVI + ["index", str(video), "--quiet"], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return video, root / "home" / "indexes"


@pytest.fixture
def world(shared, tmp_path):
    return World(tmp_path, *shared)


def ask(w: World, question: str = QUESTION, *extra: str, video: str | Path | None = None) -> list:
    return ["ask", "--video", str(video or w.video), "--question", question, "--quiet", *extra]


# ---------------------------------------------------------------- the cases


def _config_not_utf8(w):
    cfg = w.tmp / "avi.toml"
    cfg.write_bytes(b"fps = 2\n# caf\xe9 au lait\n")
    return Run(["config", "show", "--config", str(cfg)])


def _serve_env_not_json(w):
    return Run(["serve", "--dry-run"], env={"AVI_SERVE": "{servers: [oops"})


def _symlink_loop(w):
    (w.tmp / "a.mp4").symlink_to(w.tmp / "b.mp4")
    (w.tmp / "b.mp4").symlink_to(w.tmp / "a.mp4")
    return Run(ask(w, video=w.tmp / "a.mp4"))


def _name_too_long(w):
    return Run(ask(w, video=w.tmp / ("v" * 300 + ".mp4")))


def _name_too_long_index(w):
    return Run(["index", str(w.tmp / ("v" * 300 + ".mp4")), "--quiet"])


def _ipv6_url(w):
    return Run(ask(w, QUESTION, "--llm-url", "http://[::1/v1"))


def _args_nested(w):
    return Run(["tool", "text_extract", "--video", str(w.video), "--args", "[" * 60_000 + "]" * 60_000, "--quiet"])


def _zero_width_question(w):
    return Run(ask(w, "\u200b\u200c\u200d\u2060\ufeff \u3164"))


def _out_is_the_manifest(w):
    manifest = w.tmp / "job.jsonl"
    text = json.dumps({"video": str(w.video), "question": QUESTION}) + "\n"
    manifest.write_text(text)

    def check(r, w):
        assert manifest.read_text() == text and not (w.tmp / "job.jsonl.job.json").exists()
        assert not (w.tmp / "home").exists(), "work was done before the refusal"
    return Run(["batch", str(manifest), "--out", str(manifest), "--quiet"], check=check)


def _out_is_the_questions_file(w):
    folder = w.tmp / "videos"
    folder.mkdir()
    (folder / "sign.mp4").symlink_to(w.video)
    qfile = w.tmp / "questions.jsonl"
    qfile.write_text(json.dumps({"question": QUESTION}) + "\n")
    return Run(["batch", str(folder), "--questions", str(qfile), "--out", str(qfile), "--quiet"],
               check=lambda r, w: qfile.read_text().count("\n") == 1 or pytest.fail("questions file written"))


def _can_mount_tmpfs(mnt: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    r = subprocess.run(["unshare", "-rm", "sh", "-c", 'mount -t tmpfs -o size=64k tmpfs "$0"', str(mnt)],
                       capture_output=True, timeout=30)
    return r.returncode == 0


def _full_disk(w):
    mnt = w.tmp / "small-disk"
    mnt.mkdir()
    if not _can_mount_tmpfs(mnt):
        pytest.skip("cannot mount a tmpfs in a user namespace here (unshare -rm)")
    prefix = ["unshare", "-rm", "sh", "-c", 'mount -t tmpfs -o size=120k tmpfs "$0" && exec "$@"', str(mnt)]
    return Run(["index", str(w.video), "--quiet"], env={"AVI_INDEX_ROOT": str(mnt)}, prefix=prefix)


def _truncate_chroma(indexes: Path) -> Path:
    index = next(p for p in indexes.iterdir() if (p / "manifest.json").exists())
    db = index / "chroma" / "chroma.sqlite3"
    with open(db, "r+b") as f:
        f.truncate(db.stat().st_size // 2)
    return index


def _damaged_chroma_index(w):
    index = _truncate_chroma(w.copy_built())
    captions = (index / "captions.jsonl").read_bytes()

    def check(r, w):
        manifest = json.loads((index / "manifest.json").read_text())
        assert "database disk image is malformed" in manifest["rebuilt_from_broken"]
        assert manifest["resumed"]["clips_captioned_in_last_run"] == 0 and manifest["reused"]["salvaged"]
        assert (index / "captions.jsonl").read_bytes() == captions
        again = subprocess.run(AVI + ["index", str(w.video), "--quiet"], env=w.env(), capture_output=True,
                               text=True, timeout=300)
        assert again.returncode == 0 and again.stderr == "", again.stderr  # rebuilt: it passes its check now
    return Run(["index", str(w.video), "--quiet"], check=check)


def _damaged_chroma_first_question(w):
    _truncate_chroma(w.copy_built())

    def check(r, w):
        assert "EXIT 42" in r.stdout, r.stdout
    return Run(["tool", "clip_retrieve", "--video", str(w.video), "--args", '{"query": "exit sign"}', "--quiet"],
               check=check)


CASES = [
    Case("config-file-not-utf8", _config_not_utf8, 2, ("avi.toml is not UTF-8 text", "byte 0xe9 at offset 13")),
    Case("avi-serve-not-json", _serve_env_not_json, 2, ("$AVI_SERVE is not valid JSON", "'serve'")),
    Case("video-symlink-loop", _symlink_loop, 2, ("a.mp4 cannot be opened", "symbolic link loop")),
    Case("video-name-over-255-bytes", _name_too_long, 2, ("name is 304 bytes long", "allows 255")),
    Case("index-name-over-255-bytes", _name_too_long_index, 2, ("name is 304 bytes long",)),
    Case("llm-url-malformed-ipv6", _ipv6_url, 2, ("'llm_base_url'", "http://[::1/v1", "Invalid IPv6 URL")),
    Case("tool-args-nested-60000", _args_nested, 2, ("--args is nested too deeply",)),
    Case("question-only-zero-width", _zero_width_question, 2, ("the question is empty", "no visible character")),
    Case("batch-out-is-the-manifest", _out_is_the_manifest, 2, ("is the manifest", "choose another --out")),
    Case("batch-out-is-the-questions-file", _out_is_the_questions_file, 2, ("is the questions file",)),
    # the first stage to write a database (the perception memory's SQLite file, then Chroma) meets the full disk
    Case("index-disk-full", _full_disk, 1, ("no space left on tmpfs (mounted at", "small-disk",
                                            "could not be written", "the finished stages are kept")),
    Case("chroma-damaged-avi-index-rebuilds", _damaged_chroma_index, 0, ("database disk image is malformed",
                                                                         "rebuilding it")),
    Case("chroma-damaged-first-question-rebuilds", _damaged_chroma_first_question, 0,
         ("database disk image is malformed", "rebuilding it")),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_fault(case: Case, world: World):
    run = case.setup(world)
    t0 = time.monotonic()
    r = subprocess.run(run.prefix + AVI + run.argv, env=world.env(**run.env), capture_output=True, timeout=600,
                       cwd=world.tmp, stdin=subprocess.DEVNULL)
    r = subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode(errors="replace"),
                                    r.stderr.decode(errors="replace"))
    assert "Traceback" not in r.stderr + r.stdout and "internal error" not in r.stderr, r.stderr[-3000:]
    err = r.stderr.splitlines()
    assert len(err) == 1, f"stderr is not one line: {r.stderr[-2000:]!r}"
    assert r.returncode == case.code, err[0]
    if case.code:
        assert err[0].startswith("avi: error:"), err[0]
    for needle in case.needles:
        assert needle in err[0], err[0]
    assert time.monotonic() - t0 < 300
    if run.check is not None:
        run.check(r, world)
