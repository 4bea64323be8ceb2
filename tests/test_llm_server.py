"""The embedded llama.cpp server and the OpenAI-compatible client, with a real (tiny) GGUF.

SmolLM2-135M is useless for reasoning but real: it exercises the server's
start-up, the chat template, constrained decoding and shutdown in seconds.
"""

from __future__ import annotations

import json
import socket

import httpx
import pytest

from avi.backends.llama_server_main import repair_chat_template
from avi.backends.llm import ChatClient, call_schema
from avi.backends.llm_server import LlamaCppServer, free_port
from avi.config import Settings
from avi.errors import LLMUnavailableError
from avi.tools import ALL_TOOLS
from avi.weights import resolve


@pytest.fixture(scope="module")
def smol_server():
    s = Settings()
    gguf = resolve("smollm2-135m-instruct", s.models_dir, s.weights_lock)
    server = LlamaCppServer(gguf, n_ctx=4096, n_threads=2, start_timeout_s=60)
    server.start()
    yield server
    server.stop()


def test_server_binds_loopback_and_answers(smol_server):
    assert smol_server.base_url.startswith("http://127.0.0.1:")
    r = httpx.Client(trust_env=False).get(f"{smol_server.base_url}/models")
    assert r.status_code == 200 and r.json()["data"][0]["id"] == "avi-orchestrator"
    # not reachable on a non-loopback address of this host
    with pytest.raises(ValueError):
        LlamaCppServer(smol_server.gguf, host="0.0.0.0")


def test_client_chat(smol_server):
    client = ChatClient.connect(smol_server.base_url, constrain="json_schema")
    assert client.model == "avi-orchestrator"
    res = client.chat([{"role": "user", "content": "What is the capital of France? One word."}], max_tokens=16)
    assert res.content.strip() and res.prompt_tokens > 0 and res.completion_tokens > 0 and res.seconds > 0


def test_constrained_tool_call_is_schema_valid(smol_server):
    """Even a 135M model returns a valid call when decoding is constrained by the tool schemas."""
    client = ChatClient.connect(smol_server.base_url, constrain="json_schema")
    tools = [t.openai_schema() for t in ALL_TOOLS.values()]
    names = ["text_extract", "object_detect"]
    res = client.chat([{"role": "user", "content": "Read the text on screen at 12 seconds."}], tools,
                      max_tokens=200, require_tool=names)
    call = json.loads(res.content)
    assert call["name"] in names
    tool = ALL_TOOLS[call["name"]]
    tool.args_model.model_validate(call["arguments"])  # raises if the arguments break the schema


def test_call_schema_shapes():
    tools = [t.openai_schema() for t in ALL_TOOLS.values()]
    one = call_schema(tools, ["clip_retrieve"])
    assert one["properties"]["name"]["enum"] == ["clip_retrieve"]
    two = call_schema(tools, ["text_extract", "object_detect"])
    assert [v["properties"]["name"]["enum"][0] for v in two["anyOf"]] == ["text_extract", "object_detect"]


def test_stop_frees_port_and_process():
    s = Settings()
    server = LlamaCppServer(resolve("smollm2-135m-instruct", s.models_dir, s.weights_lock), n_ctx=2048,
                            start_timeout_s=60).start()
    proc, port = server.proc, server.port
    server.stop()
    assert proc.poll() is not None
    with socket.socket() as sock:  # the port can be bound again
        sock.bind(("127.0.0.1", port))
    server.stop()  # idempotent


def test_bad_gguf_fails_with_log_tail(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 100)
    with pytest.raises(LLMUnavailableError, match=r"exited with code [1-9]"):
        LlamaCppServer(bad, start_timeout_s=60).start()


def test_launch_returns_at_once_and_start_waits_for_it(tmp_path):
    """Backends.launch_llm starts the embedded server without waiting; ``llm`` then waits and serves."""
    from avi.backends import Backends

    backends = Backends(Settings(llm_gguf="smollm2-135m-instruct", llm_ctx=2048, home=tmp_path))
    try:
        assert backends.launch_llm() is True
        server = backends._server
        proc = server.proc
        assert proc is not None and proc.poll() is None and not server._ready
        assert backends.launch_llm() is False and server.proc is proc  # launched once
        assert backends.llm_pending
        client = backends.llm
        assert server._ready and server.proc is proc and not backends.llm_pending
        assert client.chat([{"role": "user", "content": "Say hi."}], max_tokens=4).content is not None
    finally:
        backends.close()
    assert proc.poll() is not None
    assert Backends(Settings(llm_base_url="http://127.0.0.1:9/v1")).launch_llm() is False


def test_a_question_launches_the_server_before_opening_the_video(tmp_path, monkeypatch):
    """pipeline.ask starts the embedded server before probing the video (the model loads meanwhile); a bad video
    then fails with its own error, and closing the backends stops the server."""
    from avi import pipeline
    from avi.backends import Backends
    from avi.errors import InputError

    backends = Backends(Settings(llm_gguf="smollm2-135m-instruct", llm_ctx=2048, home=tmp_path))
    bad = tmp_path / "not-a-video.mp4"
    bad.write_bytes(b"no video here")
    try:
        with pytest.raises(InputError):
            pipeline.ask(bad, "What happens?", backends.settings, backends, progress=False)
        proc = backends._server.proc
        assert proc is not None and backends.llm_pending
    finally:
        backends.close()
    assert proc.poll() is not None


def test_unreachable_endpoint():
    port = free_port()  # nothing listens there
    with pytest.raises(LLMUnavailableError, match="cannot reach"):
        ChatClient.connect(f"http://127.0.0.1:{port}/v1")


def test_repair_chat_template():
    broken = ('{{- "For each function call, return a json object:\\n<tool_call>\\n'
              '{{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}}\\n</tool_call>" }}')
    fixed = repair_chat_template(broken)
    assert '{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n' in fixed
    assert "{{\\\"name" not in fixed
    assert fixed.startswith("{{-")  # Jinja expressions untouched


def test_repair_applies_to_the_shipped_qwen_template():
    import llama_cpp

    s = Settings()
    gguf = resolve("qwen2.5-coder-1.5b-instruct", s.models_dir, s.weights_lock)
    template = llama_cpp.Llama(str(gguf), vocab_only=True, verbose=False).metadata["tokenizer.chat_template"]
    assert '{{\\"name\\": <function-name>' in template  # the defect is there ...
    fixed = repair_chat_template(template)
    assert '{{\\"name\\": <function-name>' not in fixed  # ... and gone after the repair
    assert '<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call>' in fixed


def test_prefix_state_persists_between_server_lives(tmp_path):
    """The second server restores the first one's prompt prefix (its state file is used, not written again: the
    same family of prompts); a prompt of another family (another system prompt) saves its own state beside it; a
    family whose prompt changed after its start (a new prompt file) replaces its stale state."""
    s = Settings()
    gguf = resolve("smollm2-135m-instruct", s.models_dir, s.weights_lock)
    state_dir = tmp_path / "state"
    system = {"role": "system", "content": "You are a careful assistant. " * 80}
    other = {"role": "system", "content": "Reply with one JSON object describing the request. " * 40}
    outputs = []
    changed = {"role": "system", "content": "You are a careful assistant. " * 30 + "Answer briefly, please. " * 50}
    for life, (sys_msg, question) in enumerate([(system, "Say hello."), (system, "Name a colour."),
                                                 (other, "Name a colour."), (changed, "Say hello.")]):
        with LlamaCppServer(gguf, n_ctx=2048, start_timeout_s=60, state_dir=state_dir, model_key="k") as server:
            client = ChatClient.connect(server.base_url)
            outputs.append(client.chat([sys_msg, {"role": "user", "content": question}], max_tokens=12).content)
            if life == 1:  # a second family in the same server life is saved too
                client.chat([other, {"role": "user", "content": "Say hello."}], max_tokens=4)
            files = sorted(state_dir.rglob("*.npz"), key=lambda p: p.stat().st_mtime)
            if life == 0:
                assert len(files) == 1
                first, first_mtime = files[0], files[0].stat().st_mtime_ns
            elif life == 1:
                # the first life's state was read (touched); the same family wrote nothing, the other family did
                assert first.stat().st_mtime_ns > first_mtime
                assert len(files) == 2
            elif life == 2:
                assert len(files) == 2  # both families stored: nothing new
            else:  # the first family's prompt changed past its start: its stale state is replaced, not kept beside
                assert len(files) == 2 and first not in files
    assert all(o.strip() for o in outputs)
    # another model key never sees these states
    from avi.backends.llama_prefix_cache import PrefixStateCache

    class _FakeLlama:  # test double: only what the cache asks of a model
        save_state = load_state = None  # replaced by lean_state_io

        def n_ctx(self):
            return 2048

        def n_vocab(self):
            return 10

    assert PrefixStateCache(_FakeLlama(), state_dir, "other").cache_size == 0


def test_structured_output_json_schema(smol_server):
    """A reply constrained by a JSON schema (graph extraction, captions) is valid even from a 135M model."""
    client = ChatClient.connect(smol_server.base_url, constrain="json_schema")
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 30},
                                               "count": {"type": "integer"}},
              "required": ["name", "count"], "additionalProperties": False}
    res = client.chat([{"role": "user", "content": "Give a fruit and a number as JSON."}], max_tokens=60,
                      json_schema=schema)
    data = json.loads(res.content)
    assert set(data) == {"name", "count"} and isinstance(data["count"], int)


def test_lazy_logprob_rows_equal_the_librarys_own():
    """patch_logprobs_rows computes, with the library's own function, only the rows that are indexed."""
    import numpy as np
    from llama_cpp import Llama

    from avi.backends.llama_server_main import patch_logprobs_rows

    logits = np.random.default_rng(0).normal(size=(50, 300)).astype(np.single)
    want = Llama.logits_to_logprobs(logits)[47:]
    patch_logprobs_rows()
    patch_logprobs_rows()  # idempotent
    got = Llama.logits_to_logprobs(logits)[47:]
    assert np.allclose(got, want)
    one = logits[3].astype(np.float64)  # 1-D calls are computed at once, as before
    assert np.allclose(Llama.logits_to_logprobs(logits[3]), one - np.log(np.exp(one).sum()), atol=1e-5)


def test_first_token_logprobs_through_the_server(smol_server):
    client = ChatClient.connect(smol_server.base_url, constrain="json_schema")
    messages = [{"role": "user", "content": "Answer with one letter, A or B: which letter comes first?"}]
    lps, res = client.first_token_logprobs(messages)
    assert lps and all(v <= 0.0 for v in lps.values()) and res.completion_tokens == 1


def test_prompt_logits_only_when_asked():
    """The embedded server computes prompt-token logits only for requests with log-probabilities."""
    from avi.backends.llama_server_main import logits_when_asked

    class FakeLlama:
        def __init__(self):
            self._logits_all, self._requires_eval, self.seen = True, False, []

        def create_completion(self, *args, **kwargs):
            self.seen.append((self._logits_all, self._requires_eval))
            self._requires_eval = False
            return "ok"

    llama = FakeLlama()
    logits_when_asked(llama)
    logits_when_asked(llama)  # idempotent
    assert llama._logits_all is False
    assert llama.create_completion(prompt="p") == "ok"
    assert llama.create_completion(prompt="p", logprobs=5) == "ok"
    assert llama.create_completion(prompt="p", logprobs=None) == "ok"
    assert llama.seen == [(False, False), (True, True), (False, False)]


def _restored_completion(gguf, lean: bool) -> tuple[str, object]:
    """Complete a prompt, save the state, do other work, restore it, complete the prompt again."""
    from llama_cpp import Llama

    from avi.backends.llama_prefix_cache import lean_state_io

    llama = Llama(str(gguf), n_ctx=512, n_threads=2, logits_all=True, verbose=False)
    prompt = "The capital of France is Paris. The capital of Italy is"
    llama.create_completion(prompt, max_tokens=8, temperature=0.0)
    if lean:
        lean_state_io(llama)
        lean_state_io(llama)  # idempotent
    state = llama.save_state()
    llama.reset()
    llama.create_completion("Something else entirely, about rivers", max_tokens=4, temperature=0.0)
    llama.load_state(state)
    assert llama.n_tokens == state.n_tokens and llama._requires_eval
    return llama.create_completion(prompt, max_tokens=8, temperature=0.0)["choices"][0]["text"], state


def test_lean_state_io_restores_a_prefix_as_the_library_does():
    """lean_state_io saves no logits, and a restored prefix gives the library's own restore's greedy text."""
    s = Settings()
    gguf = resolve("smollm2-135m-instruct", s.models_dir, s.weights_lock)
    want, full = _restored_completion(gguf, lean=False)
    got, lean = _restored_completion(gguf, lean=True)
    assert got == want and got.strip()
    assert lean.scores.shape[0] == 0 and full.scores.shape[0] > 0
    assert lean.n_tokens == full.n_tokens and lean.llama_state_size == full.llama_state_size
