"""VLM captioner and frame analyzer over HTTP: ChatClient + OpenAIVlmBackend against a local test double server.

Real frames of the synthetic sign video; the server (tests/fake_openai_server.py)
records every request so the wire format can be checked exactly.
"""

from __future__ import annotations

import base64
import io
import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from fake_openai_server import FakeOpenAIServer
from PIL import Image

from avi.backends.captioner import Captioner
from avi.backends.frame_analyzer import FrameAnalyzer
from avi.backends.llm import ChatClient
from avi.backends.vlm import (
    OpenAIVlmBackend,
    VlmBackend,
    VlmCaptioner,
    VlmFrameAnalyzer,
    caption_json_schema,
    first_json_object,
    frames_to_content,
    images_as_files,
    jpeg_data_url,
    strip_think,
    thin_frames,
)
from avi.config import PROMPTS_DIR_DEFAULT
from avi.errors import AviError
from avi.prompts import PromptLibrary
from avi.video.clips import Clip
from avi.video.decode import probe, sample_frames

PROMPTS = PromptLibrary(PROMPTS_DIR_DEFAULT)
LABEL = re.compile(r"^Frame at (\d+\.\d)s$")


@pytest.fixture(scope="module")
def frames(sign_video):
    """All frames of the 20 s sign video at 2 fps (640x360)."""
    return list(sample_frames(probe(sign_video), fps=2.0))


def clip_frames(frames, clip):
    return [f for f in frames if clip.start_s <= f.t_s < clip.end_s]


def good_reply(start, end, desc="A navy background; a red square moves from left to right.", first_seen=None):
    return json.dumps({
        "clip_start_time": start, "clip_end_time": end,
        "subject_registry": {"subject_1": {"name": "red square", "appearance": ["red", "square"],
                                           "identity": ["moving shape"],
                                           "first_seen": start + 1.0 if first_seen is None else first_seen}},
        "clip_description": desc,
    })


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv


def make_captioner(srv, **kw):
    backend = OpenAIVlmBackend(ChatClient.connect(srv.base_url))
    return VlmCaptioner(backend, PROMPTS, **kw)


def images_and_labels(content):
    """(labels, decoded images) of the frame parts of a user content list, checking they alternate."""
    labels, images = [], []
    for i, part in enumerate(content):
        if part["type"] == "image_url":
            prev = content[i - 1]
            assert prev["type"] == "text" and LABEL.match(prev["text"]), prev
            url = part["image_url"]["url"]
            assert url.startswith("data:image/jpeg;base64,")
            img = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
            assert img.format == "JPEG"
            images.append(img)
            labels.append(float(LABEL.match(prev["text"]).group(1)))
    return labels, images


def test_protocols():
    with FakeOpenAIServer() as srv:
        backend = OpenAIVlmBackend(ChatClient.connect(srv.base_url))
        assert isinstance(backend, VlmBackend) and backend.name == "fake-vlm"
        assert isinstance(VlmCaptioner(backend, PROMPTS), Captioner)
        assert isinstance(VlmFrameAnalyzer(backend, PROMPTS), FrameAnalyzer)


def test_caption_request_format_and_good_reply(server, frames):
    clip = Clip(0, 0.0, 5.0)
    fr = clip_frames(frames, clip)
    assert len(fr) == 10
    server.add_replies(good_reply(0.0, 5.0))
    cap = make_captioner(server, frames_per_clip=6, max_tokens=700).caption(clip, fr)

    assert len(server.chat_requests) == 1
    body = server.chat_requests[0]
    assert body["model"] == "fake-vlm" and body["max_tokens"] == 700 and body["temperature"] == 0.0
    rf = body["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["schema"] == caption_json_schema()
    system, user = body["messages"]
    assert system == {"role": "system", "content": PROMPTS.text("caption_clip")}
    assert user["role"] == "user"
    header = user["content"][0]
    assert header["type"] == "text" and "0.0s" in header["text"] and "5.0s" in header["text"]
    labels, images = images_and_labels(user["content"])
    assert len(images) == 6 and len(user["content"]) == 1 + 2 * 6
    assert all(im.size == (640, 360) for im in images)
    assert labels == sorted(labels) and labels[0] == 0.0 and labels[-1] == 4.5  # uniform, ends kept
    assert labels == [round(f.t_s, 1) for f in thin_frames(fr, 6)]

    assert cap.text == "A navy background; a red square moves from left to right."
    assert (cap.clip_index, cap.start_s, cap.end_s, cap.captioner) == (0, 0.0, 5.0, "vlm-caption-v1")
    assert cap.data["subject_registry"] == {"subject_1": {"name": "red square", "appearance": ["red", "square"],
                                                          "identity": ["moving shape"], "first_seen": 1.0}}
    assert cap.data["frames_s"] == [f.t_s for f in thin_frames(fr, 6)]
    assert cap.data["vlm"] == "fake-vlm" and cap.data["attempts"] == 1 and "notes" not in cap.data
    assert "failed" not in cap.data


def test_llama_cpp_style_schema(server, frames):
    """With constrain="json_schema" the schema goes out in llama-cpp-python's response_format form."""
    server.add_replies(good_reply(5.0, 10.0))
    backend = OpenAIVlmBackend(ChatClient.connect(server.base_url, constrain="json_schema"))
    clip = Clip(1, 5.0, 10.0)
    VlmCaptioner(backend, PROMPTS).caption(clip, clip_frames(frames, clip))
    assert server.chat_requests[0]["response_format"] == {"type": "json_object", "schema": caption_json_schema()}


def test_fenced_json_with_prose(server, frames):
    clip = Clip(1, 5.0, 10.0)
    server.add_replies("Here is the caption you asked for:\n```json\n" + good_reply(5.0, 10.0, "EXIT 42 sign.")
                       + "\n```\nLet me know if you need more.")
    cap = make_captioner(server).caption(clip, clip_frames(frames, clip))
    assert cap.text == "EXIT 42 sign." and cap.data["attempts"] == 1
    assert len(server.chat_requests) == 1


def test_wrong_clip_times_are_corrected_with_a_note(server, frames):
    clip = Clip(2, 10.0, 15.0)
    server.add_replies(good_reply(0.0, 5.0, "A green scene with the sign ROOM 7B.", first_seen=2.0))
    cap = make_captioner(server).caption(clip, clip_frames(frames, clip))
    assert (cap.start_s, cap.end_s) == (10.0, 15.0)
    assert cap.text == "A green scene with the sign ROOM 7B."
    notes = " ".join(cap.data["notes"])
    assert "0-5s" in notes and "10-15s" in notes
    assert "first_seen" in notes and cap.data["subject_registry"]["subject_1"]["first_seen"] is None


def test_malformed_then_repaired(server, frames):
    clip = Clip(0, 0.0, 5.0)
    bad = json.dumps({"clip_start_time": 0.0, "clip_end_time": 5.0, "subject_registry": {}})
    server.add_replies(bad, good_reply(0.0, 5.0, "Repaired."))
    cap = make_captioner(server).caption(clip, clip_frames(frames, clip))
    assert cap.text == "Repaired." and cap.data["attempts"] == 2
    first, second = server.chat_requests
    assert second["messages"][:2] == first["messages"]  # same frames, conversation continued
    assert second["messages"][2] == {"role": "assistant", "content": bad}
    repair = second["messages"][3]
    assert repair["role"] == "user"
    assert "clip_description" in repair["content"] and "Field required" in repair["content"]
    assert second["response_format"] == first["response_format"]


def test_malformed_twice_fails_without_guessing(server, frames):
    clip = Clip(0, 0.0, 5.0)
    server.add_replies("I see a blue screen.", '{"clip_start_time": "soon"')
    cap = make_captioner(server).caption(clip, clip_frames(frames, clip))
    assert len(server.chat_requests) == 2
    assert cap.text == "" and cap.captioner == "vlm-caption-v1"
    assert cap.data["raw"] == '{"clip_start_time": "soon"'
    assert "no JSON object" in cap.data["failed"]
    assert "no JSON object" in server.chat_requests[1]["messages"][3]["content"]
    assert "subject_registry" not in cap.data


def test_empty_description_is_invalid(server, frames):
    clip = Clip(0, 0.0, 5.0)
    server.add_replies(good_reply(0.0, 5.0, "  "), good_reply(0.0, 5.0, "  "))
    cap = make_captioner(server).caption(clip, clip_frames(frames, clip))
    assert cap.text == "" and "clip_description is empty" in cap.data["failed"]


def test_no_frames_makes_no_request(server):
    cap = make_captioner(server).caption(Clip(0, 0.0, 5.0), [])
    assert cap.text == "" and "no frames" in cap.data["failed"]
    assert server.chat_requests == []


def test_server_errors_raise_instead_of_failing_the_caption(server, frames):
    server.add_replies({"status": 400, "content": "too many images"})
    clip = Clip(0, 0.0, 5.0)
    with pytest.raises(AviError, match="rejected"):
        make_captioner(server).caption(clip, clip_frames(frames, clip))


def test_concurrent_captions_are_independent(frames):
    """8 clips captioned at once through a thread pool: every caption belongs to its own clip."""
    header = re.compile(r"Clip from (\d+\.\d)s to (\d+\.\d)s")

    def reply(body):
        text = body["messages"][1]["content"][0]["text"]
        start, end = (float(x) for x in header.search(text).groups())
        n_images = sum(p["type"] == "image_url" for p in body["messages"][1]["content"])
        return {"content": good_reply(start, end, f"Clip starting at second {start:g} with {n_images} frames."),
                "delay_s": 0.15}

    with FakeOpenAIServer(reply_fn=reply) as srv:
        captioner = make_captioner(srv)
        assert captioner.concurrency == 8
        clips = [Clip(i, 2.5 * i, 2.5 * (i + 1)) for i in range(8)]
        with ThreadPoolExecutor(max_workers=captioner.concurrency) as pool:
            caps = list(pool.map(lambda c: captioner.caption(c, clip_frames(frames, c)), clips))
        assert srv.max_in_flight > 1
    assert len(srv.chat_requests) == 8
    for clip, cap in zip(clips, caps):
        assert cap.clip_index == clip.index and (cap.start_s, cap.end_s) == (clip.start_s, clip.end_s)
        assert cap.text == f"Clip starting at second {clip.start_s:g} with 5 frames."
        assert cap.data["frames_s"] == [f.t_s for f in clip_frames(frames, clip)]
        assert "notes" not in cap.data


def test_frame_analyzer_two_ranges(server, frames):
    chosen = [f for f in frames if 1.0 <= f.t_s < 3.0 or 12.0 <= f.t_s < 14.0]
    assert len(chosen) == 8
    server.add_replies("<think>look at the signs</think>The sign reads ROOM 7B (at 12.0s).")
    analyzer = VlmFrameAnalyzer(OpenAIVlmBackend(ChatClient.connect(server.base_url)), PROMPTS,
                                max_frames=64, max_tokens=300)
    res = analyzer.analyze(chosen, "What does the sign say?")
    assert res.text == "The sign reads ROOM 7B (at 12.0s)."
    assert res.data == {"question": "What does the sign say?", "frames_s": [f.t_s for f in chosen], "vlm": "fake-vlm"}
    body = server.chat_requests[0]
    assert body["max_tokens"] == 300 and "response_format" not in body
    system, user = body["messages"]
    assert system == {"role": "system", "content": PROMPTS.text("frame_analysis_vlm")}
    labels, images = images_and_labels(user["content"])
    assert labels == [1.0, 1.5, 2.0, 2.5, 12.0, 12.5, 13.0, 13.5]
    assert len(images) == 8 and all(im.size == (640, 360) for im in images)
    assert user["content"][-1] == {"type": "text", "text": "Question: What does the sign say?"}


def test_frame_analyzer_thins_to_max_frames(server, frames):
    server.add_replies("ok")
    analyzer = VlmFrameAnalyzer(OpenAIVlmBackend(ChatClient.connect(server.base_url)), PROMPTS, max_frames=5)
    res = analyzer.analyze(frames, "q")
    labels, _ = images_and_labels(server.chat_requests[0]["messages"][1]["content"])
    assert len(labels) == 5 and labels[0] == 0.0 and labels[-1] == 19.5
    assert res.data["frames_s"] == labels


def test_frames_as_files_for_a_local_media_path(frames, tmp_path):
    """With media_dir (vLLM's --allowed-local-media-path), frames go as file:// JPEGs that exist while the
    request runs and are gone after it, success or error; the rest of the request is unchanged."""
    media = tmp_path / "media"
    seen = []

    def reply(body):
        for part in body["messages"][1]["content"]:
            if part["type"] == "image_url":
                url = part["image_url"]["url"]
                assert url.startswith("file:///"), url
                path = Path(url[len("file://"):])
                assert media.resolve() in path.parents
                with Image.open(path) as img:
                    seen.append((path, img.format, img.size))
        return good_reply(0.0, 5.0)

    clip = Clip(0, 0.0, 5.0)
    with FakeOpenAIServer(reply_fn=reply) as srv:
        backend = OpenAIVlmBackend(ChatClient.connect(srv.base_url), media_dir=media)
        cap = VlmCaptioner(backend, PROMPTS, frames_per_clip=4).caption(clip, clip_frames(frames, clip))
        labels = [p["text"] for p in srv.chat_requests[0]["messages"][1]["content"][1:] if p["type"] == "text"]
    assert cap.text.startswith("A navy background") and len(seen) == 4 and len(labels) == 4
    assert all(fmt == "JPEG" and size == (640, 360) for _, fmt, size in seen)
    assert len({p.parent for p, _, _ in seen}) == 1 and not any(media.iterdir())  # one request dir, removed

    with FakeOpenAIServer(reply_fn=lambda body: {"status": 400, "content": "file outside the allowed path"}) as srv:
        backend = OpenAIVlmBackend(ChatClient.connect(srv.base_url), media_dir=media)
        with pytest.raises(AviError):
            backend.generate([{"role": "user", "content": frames_to_content(frames[:2], 2)}], max_tokens=5)
    assert not any(media.iterdir())

    (tmp_path / "blocked").write_text("a file where the folder should be")
    backend = OpenAIVlmBackend(backend.client, media_dir=tmp_path / "blocked" / "x")  # fails before any request
    with pytest.raises(AviError, match="cannot write frames for the VLM"):
        backend.generate([{"role": "user", "content": frames_to_content(frames[:1], 1)}], max_tokens=5)


def test_images_as_files_keeps_everything_else(tmp_path):
    msgs = [{"role": "system", "content": "sys"},
            {"role": "user", "content": [{"type": "text", "text": "Frame at 1.0s"},
                                         {"type": "image_url", "image_url": {"url": jpeg_data_url(
                                             np.zeros((8, 8, 3), np.uint8))}},
                                         {"type": "image_url", "image_url": {"url": "file:///already/a.jpg"}}]}]
    out = images_as_files(msgs, tmp_path)
    assert out[0] == msgs[0] and out[1]["content"][0] == msgs[1]["content"][0]
    assert out[1]["content"][1]["image_url"]["url"] == (tmp_path / "000.jpg").resolve().as_uri()
    assert out[1]["content"][2] == msgs[1]["content"][2]
    assert msgs[1]["content"][1]["image_url"]["url"].startswith("data:")  # the input is not modified
    assert Image.open(tmp_path / "000.jpg").size == (8, 8)


def test_frames_to_content_and_parsing_helpers(frames):
    parts = frames_to_content(frames[:3], 10)
    assert [p["type"] for p in parts] == ["text", "image_url"] * 3
    assert [p["text"] for p in parts[::2]] == ["Frame at 0.0s", "Frame at 0.5s", "Frame at 1.0s"]
    assert thin_frames(frames, 1) == [frames[len(frames) // 2]] and thin_frames(frames, 0) == []
    assert first_json_object('<think>{"x": 0}</think> text {"a": [1, {"b": 2}]} {"c": 3}') == {"a": [1, {"b": 2}]}
    with pytest.raises(ValueError):
        first_json_object("[1, 2] no object here")
    assert strip_think("<think>\nhmm\n</think>\n\nAnswer") == "Answer"


def test_caption_schema_is_closed_and_inline():
    schema = caption_json_schema()
    blob = json.dumps(schema)
    assert "$ref" not in blob and "$defs" not in blob
    assert set(schema["required"]) == {"clip_start_time", "clip_end_time", "subject_registry", "clip_description"}
    subject = schema["properties"]["subject_registry"]["additionalProperties"]
    assert set(subject["required"]) == {"name", "appearance", "identity", "first_seen"}
    assert schema["additionalProperties"] is False and subject["additionalProperties"] is False
