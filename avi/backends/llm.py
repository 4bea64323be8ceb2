"""The one OpenAI-compatible chat client avi uses for every orchestrator server.

vLLM (gpu profile), the embedded llama.cpp server (cpu profile), SGLang or any
compatible endpoint are interchangeable by configuration. Server differences
this client absorbs (the servers: docs/gpu.md):

* reasoning text arrives in ``message.reasoning`` (vLLM), the older
  ``reasoning_content``, or inline ``<think>`` blocks (handled by the parser);
* tool calls are read from ``tool_calls``, never inferred from
  ``finish_reason`` (vLLM says ``stop`` for a named tool choice);
* ``chat_template_kwargs`` (Qwen3's ``enable_thinking``) is sent explicitly
  to servers that take it; a request whose reply is read as one token (option
  scores) or one JSON object (``json_schema``) is sent with thinking off, since a
  Qwen3 that thinks first spends that token, or the budget, on ``<think>`` (issue 37).
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


def is_loopback(url: str) -> bool:
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
        timeout_s: per-request timeout in seconds: a request with no complete reply by then ends with
            :class:`LLMUnavailableError` "timed out after N s waiting for the LLM server at URL" (timeouts are
            not retried, so no request waits longer).
        connect_timeout_s: seconds to open a connection (and to list the models in :meth:`connect`).
        progress_s: while one request waits, write "still waiting" to stderr every ``progress_s`` seconds
            (0 = never).
        chat_template_kwargs: sent with every request when not None (vLLM/Qwen3).
        constrain: how :meth:`chat` forces a tool call when asked to:
            ``"tool_choice"`` sends ``tool_choice="required"`` (vLLM; tools must be
            strict for the arguments to be constrained too), ``"json_schema"``
            sends a ``response_format`` JSON schema of the allowed calls
            (llama.cpp turns it into a grammar), ``"none"`` forces nothing.
    """

    def __init__(self, base_url: str, model: str, api_key: str = "EMPTY", timeout_s: float = 600.0,
                 chat_template_kwargs: dict | None = None, constrain: str = "tool_choice",
                 connect_timeout_s: float = 10.0, progress_s: float = 0.0):
        try:
            import openai
        except ImportError as exc:  # pragma: no cover
            raise AviError("the openai package is not installed") from exc
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.chat_template_kwargs = chat_template_kwargs
        self.constrain = constrain
        self.timeout_s = float(timeout_s)
        self.connect_timeout_s = float(min(connect_timeout_s, timeout_s))
        self.progress_s = float(progress_s or 0.0)
        timeout = httpx.Timeout(self.timeout_s, connect=self.connect_timeout_s)
        # Loopback endpoints must not be routed through an HTTP proxy from the environment.
        http_client = httpx.Client(trust_env=not is_loopback(self.base_url), timeout=timeout)
        self._openai = openai
        # No retries inside the client: a timed-out request is not sent again (the wait stays bounded by
        # timeout_s); a dropped connection is retried once by _create.
        self._client = openai.OpenAI(base_url=self.base_url, api_key=api_key, timeout=timeout,
                                     max_retries=0, http_client=http_client)

    @classmethod
    def connect(cls, base_url: str, model: str | None = None, api_key: str = "EMPTY", timeout_s: float = 600.0,
                enable_thinking: bool | None = None, constrain: str = "tool_choice",
                connect_timeout_s: float = 10.0, progress_s: float = 0.0) -> "ChatClient":
        """Reach the endpoint, pick the model (the first listed if none given).

        Args:
            timeout_s, connect_timeout_s, progress_s: see the class.
            enable_thinking: when not None, sent as
                ``chat_template_kwargs={"enable_thinking": ...}`` on every request.

        Raises:
            LLMUnavailableError: nothing answers at ``base_url`` (connection refused, or no reply to
                ``GET /models`` within ``connect_timeout_s``), or it serves no model.
        """
        client = cls(base_url, model or "", api_key, timeout_s,
                     None if enable_thinking is None else {"enable_thinking": enable_thinking}, constrain,
                     connect_timeout_s, progress_s)
        client.model = served_model(client._client, client._openai, base_url, model, "LLM server",
                                    LLMUnavailableError, timeout_s=client.connect_timeout_s)
        return client

    def chat(self, messages: list[dict], tools: list[dict] | None = None, *, max_tokens: int = 512,
             temperature: float = 0.0, seed: int | None = 0, stop: list[str] | None = None,
             require_tool: list[str] | None = None, json_schema: dict | None = None,
             thinking: bool | None = None) -> ChatResult:
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
            thinking: ``enable_thinking`` for this request (sent only to a client that sends
                ``chat_template_kwargs``, i.e. a configured endpoint); None = off when ``json_schema`` is
                given (the reply is read as one JSON object), else the client's setting.

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
        template = self.template_kwargs(False if thinking is None and json_schema is not None else thinking)
        if template is not None:
            kwargs["extra_body"] = {"chat_template_kwargs": template}
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
        """``chat.completions.create`` with the server's failures mapped to avi's errors (see :meth:`chat`).

        A dropped connection is tried once more; a timeout is not (the wait stays within ``timeout_s``).
        """
        waiting = _Waiting(self) if self.progress_s > 0 else None
        try:
            for attempt in (0, 1):
                try:
                    return self._create_once(kwargs)
                except _Dropped:
                    if attempt:
                        raise LLMUnavailableError(f"lost the LLM server at {self.base_url} (connection closed or "
                                                  f"refused)") from None
                    time.sleep(0.5)
        finally:
            if waiting is not None:
                waiting.stop()

    def _create_once(self, kwargs: dict):
        try:
            resp = self._client.chat.completions.create(**kwargs)
            if not isinstance(getattr(resp, "choices", None), list) or not resp.choices \
                    or getattr(resp.choices[0], "message", None) is None:
                raise ValueError(f"no choices with a message in {str(resp)[:120]!r}")
            return resp
        except (ValueError, TypeError, AttributeError) as exc:  # JSONDecodeError is a ValueError
            raise AviError(f"the LLM server at {self.base_url} sent a reply that is not a chat completion: "
                           f"{' '.join(str(exc).split())[:200]}") from None
        except self._openai.APITimeoutError:  # before APIConnectionError: it is a subclass
            raise LLMUnavailableError(f"timed out after {self.timeout_s:g} s waiting for the LLM server at "
                                      f"{self.base_url} (setting llm_timeout_s)") from None
        except self._openai.APIConnectionError:
            raise _Dropped() from None
        except self._openai.APIResponseValidationError as exc:
            raise AviError(f"the LLM server at {self.base_url} sent a reply that is not a chat completion: "
                           f"{str(exc)[:200]}") from None
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

    def template_kwargs(self, thinking: bool | None = None) -> dict | None:
        """The ``chat_template_kwargs`` of one request: the client's, with ``enable_thinking`` set to ``thinking``
        when that is not None; None when this client sends none (the embedded llama.cpp server)."""
        if self.chat_template_kwargs is None:
            return None
        if thinking is None:
            return self.chat_template_kwargs
        return {**self.chat_template_kwargs, "enable_thinking": bool(thinking)}

    def first_token_logprobs(self, messages: list[dict], tools: list[dict] | None = None, *, top: int = 20,
                             seed: int | None = 0, thinking: bool = False) -> tuple[dict[str, float], ChatResult]:
        """Log-probabilities of the most likely first tokens of the reply (one token generated, greedy).

        Used to score answer options by their letter (issue 14: option scores debiased over cyclic
        permutations). llama.cpp's and vLLM's servers return ``logprobs.content[0].top_logprobs``.

        Args:
            messages: OpenAI-format messages.
            tools: the same ``tools`` as the conversation's other requests (an unchanged prompt prefix keeps
                the server's KV cache); the reply is not constrained.
            top: how many alternatives to ask for (servers cap it, often at 20).
            thinking: ``enable_thinking`` for this request (a configured endpoint only). Off by default: a
                Qwen3 that thinks first generates ``<think>``, not a letter, as its one token.

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
        template = self.template_kwargs(thinking)  # Qwen3's template only closes the think block after the prefix
        if template is not None:
            kwargs["extra_body"] = {"chat_template_kwargs": template}
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


class _Dropped(Exception):
    """The connection to the LLM server failed or was closed before a reply (not a timeout)."""


class _Waiting:
    """While a request runs: "still waiting" on stderr every ``client.progress_s`` seconds (a daemon thread)."""

    def __init__(self, client: ChatClient):
        import threading

        self._done = threading.Event()
        self._client = client
        self._t0 = time.monotonic()
        threading.Thread(target=self._run, name="avi-llm-wait", daemon=True).start()

    def _run(self) -> None:
        import sys

        c = self._client
        while not self._done.wait(c.progress_s):
            waited = time.monotonic() - self._t0
            print(f"avi: still waiting for the LLM server at {c.base_url}: {waited:.0f} s so far (gives up "
                  f"after {c.timeout_s:g} s, setting llm_timeout_s)", file=sys.stderr, flush=True)

    def stop(self) -> None:
        self._done.set()


def served_model(client, openai_module, base_url: str, model: str | None, server: str,
                 error: type[AviError], timeout_s: float = 10.0) -> str:
    """The model to use at an OpenAI-compatible endpoint: ``model`` if the server lists it, else the first
    it lists (``GET /models``, ``timeout_s`` seconds, no retries).

    Args:
        client: an ``openai.OpenAI`` client for ``base_url``.
        openai_module: the ``openai`` module (its exception classes).
        server: how messages name the server ("LLM server", "embedding server").
        error: raised when the server answers but lists no (such) model or an error status.

    Raises:
        LLMUnavailableError: nothing answers at ``base_url``: the connection failed, or no reply within
            ``timeout_s`` ("timed out after N s waiting for the ...").
        error: see above.
    """
    try:
        models = [m.id for m in client.with_options(timeout=timeout_s, max_retries=0).models.list()]
    except openai_module.APITimeoutError:
        raise LLMUnavailableError(f"timed out after {timeout_s:g} s waiting for the {server} at {base_url} to "
                                  f"list its models (setting llm_connect_timeout_s)") from None
    except openai_module.APIConnectionError:
        raise LLMUnavailableError(f"cannot reach the {server} at {base_url} (connection failed)") from None
    except openai_module.APIStatusError as exc:
        raise error(f"the {server} at {base_url} answered HTTP {exc.status_code} to GET /models") from None
    except (openai_module.APIResponseValidationError, ValueError, TypeError, AttributeError):
        raise error(f"the {server} at {base_url} answered GET /models with something that is not a model "
                    f"list") from None
    if not models:
        raise error(f"the {server} at {base_url} serves no model")
    if model and model not in models:
        raise error(f"the {server} at {base_url} has no model '{model}' (it serves: {', '.join(models)})")
    return model or models[0]
