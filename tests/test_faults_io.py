"""Fault injection, files and places (issue 18, items 4, 7, 8, 9): odd frame shapes, read-only places, damaged
timestamp tables, non-finite time ranges, and the modes of what avi writes.

Each CLI case runs the real console scripts with every root in a temporary directory and asserts the exit status,
one stderr line, no traceback, and that nothing already written is lost or changed. Read-only places are made
with ``chmod``; when the tests run as root (who writes through modes), the command runs without the capabilities
that let root ignore file modes (``setpriv --bounding-set=-dac_override,-dac_read_search``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from synth import Spec, Text, make_video

pytestmark = pytest.mark.faults

BIN = Path(__file__).resolve().parent.parent / ".venv" / "bin"
AVI = str(BIN / "avi")
AVI_RUN = str(BIN / "avi-run")
PYTHON = str(BIN / "python")
DROP_DAC = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]


# ---------------------------------------------------------------- helpers


def _env(root: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AVI_")}
    env.update(AVI_HOME=str(root / "home"), AVI_GRAPH_LLM="false", AVI_SUMMARY_LLM="false")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run(argv: list[str], env: dict, *, unprivileged: bool = False, timeout: float = 120,
        cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run a command; ``unprivileged``: so that file modes bind it even when the tests run as root."""
    if unprivileged and os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: read-only folders cannot be made to bind")
        argv = DROP_DAC + argv
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          cwd=cwd)


def one_line(r: subprocess.CompletedProcess) -> str:
    """The single stderr line of a failed command (no traceback, nothing else)."""
    assert "Traceback" not in r.stdout + r.stderr, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].strip(), f"stderr is not one line: {r.stderr!r}"
    return lines[0]


def read_only(path: Path) -> None:
    """Remove write permission from ``path`` and everything under it."""
    for p in [path, *path.rglob("*")] if path.is_dir() else [path]:
        p.chmod(stat.S_IMODE(p.stat().st_mode) & ~0o222)


def writable_again(path: Path) -> None:
    """Undo :func:`read_only` (so pytest can clean up)."""
    if path.exists():
        for p in [path, *path.rglob("*")]:
            p.chmod(stat.S_IMODE(p.stat().st_mode) | 0o200)


def snapshot(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (relative path -> digest)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()} if root.exists() else {}


def files_under(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def damage_timestamps(path: Path) -> Path:
    """Zero every sample delta of the mp4's video time-to-sample table (``stts``): all frames get pts 0 while
    the header keeps the real duration."""
    data = bytearray(path.read_bytes())
    at = data.find(b"stts")
    assert at > 0, "no stts box"
    n = struct.unpack(">I", data[at + 8:at + 12])[0]
    for k in range(n):
        count = struct.unpack(">I", data[at + 12 + 8 * k:at + 16 + 8 * k])[0]
        struct.pack_into(">II", data, at + 12 + 8 * k, count, 0)
    path.write_bytes(bytes(data))
    return path


# ---------------------------------------------------------------- shared videos and one built index


@pytest.fixture(scope="module")
def videos(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("fault-videos")
    sign = Text("EXIT 42", 0.0, 4.0, xy=(20, 60), size=40)
    out = {
        "small": make_video(d / "small.mp4", Spec(duration_s=4.0, size=(320, 240), texts=[sign])),
        "thin": make_video(d / "thin.mp4", Spec(duration_s=4.0, size=(16, 2000))),
        "wide": make_video(d / "wide.mp4", Spec(duration_s=4.0, size=(2000, 16))),
        "tiny": make_video(d / "tiny.mp4", Spec(duration_s=4.0, size=(8, 8))),
        "damaged": damage_timestamps(make_video(d / "damaged.mp4", Spec(duration_s=12.0, size=(320, 240)))),
    }
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory, videos) -> Path:
    """A folder with ``home/indexes`` holding the complete index of the small video (built once)."""
    root = tmp_path_factory.mktemp("built")
    r = run([AVI, "index", str(videos["small"]), "--quiet"], _env(root), timeout=300)
    assert r.returncode == 0, r.stderr
    return root


@pytest.fixture
def copy_of_built(built, tmp_path) -> Path:
    """A private copy of :func:`built` for a test that changes modes."""
    dst = tmp_path / "built"
    shutil.copytree(built, dst)
    yield dst
    writable_again(dst)


# ---------------------------------------------------------------- the CLI table


def _case_thin(videos, root):
    return [AVI, "index", str(videos["thin"]), "--quiet"], {}, "aspect ratio of 125:1"


def _case_wide(videos, root):
    return [AVI, "index", str(videos["wide"]), "--quiet"], {}, "2000x16 pixels"


def _case_tiny(videos, root):
    return [AVI, "index", str(videos["tiny"]), "--quiet"], {}, "too small"


def _case_thin_run(videos, root):
    return [AVI_RUN, "--video", str(videos["thin"]), "--question", "What is shown?", "--quiet"], {}, "aspect"


def _tool(name, args):
    def case(videos, root):
        return ([AVI, "tool", name, "--video", str(videos["small"]), "--args", json.dumps(args), "--quiet"],
                {"AVI_INDEX_ROOT": root / "home" / "indexes"}, "not a finite time")
    return case


BAD_INPUT = {
    "thin-16x2000-index": _case_thin,
    "wide-2000x16-index": _case_wide,
    "tiny-8x8-index": _case_tiny,
    "thin-16x2000-avi-run": _case_thin_run,
    "time-range-nan": _tool("text_extract", {"time_ranges": [[float("nan"), 2]]}),
    "time-range-inf": _tool("object_detect", {"time_ranges": [[0, float("inf")]], "objects": ["person"]}),
    "time-range-minus-inf": _tool("transcript_read", {"time_ranges": [[float("-inf"), 1]]}),
    "time-range-dict-nan": _tool("text_extract", {"time_ranges": {"start": float("nan"), "end": 3}}),
    "time-range-flat-inf": _tool("boundary_detect", {"time_ranges": [float("-inf"), float("inf")],
                                                     "event": "the sign appears"}),
}


@pytest.mark.parametrize("case", list(BAD_INPUT))
def test_bad_input_one_line_exit_2(case, videos, copy_of_built):
    """Odd frame shapes and non-finite time ranges: exit 2, one line, fast, the existing index untouched."""
    argv, extra, needle = BAD_INPUT[case](videos, copy_of_built)
    before = snapshot(copy_of_built / "home" / "indexes")
    t0 = time.perf_counter()
    r = run(argv, _env(copy_of_built, **extra), timeout=120)
    seconds = time.perf_counter() - t0
    line = one_line(r)
    assert r.returncode == 2, (r.returncode, line)
    assert needle in line, line
    assert line.startswith("avi: error:")
    assert seconds < 60, f"{case} took {seconds:.0f} s"  # the thin video took minutes before frame bounds
    assert snapshot(copy_of_built / "home" / "indexes") == before


# ---------------------------------------------------------------- read-only places


def _ro_home(videos, root):
    """AVI_HOME read-only, nothing built yet: avi index."""
    home = root / "home"
    home.mkdir()
    read_only(home)
    return [AVI, "index", str(videos["small"]), "--quiet"], {}, [home], f"{home / 'indexes'}"


def _ro_home_run(videos, root):
    """AVI_HOME read-only: avi-run stops before any work, naming the traces folder."""
    home = root / "home"
    home.mkdir()
    read_only(home)
    return ([AVI_RUN, "--video", str(videos["small"]), "--question", "What does the sign say?", "--quiet"], {},
            [home], f"{home / 'traces'}")


def _ro_traces(videos, root):
    """Only the traces folder is read-only: found before the index is built and the question answered."""
    traces = root / "traces"
    traces.mkdir()
    read_only(traces)
    return ([AVI_RUN, "--video", str(videos["small"]), "--question", "What does the sign say?", "--quiet"],
            {"AVI_TRACE_DIR": traces}, [traces], str(traces))


def _ro_trace_flag(videos, root):
    """--trace into a read-only folder."""
    folder = root / "locked"
    folder.mkdir()
    read_only(folder)
    return ([AVI, "ask", "--video", str(videos["small"]), "--question", "What does the sign say?", "--trace",
             str(folder / "t.json"), "--quiet"], {}, [folder], str(folder))


def _ro_llm_state(videos, root):
    """Traces and indexes elsewhere, but the home holding the saved LLM state is read-only."""
    home = root / "home"
    home.mkdir()
    read_only(home)
    return ([AVI_RUN, "--video", str(videos["small"]), "--question", "What does the sign say?", "--quiet"],
            {"AVI_TRACE_DIR": root / "t", "AVI_INDEX_ROOT": root / "i"}, [home], "AVI_LLM_PREFIX_CACHE=false")


def _ro_batch_out(videos, root):
    """avi batch with --out in a read-only folder: stopped before any video is indexed."""
    manifest = root / "job.jsonl"
    manifest.write_text(json.dumps({"video": str(videos["small"]), "question": "What does the sign say?"}) + "\n")
    folder = root / "results"
    folder.mkdir()
    read_only(folder)
    return [AVI, "batch", str(manifest), "--out", str(folder / "r.jsonl"), "--quiet"], {}, [folder], str(folder)


def _ro_index_root_missing(videos, root):
    """A read-only index root without this video's index: avi tool needs a build and cannot."""
    idx = root / "indexes"
    idx.mkdir()
    read_only(idx)
    return ([AVI, "tool", "text_extract", "--video", str(videos["small"]), "--args", '{"time_ranges": [[0, 2]]}',
             "--quiet"], {"AVI_INDEX_ROOT": idx}, [idx], str(idx))


READ_ONLY = {
    "home-index": _ro_home,
    "home-avi-run": _ro_home_run,
    "traces-folder": _ro_traces,
    "trace-flag": _ro_trace_flag,
    "llm-state": _ro_llm_state,
    "batch-out": _ro_batch_out,
    "index-root-without-index": _ro_index_root_missing,
}


@pytest.mark.parametrize("case", list(READ_ONLY))
def test_read_only_place_found_before_work(case, videos, tmp_path):
    """An unwritable place: exit 2 and one line naming it, before anything is built or asked."""
    root = tmp_path / "case"
    root.mkdir()
    argv, extra, locked, needle = READ_ONLY[case](videos, root)
    try:
        t0 = time.perf_counter()
        r = run(argv, _env(root, **extra), unprivileged=True, timeout=120)
        seconds = time.perf_counter() - t0
        line = one_line(r)
        assert r.returncode == 2, (r.returncode, line)
        assert "internal error" not in line and needle in line, line
        assert seconds < 60, f"{case}: {seconds:.0f} s: the check must come before the work"
        assert not any(files_under(p) for p in locked)
        assert not list(root.rglob("manifest.json")), "an index was built before the check"
    finally:
        writable_again(root)


def test_read_only_index_is_queryable(videos, copy_of_built):
    """A complete index in a read-only index root answers retrieve and perceive tools; nothing in it changes
    and no private copy of its database is left behind."""
    indexes = copy_of_built / "home" / "indexes"
    before = snapshot(indexes)
    read_only(copy_of_built / "home")
    leftovers = set(Path(tempfile.gettempdir()).glob("avi-chroma-ro-*"))
    env = _env(copy_of_built, AVI_INDEX_ROOT=indexes)
    for name, args in (("clip_retrieve", {"query": "exit sign"}), ("text_extract", {"time_ranges": [[0, 2]]})):
        r = run([AVI, "tool", name, "--video", str(videos["small"]), "--args", json.dumps(args), "--quiet", "--json"],
                env, unprivileged=True, timeout=180)
        assert r.returncode == 0, r.stderr
        assert "Traceback" not in r.stderr
        obs = json.loads(r.stdout)
        assert not obs["error"], obs["text"]
        if name == "clip_retrieve":
            assert "EXIT 42" in obs["text"]
    assert snapshot(indexes) == before
    assert set(Path(tempfile.gettempdir()).glob("avi-chroma-ro-*")) == leftovers


# ---------------------------------------------------------------- damaged timestamp tables


def test_damaged_timestamps_record_failed_clips(videos, tmp_path):
    """All frames with pts 0 in a 12 s mp4: the clips without frames are failed in the manifest and said on
    stderr (one warning line), not captioned 'No frames could be decoded' with no failed clip."""
    r = run([AVI, "index", str(videos["damaged"]), "--quiet", "--json"], _env(tmp_path), timeout=300)
    assert r.returncode == 0, r.stderr
    line = one_line(r)
    assert line.startswith("avi: warning:") and "2 of 3 clips failed" in line, line
    assert "no frames could be decoded" in line
    out = json.loads(r.stdout)
    assert out["failed_clips"] == 2
    manifest = json.loads((Path(out["index_dir"]) / "manifest.json").read_text())
    assert manifest["failed_clips"] == [1, 2] and manifest["counts"]["failed_clips"] == 2


def test_perception_caption_without_frames_is_failed():
    from avi.backends.captioner import NO_FRAMES, PerceptionCaptioner
    from avi.video.clips import Clip

    cap = PerceptionCaptioner(ocr=None, detector=None).caption(Clip(3, 15.0, 20.0), [])
    assert cap.data["failed"] == NO_FRAMES and cap.data["frames_s"] == []


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), 1e999])
def test_parse_time_rejects_non_finite(value):
    from avi.video.timecode import parse_time

    with pytest.raises(ValueError, match="not a finite time"):
        parse_time(value)


@pytest.mark.parametrize("bad", [[float("nan"), 5.0], [0.0, float("inf")], [float("-inf"), float("inf")]])
def test_clip_ranges_rejects_non_finite(bad):
    """Called directly (not through argument validation), a NaN or infinite bound is still refused, not widened
    to the whole video."""
    from types import SimpleNamespace

    from avi.tools.base import ToolContext, clip_ranges

    ctx = ToolContext(settings=None, index=None, video=SimpleNamespace(info=SimpleNamespace(duration_s=20.0)),
                      backends=None)
    with pytest.raises(ValueError, match="not a finite time range"):
        clip_ranges(ctx, [bad])


# ---------------------------------------------------------------- frame sizes before any model


@pytest.mark.parametrize("size, bad", [
    ((16, 2000), "aspect"), ((2000, 16), "aspect"), ((8, 8), "too small"), ((15, 100), "too small"),
    ((0, 10), "no size"), ((1280, 128), None), ((16, 16), None), ((1920, 1080), None), ((1080, 1920), None),
])
def test_frame_shape_problem(size, bad):
    from avi.video.decode import frame_shape_problem

    got = frame_shape_problem(*size)
    assert (got is None) if bad is None else (bad in got), got


def test_face_and_person_detector_bounds_both_sides():
    """The HOG/Haar detector upsamples a short side towards 480 px only while the long side stays within
    ``max_side``: a 10x1280 frame (a 16x2000 video after decoding) is no longer blown up to 61440x480."""
    from avi.backends.detector import OpenCvDetector, bounded_upscale
    from avi.video.decode import Frame

    assert bounded_upscale(360, 640, 480, 1920) == pytest.approx(480 / 360)  # normal frames: as before
    assert bounded_upscale(720, 1280, 480, 1920) == 1.0
    assert bounded_upscale(1280, 10, 480, 1920) == 1.5
    det = OpenCvDetector()
    shapes = []
    real_hog, real_face = det._hog.detectMultiScale, det._face.detectMultiScale3

    def hog(gray, **kw):
        shapes.append(gray.shape)
        return real_hog(gray, **kw)

    def face(gray, **kw):
        shapes.append(gray.shape)
        return real_face(gray, **kw)

    det._hog = type("H", (), {"detectMultiScale": staticmethod(hog)})()
    det._face = type("F", (), {"detectMultiScale3": staticmethod(face)})()
    t0 = time.perf_counter()
    for h, w in ((1280, 10), (10, 1280), (1280, 128)):
        det.detect(Frame(0.0, np.zeros((h, w, 3), np.uint8)), ["person", "face"])
    assert time.perf_counter() - t0 < 3.0
    assert shapes and all(max(s) <= 1920 for s in shapes), shapes


# ---------------------------------------------------------------- private files


def test_what_avi_writes_is_private(videos, tmp_path):
    """Under a umask of 022 every file avi index writes is 0600 and every folder 0700."""
    r = run(["sh", "-c", 'umask 022 && exec "$@"', "sh", AVI, "index", str(videos["small"]), "--quiet"],
            _env(tmp_path), timeout=300)
    assert r.returncode == 0, r.stderr
    home = tmp_path / "home"
    paths = [home, *home.rglob("*")]
    assert len(paths) > 5
    loose = [(str(p), oct(stat.S_IMODE(p.stat().st_mode))) for p in paths
             if stat.S_IMODE(p.stat().st_mode) & 0o077]
    assert not loose, loose


def test_private_files_false_keeps_the_umask(videos, tmp_path):
    r = run(["sh", "-c", 'umask 022 && exec "$@"', "sh", AVI, "index", str(videos["small"]), "--quiet"],
            _env(tmp_path, AVI_PRIVATE_FILES="false"), timeout=300)
    assert r.returncode == 0, r.stderr
    manifest = next((tmp_path / "home").rglob("manifest.json"))
    assert stat.S_IMODE(manifest.stat().st_mode) == 0o644
    assert stat.S_IMODE(manifest.parent.stat().st_mode) == 0o755


_FAKE_ASK = textwrap.dedent('''
    """avi-run with the agent replaced by a canned answer: the trace is written by the real code."""
    import sys
    from types import SimpleNamespace

    import avi.backends
    import avi.pipeline
    from avi.trace import Trace

    class NoBackends:
        def __init__(self, settings):
            pass

        def close(self):
            pass

    def fake_ask(video, question, settings, backends, **kw):
        trace = Trace(question=question, video=str(video), video_sha256="0" * 64, settings={"frame_budget": 0})
        return SimpleNamespace(answer="EXIT 42", choice=None, interval=None, choices=None, order=None,
                               answer_type="text", note=None, cannot_tell=False, choice_method=None, rules=[], evidence=[],
                               trace=trace)

    avi.backends.Backends = NoBackends
    avi.pipeline.ask = fake_ask
    if sys.argv[1] == "fail-write":
        def refuse(self, path):
            raise PermissionError(13, "Permission denied", str(path))
        Trace.write = refuse
    from avi.cli import run_main
    run_main(sys.argv[2:])
''')


@pytest.mark.parametrize("mode", ["ok", "fail-write"])
def test_trace_is_private_and_an_answer_is_never_lost(mode, videos, tmp_path):
    """The trace file is 0600; when it cannot be written after the run (the folder was fine before), the answer
    is still printed, and the run ends with one line naming the file and exit 1."""
    script = tmp_path / "fake_ask.py"
    script.write_text(_FAKE_ASK)
    trace = tmp_path / "traces" / "t.json"
    r = run(["sh", "-c", 'umask 022 && exec "$@"', "sh", PYTHON, str(script), mode, "--video", str(videos["small"]),
             "--question", "What does the sign say?", "--trace", str(trace), "--quiet"], _env(tmp_path), timeout=120)
    assert "Answer: EXIT 42" in r.stdout, r.stdout + r.stderr
    if mode == "ok":
        assert r.returncode == 0, r.stderr
        assert stat.S_IMODE(trace.stat().st_mode) == 0o600
        assert stat.S_IMODE(trace.parent.stat().st_mode) == 0o700
    else:
        line = one_line(r)
        assert r.returncode == 1 and str(trace) in line and "permission denied" in line, line
        assert "Trace: not written" in r.stdout


def test_unwritable_reason(tmp_path):
    from avi.errors import InputError
    from avi.places import check_writable, unwritable_reason

    assert unwritable_reason(tmp_path / "a" / "b") is None  # judged by the nearest existing folder
    f = tmp_path / "file"
    f.write_text("x")
    assert "is a file" in unwritable_reason(f / "sub")
    with pytest.raises(InputError, match="cannot write the trace to .*file/sub"):
        check_writable(f / "sub", "the trace")


def test_apply_private_umask_round_trip():
    """The umask goes to the starting one plus 077 and back, whatever the order of calls."""
    script = ("import os; os.umask(0o022); from avi.places import apply_private_umask as a; "
              "print(oct(a(True)), oct(a(True)), oct(a(False)), oct(os.umask(0)))")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert r.stdout.split() == ["0o77", "0o77", "0o22", "0o22"], r.stdout + r.stderr
