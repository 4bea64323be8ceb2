"""User errors through the real console scripts: one stderr line, a non-zero status, no traceback.

Every command runs as a subprocess of the installed entry points with the
index, trace and cache roots in a temporary directory. None of these cases may
build an index, so the index root must stay empty.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

BIN = Path(__file__).resolve().parent.parent / ".venv" / "bin"
AVI_RUN = str(BIN / "avi-run")
AVI = str(BIN / "avi")
QUESTION = "What does the sign say?"


@pytest.fixture
def cli(tmp_path):
    """``cli(argv, timeout=60) -> CompletedProcess`` with AVI_* roots in tmp_path; ``cli.index_root``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AVI_")}
    env.update(AVI_INDEX_ROOT=str(tmp_path / "indexes"), AVI_TRACE_DIR=str(tmp_path / "traces"),
               AVI_HOME=str(tmp_path / "home"), AVI_GRAPH_LLM="false", AVI_SUMMARY_LLM="false")

    def run(argv, timeout=60):
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)

    run.index_root = tmp_path / "indexes"
    return run


def assert_one_line_error(r: subprocess.CompletedProcess) -> str:
    assert r.returncode != 0, r
    assert "Traceback" not in r.stdout and "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].strip(), f"stderr is not one line: {r.stderr!r}"
    return lines[0]


def assert_no_index(root: Path) -> None:
    assert not root.exists() or not any(root.iterdir()), list(root.iterdir())


def _zero_frame_video(path: Path, codec: str) -> Path:
    av = pytest.importorskip("av")
    try:
        with av.open(str(path), "w") as out:
            stream = out.add_stream(codec, rate=10)
            stream.width, stream.height = 64, 64
            stream.pix_fmt = "yuv420p"
            if hasattr(out, "start_encoding"):
                out.start_encoding()  # write the header though no frame follows
            for packet in stream.encode():
                out.mux(packet)
    except Exception as exc:  # noqa: BLE001 - depends on the FFmpeg build
        pytest.skip(f"PyAV cannot write an empty {path.suffix} with {codec}: {exc}")
    if not path.exists() or path.stat().st_size == 0:
        pytest.skip(f"PyAV wrote no {path.suffix} container without frames")
    return path


# ---------------------------------------------------------------- bad videos


def _bad_video(kind: str, tmp_path: Path) -> Path:
    if kind == "missing":
        return tmp_path / "nope.mp4"
    if kind == "directory":
        d = tmp_path / "folder.mp4"
        d.mkdir()
        return d
    if kind == "text":
        p = tmp_path / "notes.mp4"
        p.write_text("this is not a video\n" * 20)
        return p
    if kind == "empty":
        p = tmp_path / "empty.mp4"
        p.touch()
        return p
    if kind == "zero-frames-mp4":
        return _zero_frame_video(tmp_path / "zero.mp4", "libx264")
    if kind == "zero-frames-mkv":
        return _zero_frame_video(tmp_path / "zero.mkv", "libx264")
    if kind == "zero-frames-avi":
        return _zero_frame_video(tmp_path / "zero.avi", "mpeg4")
    raise AssertionError(kind)


BAD_VIDEOS = {
    "missing": "not found",
    "directory": "not a file",
    "text": "not a readable video",
    "empty": "empty",
    "zero-frames-mp4": "",
    "zero-frames-mkv": "",
    "zero-frames-avi": "",
}


@pytest.mark.parametrize("kind", list(BAD_VIDEOS))
def test_avi_run_bad_video(cli, tmp_path, kind):
    video = _bad_video(kind, tmp_path)
    r = cli([AVI_RUN, "--video", str(video), "--question", QUESTION])
    line = assert_one_line_error(r)
    assert r.returncode == 2, line
    assert line.startswith("avi: error:")
    assert BAD_VIDEOS[kind] in line
    assert video.name in line
    assert_no_index(cli.index_root)


@pytest.mark.parametrize("kind", ["missing", "text"])
def test_avi_index_bad_video(cli, tmp_path, kind):
    video = _bad_video(kind, tmp_path)
    r = cli([AVI, "index", str(video), "--quiet"])
    line = assert_one_line_error(r)
    assert r.returncode == 2 and BAD_VIDEOS[kind] in line
    assert_no_index(cli.index_root)


# ---------------------------------------------------------------- bad questions and options


@pytest.mark.parametrize("argv_tail, needle", [
    (["--question", "   "], "question is empty"),
    (["--question", QUESTION, "--max-iterations", "0"], "--max-iterations"),
])
def test_avi_run_bad_arguments(cli, sign_video, argv_tail, needle):
    r = cli([AVI_RUN, "--video", str(sign_video), *argv_tail])
    line = assert_one_line_error(r)
    assert r.returncode == 2 and needle in line
    assert_no_index(cli.index_root)


def test_avi_ask_empty_question(cli, sign_video):
    r = cli([AVI, "ask", "--video", str(sign_video), "--question", ""])
    line = assert_one_line_error(r)
    assert r.returncode == 2 and "question is empty" in line
    assert_no_index(cli.index_root)


def test_unreachable_llm_fails_fast_before_indexing(cli, sign_video):
    t0 = time.perf_counter()
    r = cli([AVI_RUN, "--video", str(sign_video), "--question", QUESTION, "--llm-url", "http://127.0.0.1:9/v1"])
    elapsed = time.perf_counter() - t0
    line = assert_one_line_error(r)
    assert r.returncode == 3, line
    assert "127.0.0.1:9" in line
    assert elapsed < 30, f"took {elapsed:.1f}s to notice the LLM is unreachable"
    assert_no_index(cli.index_root)


@pytest.mark.parametrize("argv", [
    [AVI_RUN, "--video", "v.mp4", "--question", "q", "--bogus"],
    [AVI_RUN],
    [AVI, "frobnicate"],
    [AVI, "ask", "--video", "v.mp4", "--question", "q", "--max-iterations", "many"],
    [AVI, "weights", "polish"],
])
def test_argparse_errors_are_one_line(cli, argv):
    r = cli(argv)
    line = assert_one_line_error(r)
    assert r.returncode == 2
    assert "error:" in line and "(see --help)" in line
    assert r.stdout == ""


# ---------------------------------------------------------------- help and weights


def test_avi_run_help(cli):
    r = cli([AVI_RUN, "--help"])
    assert r.returncode == 0, r.stderr
    assert "--video" in r.stdout and "--question" in r.stdout
    assert "--llm-url" in r.stdout and "--max-iterations" in r.stdout


def test_avi_help_lists_subcommands(cli):
    r = cli([AVI, "--help"])
    assert r.returncode == 0, r.stderr
    for sub in ("ask", "index", "weights", "doctor", "serve"):
        assert sub in r.stdout
    r = cli([AVI, "ask", "--help"])
    assert r.returncode == 0 and "--video" in r.stdout and "--question" in r.stdout


def test_weights_list(cli):
    r = cli([AVI, "weights", "list"])
    assert r.returncode == 0, r.stderr
    rows = {line.split()[0]: line for line in r.stdout.splitlines() if line.strip()}
    assert "qwen2.5-coder-1.5b-instruct" in rows
    assert "all-minilm-l6-v2" in rows and "present" in rows["all-minilm-l6-v2"]


def test_weights_verify_present(cli):
    r = cli([AVI, "weights", "verify", "all-minilm-l6-v2"])
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ok    all-minilm-l6-v2")
    assert "Traceback" not in r.stderr


def test_weights_verify_unknown(cli):
    r = cli([AVI, "weights", "verify", "nosuch"])
    line = assert_one_line_error(r)
    assert r.returncode == 2
    assert "nosuch" in line and "all-minilm-l6-v2" in line  # names the known entries


def test_avi_tool_list(cli):
    r = cli([AVI, "tool", "list"])
    assert r.returncode == 0, r.stderr
    assert "text_extract(time_ranges" in r.stdout and "clip_retrieve(query" in r.stdout


@pytest.mark.parametrize("argv_tail, needle", [
    (["nope", "--video", "x.mp4"], "no tool named 'nope'"),
    (["text_extract"], "--video is required"),
    (["text_extract", "--video", "x.mp4", "--args", "[1,"], "--args is not valid JSON"),
    (["text_extract", "--video", "x.mp4", "--args", "[1]"], "--args must be a JSON object"),
])
def test_avi_tool_bad_input(cli, argv_tail, needle):
    line = assert_one_line_error(cli([AVI, "tool", *argv_tail]))
    assert needle in line


def test_avi_tool_runs_a_tool_on_a_video(cli, sign_video):
    r = cli([AVI, "tool", "text_extract", "--video", str(sign_video), "--args", '{"time_ranges": [[5, 10]]}',
             "--json", "--quiet"], timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["tool"] == "text_extract" and not out["error"] and out["frames"] > 0
    assert any(t["text"] == "EXIT 42" for t in out["data"]["texts"])
    line = assert_one_line_error(cli([AVI, "tool", "text_extract", "--video", str(sign_video), "--args",
                                      '{"time_ranges": [[900, 990]]}', "--quiet"], timeout=300))
    assert "no time range overlaps the video" in line
