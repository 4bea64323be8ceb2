"""Thinking mode (issue 37, item 3): every request whose reply is read as one token (option scores), a letter or
one JSON object goes to a configured endpoint with ``chat_template_kwargs={"enable_thinking": false}``, whatever
``llm_enable_thinking`` says; agent steps keep the setting. The server is the local OpenAI-compatible test double
(tests/fake_openai_server.py), which records each request body; tests/test_vllm_real.py checks the same against a
real vLLM serving the scripted Qwen3."""

from __future__ import annotations

import pytest
from fake_openai_server import FakeOpenAIServer

from avi.agent.rules.choice import choice_by_text, permutation_scores
from avi.backends.llm import ChatClient
from avi.config import PROMPTS_DIR_DEFAULT
from avi.index.summary import _ask
from avi.prompts import PromptLibrary

MSGS = [{"role": "system", "content": "You answer questions about a video."}, {"role": "user", "content": "Q?"}]
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


def _thinking(bodies: list[dict]) -> list:
    return [b.get("chat_template_kwargs", {}).get("enable_thinking", "absent") for b in bodies]


@pytest.mark.parametrize("setting", [True, False])
def test_one_token_and_json_reads_never_think(setting):
    with FakeOpenAIServer(reply_fn=lambda body: '{"a": 1}') as srv:
        client = ChatClient.connect(srv.base_url, enable_thinking=setting)
        client.chat(MSGS)                                   # an agent step: the setting
        client.chat(MSGS, json_schema=SCHEMA)               # a JSON object read
        client.first_token_logprobs(MSGS)                   # one token read (option scores)
        client.chat(MSGS, thinking=False)                   # asked explicitly
        client.chat(MSGS, json_schema=SCHEMA, thinking=True)
        client.first_token_logprobs(MSGS, thinking=True)
        bodies = srv.chat_requests
    assert _thinking(bodies) == [setting, False, False, False, True, True]


def test_a_client_without_template_kwargs_sends_none():
    """The embedded llama.cpp server (and the VLM client) get no chat_template_kwargs at all."""
    with FakeOpenAIServer(reply_fn=lambda body: '{"a": 1}') as srv:
        client = ChatClient.connect(srv.base_url)
        client.chat(MSGS, json_schema=SCHEMA)
        client.first_token_logprobs(MSGS, thinking=True)
        client.chat(MSGS, thinking=False)
        assert _thinking(srv.chat_requests) == ["absent"] * 3


def test_option_scoring_and_the_named_option_are_asked_without_thinking():
    """The agent's option scores (one request per cyclic permutation, first token read) and its schema-constrained
    option text, through the real client of a thinking endpoint."""
    prompts = PromptLibrary(PROMPTS_DIR_DEFAULT)
    options = {"A": "red", "B": "blue", "C": "green"}
    with FakeOpenAIServer(reply_fn=lambda body: '{"option": "blue"}') as srv:
        client = ChatClient.connect(srv.base_url, enable_thinking=True)
        scores, calls = permutation_scores(client, MSGS, None, prompts, "Which colour?", options)
        letter, _ = choice_by_text(client, MSGS, None, prompts, "Which colour?", options, "blue", max_tokens=64)
        bodies = srv.chat_requests
    assert scores == {} and len(calls) == 3  # the double returns no log-probabilities
    assert letter == "B"
    assert [b["max_tokens"] for b in bodies[:3]] == [1, 1, 1] and "response_format" in bodies[3]
    assert _thinking(bodies) == [False] * 4


def test_summaries_are_asked_without_thinking():
    """A summary has a small budget (400 tokens) that a thinking Qwen3 could spend before it writes anything."""
    with FakeOpenAIServer(replies=["<think>plan</think> The man walks."]) as srv:
        client = ChatClient.connect(srv.base_url, enable_thinking=True)
        assert _ask(client, "Summarise.", 400) == "The man walks."
        assert _thinking(srv.chat_requests) == [False]
