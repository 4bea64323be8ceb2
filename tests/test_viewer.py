"""``avi view``: the self-contained HTML trace viewer (avi/viewer.py)."""

from __future__ import annotations

import base64
import io
import json
import re
import shutil
import subprocess

import numpy as np
import pytest
from PIL import Image

from avi.trace import Trace
from avi.viewer import argument_ranges, render_trace_html, thin_uniform

EVIL = "<script>alert('x')</script>"


def _trace(video) -> dict:
    """A hand-made trace over the sign video (640x360, 20 s): retrieve, object_detect, text_extract, answer."""
    t = Trace(question="What number is on the EXIT sign? <b>bold?</b>", video=str(video), profile="cpu",
              llm={"model": "test-model", "base_url": "http://127.0.0.1:1/v1"}, settings={"fps": 2.0})
    t.add(iteration=1, phase="retrieve", kind="tool_call", thought=f"look for the sign {EVIL}",
          tool="clip_retrieve", arguments={"query": "exit sign"}, observation="clip 1 (5.0s–10.0s): text EXIT 42",
          llm_seconds=1.5, tool_seconds=0.1, prompt_tokens=100, completion_tokens=10)
    t.add(iteration=1, phase="retrieve", kind="stage_switch", thought="[STAGE_SWITCH: perceive]",
          switch_to="perceive", notes=["entered perceive"])
    t.add(iteration=2, phase="perceive", kind="tool_call", thought="count the squares", tool="object_detect",
          arguments={"time_ranges": [[1.5, 2.5]], "objects": ["square"]},
          observation="object_detect looked at the frames at 1.5s, 2.0s, 2.5s. square: 1 found at 2.0s",
          observation_data={"detections": [{"label": "square", "score": 0.9, "box": [160.0, 240.0, 240.0, 320.0],
                                            "t_s": 2.0, "frame_size": [640, 360]}]},
          frames_s=[1.5, 2.0, 2.5], llm_seconds=2.0, tool_seconds=0.3, prompt_tokens=200, completion_tokens=20)
    t.add(iteration=3, phase="perceive", kind="tool_call", thought="read the sign", tool="text_extract",
          arguments={"time_ranges": [[4.0, 8.0]]},
          observation='text_extract looked at 9 frames. Text found:\n"EXIT 42" at 4.0s–8.0s & <more>',
          observation_data={"texts": [{"text": "EXIT 42", "first_s": 4.0, "last_s": 8.0, "frames": 9,
                                       "score": 0.99, "box": [50.0, 130.0, 400.0, 220.0]}],
                            "lines": [{"text": "EXIT 42", "score": 0.99, "box": [50.0, 130.0, 400.0, 220.0],
                                       "t_s": x / 2} for x in range(8, 17)]},
          frames_s=[x / 2 for x in range(8, 17)], llm_seconds=2.5, tool_seconds=0.5, prompt_tokens=300,
          completion_tokens=30, notes=["repaired arguments"])
    t.add(iteration=4, phase="review", kind="answer", thought="**Answer:** 42", answer="42 <sign>")
    t.answer = "42 <sign>"
    t.evidence = [[4.0, 8.0]]
    t.interval = [4.0, 9.0]
    t.iterations = 4
    t.seconds = {"agent": 6.5, "total": 7.0}
    return t.to_dict()


def _decode_imgs(page: str) -> list[Image.Image]:
    uris = re.findall(r'<img src="data:image/jpeg;base64,([A-Za-z0-9+/=]+)"', page)
    return [Image.open(io.BytesIO(base64.b64decode(u))).convert("RGB") for u in uris]


def _assert_offline(page: str) -> None:
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.I)
    assert not re.search(r"url\(\s*['\"]?\s*(https?:)?//", page, re.I)
    assert "@import" not in page and "<script" not in page.lower().replace("&lt;script", "")
    assert "<link" not in page.lower()


def test_page_contents_escaping_thumbnails(tmp_path, sign_video):
    trace = _trace(sign_video)
    out = render_trace_html(trace, tmp_path / "sub" / "t.html")
    page = out.read_text(encoding="utf-8")
    _assert_offline(page)
    # question, answer, observations and thoughts: escaped, never raw
    assert "What number is on the EXIT sign? &lt;b&gt;bold?&lt;/b&gt;" in page
    assert "42 &lt;sign&gt;" in page and "42 <sign>" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page and EVIL not in page
    assert "&amp; &lt;more&gt;" in page
    assert "repaired arguments" in page and "test-model" in page and "cpu" in page
    # totals: 5 steps, 3 tool calls, 12 distinct frames, 660 tokens
    assert ">steps<b>5</b>" in page and ">tool calls<b>3</b>" in page
    assert "12 distinct / 12" in page and "660 (600 + 60)" in page
    # timeline: one row per tool call, argument ranges, frame ticks, evidence and interval rows
    svg = re.search(r"<svg class=\"timeline\".*?</svg>", page, re.S).group(0)
    assert svg.count('<a href="#step-') == 3 and "evidence" in svg and "answer interval" in svg
    assert "1.5s–2.5s requested" in svg and "looked at 2.00s" in svg
    # one thumbnail per distinct frame (12 <= 48), 320 px long side, as data URIs
    imgs = _decode_imgs(page)
    assert page.count("<img ") == 12 == len(imgs)
    assert all(im.size == (320, 180) for im in imgs)
    # the OCR box (50,130)-(400,220) in 640x360 pixels is drawn yellow at half scale on the 4.0 s frame
    im = np.asarray(imgs[3]).astype(int)  # frames: 1.5, 2.0, 2.5, 4.0, ...
    r, g, b = im[65, 100]
    assert r > 180 and g > 150 and b < 110, (r, g, b)
    r0, g0, b0 = np.asarray(imgs[0]).astype(int)[65, 100]  # 1.5 s: no OCR box there, navy background
    assert r0 < 60 and b0 > 80, (r0, g0, b0)
    assert "frame-4.000" in page and 'href="#frame-4.000"' in page


def test_thumbnail_cap_and_detection_box(tmp_path, sign_video):
    trace = _trace(sign_video)
    page = render_trace_html(trace, tmp_path / "t.html", max_thumbs=4).read_text()
    imgs = _decode_imgs(page)
    assert len(imgs) == 4
    assert "4 shown of 12" in page


def test_missing_video_still_renders(tmp_path, sign_video):
    trace = _trace(sign_video)
    trace["video"] = str(tmp_path / "gone.mp4")
    page = render_trace_html(trace, tmp_path / "t.html").read_text()
    assert "Thumbnails unavailable" in page and "<img " not in page
    assert "count the squares" in page and "<svg" in page
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"not a video at all")
    page = render_trace_html(trace, tmp_path / "t2.html", video=bad).read_text()
    assert "Thumbnails unavailable" in page and "<img " not in page


def test_helpers():
    assert thin_uniform([1, 2, 3, 4, 5], 3) == [1, 3, 5]
    assert thin_uniform([1, 2], 5) == [1, 2] and thin_uniform([1, 2, 3], 0) == []
    assert argument_ranges({"time_ranges": [[5, 1], [2, 3], "x"], "query": "q"}) == [[1.0, 5.0], [2.0, 3.0]]
    assert argument_ranges({"time_range": [3, 4]}) == [[3.0, 4.0]]
    assert argument_ranges(None) == []


def test_cli_view(tmp_path, sign_video, capsys):
    from avi.cli import main

    path = tmp_path / "trace.json"
    path.write_text(json.dumps(_trace(sign_video)))
    with pytest.raises(SystemExit) as exc:
        main(["view", str(path)])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "trace.html")
    assert (tmp_path / "trace.html").read_text().count("<img ") == 12
    with pytest.raises(SystemExit) as exc:
        main(["view", str(path), "--out", str(tmp_path / "o" / "x.html"), "--max-thumbs", "2"])
    assert exc.value.code == 0 and (tmp_path / "o" / "x.html").read_text().count("<img ") == 2
    capsys.readouterr()
    for content in (None, "{not json", "[1, 2]"):
        bad = tmp_path / "bad.json"
        if content is None:
            bad.unlink(missing_ok=True)
        else:
            bad.write_text(content)
        with pytest.raises(SystemExit) as exc:
            main(["view", str(bad)])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith("avi: error: ") and err.count("\n") == 1, err


def test_in_headless_chromium(tmp_path, sign_video):
    """The page renders in a real browser: the DOM has the question, the screenshot is not blank."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("chromium is not on PATH (scripts/setup.sh --test installs it: apt-get install chromium)")
    out = render_trace_html(_trace(sign_video), tmp_path / "page.html")
    base = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
            f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1280,2000"]
    dom = subprocess.run(base + ["--dump-dom", out.as_uri()], capture_output=True, text=True, timeout=60)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "What number is on the EXIT sign?" in dom.stdout
    assert dom.stdout.count("<img ") == 12 and "<svg" in dom.stdout
    shot = tmp_path / "shot.png"
    run = subprocess.run(base + [f"--screenshot={shot}", out.as_uri()], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    px = np.asarray(Image.open(shot).convert("L"), dtype=float)
    assert px.shape == (2000, 1280)
    print(f"screenshot grey std {px.std():.1f}, mean {px.mean():.1f}, dark pixels {(px < 128).mean():.3f}")
    assert px.std() > 20 and 0.01 < (px < 128).mean() < 0.6
