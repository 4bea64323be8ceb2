"""The one OpenAI-compatible chat client avi uses for every orchestrator server.

vLLM (gpu profile), the embedded llama.cpp server (cpu profile), SGLang or any
compatible endpoint are interchangeable by configuration. Server differences
this client absorbs (DESIGN.md, "Production serving facts"):

* reasoning text arrives in ``message.reasoning`` (vLLM), the older
  ``reasoning_content``, or inline ``<think>`` blocks (handled by the parser);
* tool calls are read from ``tool_calls``, never inferred from
  ``finish_reason`` (vLLM says ``stop`` for a named tool choice);
* ``chat_template_kwargs`` (Qwen3's ``enable_thinking``) is sent explicitly
  to servers that take it.
"""

from __future__ import annotations

import ipaddress
import time
from dataclasses import dataclass, field
from urllib.parse import urlparse

import httpx

from avi.errors import AviError, LLMUnavailableError


def call_schema(tools: list[dict], names: list[str]) -> dict:
    """JSON schema of ``{"name": ..., "arguments": {...}}`` for any one of the named tools."""
    variants = []
    for t in tools:
        fn = t["function"]
        if fn["name"] in names:
            variants.append({"type": "object", "properties": {"name": {"type": "string", "enum": [fn["name"]]},
                                                              "arguments": fn["parameters"]},
                             "required": ["name", "arguments"], "additionalProperties": False})
    return variants[0] if len(variants) == 1 else {"anyOf": variants}


class ContextOverflowError(AviError):
    """The conversation no longer fits the model's context window."""


@dataclass
class ChatResult:
    """One chat completion.

    Attributes:
        content: message text ("" if none).
        reasoning: separate reasoning text from the server, if any.
        tool_calls: ``[(name, arguments_json_string)]`` from native tool calls.
        finish_reason: as reported (informational only).
        prompt_tokens, completion_tokens: usage as reported (0 if absent).
        seconds: wall time of the request.
    """

    content: str
    reasoning: str | None = None
    tool_calls: list[tuple[str, str]] = field(default_factory=list)
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0


def _is_loopback(url: str) -> bool:
    host = urlparse(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ChatClient:
    """Chat completions against one OpenAI-compatible endpoint.

    Use :meth:`connect`, which checks the endpoint answers before any work.

    Args:
        base_url: e.g. ``http://127.0.0.1:8000/v1``.
        model: model name on the server.
        api_key: sent as a bearer token (``EMPTY`` for local servers).
        timeout_s: per-request timeout in seconds.
        chat_template_kwargs: sent with every request when not None (vLLM/Qwen3).
        constrain: how :meth:`chat` forces a tool call when asked to:
            ``"tool_choice"`` sends ``tool_choice="required"`` (vLLM; tools must be
            strict for the arguments to be constrained too), ``"json_schema"``
            sends a ``response_format`` JSON schema of the allowed calls
            (llama.cpp turns it into a grammar), ``"none"`` forces nothing.
    """

    def __init__(self, base_url: str, model: str, api_key: str = "EMPTY", timeout_s: float = 600.0,
                 chat_template_kwargs: dict | None = None, constrain: str = "tool_choice"):
        try:
            import openai
        except ImportError as exc:  # pragma: no cover
            raise AviError("the openai package is not installed") from exc
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.chat_template_kwargs = chat_template_kwargs
        self.constrain = constrain
        # Loopback endpoints must not be routed through an HTTP proxy from the environment.
        http_client = httpx.Client(trust_env=not _is_loopback(self.base_url), timeout=timeout_s)
        self._openai = openai
        self._client = openai.OpenAI(base_url=self.base_url, api_key=api_key, timeout=timeout_s,
                                     max_retries=1, http_client=http_client)

    @classmethod
    def connect(cls, base_url: str, model: str | None = None, api_key: str = "EMPTY", timeout_s: float = 600.0,
                enable_thinking: bool | None = None, constrain: str = "tool_choice") -> "ChatClient":
        """Reach the endpoint, pick the model (the first listed if none given).

        Args:
            enable_thinking: when not None, sent as
                ``chat_template_kwargs={"enable_thinking": ...}`` on every request.

        Raises:
            LLMUnavailableError: nothing answers at ``base_url``, or it serves no model.
        """
        client = cls(base_url, model or "", api_key, timeout_s,
                     None if enable_thinking is None else {"enable_thinking": enable_thinking}, constrain)
        client.model = served_model(client._client, client._openai, base_url, model, "LLM server",
                                    LLMUnavailableError)
        return client

    def chat(self, messages: list[dict], tools: list[dict] | None = None, *, max_tokens: int = 512,
             temperature: float = 0.0, seed: int | None = 0, stop: list[str] | None = None,
             require_tool: list[str] | None = None, json_schema: dict | None = None) -> ChatResult:
        """One chat completion.

        Args:
            messages: OpenAI-format messages.
            tools: OpenAI ``tools`` entries (``tool_choice`` is ``auto``).
            max_tokens: completion budget in tokens.
            require_tool: names of tools (among ``tools``) one of which the reply
                must call, enforced as set by ``constrain``.
            json_schema: the reply's content must be JSON valid against this schema
                (structured output): a grammar on llama.cpp (``constrain="json_schema"``),
                ``response_format`` ``json_schema`` on vLLM and OpenAI-style servers.

        Raises:
            ContextOverflowError: the prompt exceeds the model's context.
            LLMUnavailableError: the server went away, timed out, or answered 429/502/503/504.
            AviError: any other error status.
        """
        kwargs: dict = {"model": self.model, "messages": messages, "max_tokens": max_tokens,
                        "temperature": temperature}
        if seed is not None:
            kwargs["seed"] = seed
        if stop:
            kwargs["stop"] = stop
        if tools:
            kwargs["tools"] = tools
            kwargs["tool_choice"] = "auto"
        if require_tool and tools and self.constrain == "tool_choice":
            if len(require_tool) == len(tools):
                kwargs["tool_choice"] = "required"
            elif len(require_tool) == 1:
                kwargs["tool_choice"] = {"type": "function", "function": {"name": require_tool[0]}}
            else:  # a subset: "required" constrains to *some* listed tool (vLLM), so list only the subset
                kwargs["tools"] = [t for t in tools if t.get("function", {}).get("name") in set(require_tool)]
                kwargs["tool_choice"] = "required"
        elif require_tool and tools and self.constrain == "json_schema":
            kwargs["response_format"] = {"type": "json_object", "schema": call_schema(tools, require_tool)}
        if json_schema is not None and "response_format" not in kwargs and self.constrain != "none":
            if self.constrain == "json_schema":  # llama-cpp-python's form
                kwargs["response_format"] = {"type": "json_object", "schema": json_schema}
            else:
                kwargs["response_format"] = {"type": "json_schema",
                                             "json_schema": {"name": "reply", "schema": json_schema, "strict": True}}
        if self.chat_template_kwargs is not None:
            kwargs["extra_body"] = {"chat_template_kwargs": self.chat_template_kwargs}
        t0 = time.perf_counter()
        resp = self._create(kwargs)
        seconds = time.perf_counter() - t0
        choice = resp.choices[0]
        msg = choice.message
        reasoning = getattr(msg, "reasoning", None) or getattr(msg, "reasoning_content", None)
        extra = getattr(msg, "model_extra", None) or {}
        reasoning = reasoning or extra.get("reasoning") or extra.get("reasoning_content")
        calls = [(tc.function.name, tc.function.arguments or "{}") for tc in (msg.tool_calls or [])
                 if getattr(tc, "function", None) is not None]
        usage = resp.usage
        return ChatResult(
            content=msg.content or "",
            reasoning=reasoning,
            tool_calls=calls,
            finish_reason=choice.finish_reason,
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            seconds=seconds,
        )

    def _create(self, kwargs: dict):
        """``chat.completions.create`` with the server's failures mapped to avi's errors (see :meth:`chat`)."""
        try:
            return self._client.chat.completions.create(**kwargs)
        except self._openai.APIConnectionError:
            raise LLMUnavailableError(f"lost the LLM server at {self.base_url}") from None
        except self._openai.APITimeoutError:
            raise LLMUnavailableError(f"the LLM server at {self.base_url} timed out") from None
        except self._openai.BadRequestError as exc:
            msg = str(exc)
            if "context" in msg.lower() and ("length" in msg.lower() or "window" in msg.lower()
                                             or "exceed" in msg.lower()):
                raise ContextOverflowError(f"conversation exceeds the model's context: {msg[:200]}") from None
            raise AviError(f"the LLM server rejected the request: {msg[:300]}") from None
        except self._openai.APIStatusError as exc:
            if exc.status_code in (429, 502, 503, 504):  # overloaded or restarting: worth retrying later
                raise LLMUnavailableError(f"the LLM server at {self.base_url} is unavailable (HTTP "
                                          f"{exc.status_code}): {str(exc)[:200]}") from None
            raise AviError(f"the LLM server answered HTTP {exc.status_code}: {str(exc)[:300]}") from None

    def first_token_logprobs(self, messages: list[dict], tools: list[dict] | None = None, *, top: int = 20,
                             seed: int | None = 0) -> tuple[dict[str, float], ChatResult]:
        """Log-probabilities of the most likely first tokens of the reply (one token generated, greedy).

        Used to score answer options by their letter (issue 14: option scores debiased over cyclic
        permutations). llama.cpp's and vLLM's servers return ``logprobs.content[0].top_logprobs``.

        Args:
            messages: OpenAI-format messages.
            tools: the same ``tools`` as the conversation's other requests (an unchanged prompt prefix keeps
                the server's KV cache); the reply is not constrained.
            top: how many alternatives to ask for (servers cap it, often at 20).

        Returns:
            ``({token text stripped: highest logprob}, result)``; the dict is empty when the server returned
            no log-probabilities.

        Raises:
            the errors of :meth:`chat`.
        """
        kwargs: dict = {"model": self.model, "messages": messages, "max_tokens": 1, "temperature": 0.0,
                        "logprobs": True, "top_logprobs": top}
        if seed is not None:
            kwargs["seed"] = seed
        if tools:
            kwargs["tools"] = tools
            kwargs["tool_choice"] = "auto"  # as in the conversation: the same prompt, so the prefix cache holds
        if self.chat_template_kwargs is not None:
            kwargs["extra_body"] = {"chat_template_kwargs": self.chat_template_kwargs}
        t0 = time.perf_counter()
        resp = self._create(kwargs)
        seconds = time.perf_counter() - t0
        choice = resp.choices[0]
        out: dict[str, float] = {}
        content = getattr(getattr(choice, "logprobs", None), "content", None) or []
        if content:
            for alt in getattr(content[0], "top_logprobs", None) or []:
                token = str(getattr(alt, "token", "")).strip()
                lp = float(getattr(alt, "logprob", float("-inf")))
                if token and lp > out.get(token, float("-inf")):
                    out[token] = lp
        usage = resp.usage
        return out, ChatResult(content=choice.message.content or "", finish_reason=choice.finish_reason,
                               prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                               completion_tokens=getattr(usage, "completion_tokens", 0) or 0, seconds=seconds)


def served_model(client, openai_module, base_url: str, model: str | None, server: str,
                 error: type[AviError]) -> str:
    """The model to use at an OpenAI-compatible endpoint: ``model`` if the server lists it, else the first
    it lists (``GET /models``, 10 s, no retries).

    Args:
        client: an ``openai.OpenAI`` client for ``base_url``.
        openai_module: the ``openai`` module (its exception classes).
        server: how messages name the server ("LLM server", "embedding server").
        error: raised when the server answers but lists no (such) model or an error status.

    Raises:
        LLMUnavailableError: nothing answers at ``base_url``.
        error: see above.
    """
    try:
        models = [m.id for m in client.with_options(timeout=10.0, max_retries=0).models.list()]
    except openai_module.APIConnectionError:  # APITimeoutError included
        raise LLMUnavailableError(f"cannot reach the {server} at {base_url} (connection failed)") from None
    except openai_module.APIStatusError as exc:
        raise error(f"the {server} at {base_url} answered HTTP {exc.status_code} to GET /models") from None
    if not models:
        raise error(f"the {server} at {base_url} serves no model")
    if model and model not in models:
        raise error(f"the {server} at {base_url} has no model '{model}' (it serves: {', '.join(models)})")
    return model or models[0]
