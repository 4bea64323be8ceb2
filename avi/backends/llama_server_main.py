"""Entry point of the embedded orchestrator server (cpu profile).

Runs llama-cpp-python's OpenAI-compatible server (``llama_cpp.server``) on one
GGUF, bound to the host given (avi always passes 127.0.0.1), with the GGUF's
own chat template after one repair:

The Qwen2.5 GGUF we ship has doubled braces in its tool-call example
(``{{"name": <function-name>, ...}}``), a leftover of Python ``str.format``
escaping, and the model copies them. :func:`repair_chat_template` undoes that
so the template renders the example as plain JSON.

One more patch (:func:`patch_logprobs_rows`): llama-cpp-python computes the log-softmax
of *every* row of its logits array (the prompt's rows included) before it keeps the rows
of the generated tokens. For the option scores of a multiple-choice question (one
generated token after a 4,000-token prompt) that is 600 million floats: measured 12.4 s
of a 15.4 s request on this machine. The patch computes only the rows it keeps.

And one setting (:func:`logits_when_asked`): the server's default ``logits_all`` makes llama.cpp compute and
copy the logits of every prompt token (151,936 floats each for Qwen2.5) although only requests asking for
log-probabilities read them; the model is created with room for them, but each request computes them only
when it asks for log-probabilities (prefill 29 -> 40 tokens/s on this machine's 2 cores).

Started by :class:`avi.backends.llm_server.LlamaCppServer`; not a user command
(``avi serve`` is the user-facing way to keep a server up).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import sys
import threading
import time


def repair_chat_template(template: str) -> str:
    """Replace the doubled-brace tool-call example with single braces.

    Only the literal example line is touched; Jinja's own ``{{ … }}``
    expressions have spaces or identifiers inside and are left alone.
    """
    return template.replace('{{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}}',
                            '{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}') \
                   .replace('{{"name": <function-name>, "arguments": <args-json-object>}}',
                            '{"name": <function-name>, "arguments": <args-json-object>}')


def _die_with_parent(parent_pid: int) -> None:
    """Ask Linux to SIGTERM us when the avi process that started us dies."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass
    if parent_pid and os.getppid() != parent_pid:
        sys.exit(0)
    if parent_pid:
        threading.Thread(target=_exit_after_parent, args=(parent_pid,), daemon=True, name="parent-watch").start()


def _exit_after_parent(parent_pid: int, grace_s: float = 5.0) -> None:
    """Exit ``grace_s`` seconds after the parent is gone, even in the middle of a generation.

    The parent-death SIGTERM makes uvicorn shut down gracefully, which waits for the request being
    generated (minutes for a long summary on 2 cores); a server nobody can talk to any more must not
    keep the CPUs that long.
    """
    while os.getppid() == parent_pid:
        time.sleep(1.0)
    time.sleep(grace_s)
    os._exit(0)


class _LogprobRows:
    """The log-softmax of a 2-D logits array, computed only for the rows that are indexed."""

    def __init__(self, logits, log_softmax):
        self._logits, self._log_softmax = logits, log_softmax

    def __getitem__(self, key):
        return self._log_softmax(self._logits[key])


def patch_logprobs_rows() -> None:
    """Make ``llama_cpp.Llama.logits_to_logprobs`` lazy for 2-D arrays (see the module docstring).

    The library indexes the result at once (``logits_to_logprobs(self._scores)[token_offset:]``), so the
    rows it uses, and only those, are computed, with the library's own function; 1-D calls are unchanged.
    Idempotent.
    """
    from llama_cpp import Llama

    original = Llama.logits_to_logprobs
    if getattr(original, "_avi_lazy_rows", False):
        return

    def logits_to_logprobs(logits, axis: int = -1):
        if getattr(logits, "ndim", 1) == 2 and axis in (-1, 1):
            return _LogprobRows(logits, original)
        return original(logits, axis=axis)

    logits_to_logprobs._avi_lazy_rows = True
    Llama.logits_to_logprobs = staticmethod(logits_to_logprobs)


def logits_when_asked(llama) -> None:
    """Compute the logits of prompt tokens only in requests that ask for log-probabilities.

    ``llama`` must be created with ``logits_all=True`` (its logits array then has a row per context slot, and
    llama-cpp-python accepts ``logprobs``); this wraps its ``create_completion`` so each request sets the flag
    llama.cpp reads while it evaluates the prompt: on for a request with ``logprobs``, off otherwise (only the
    last token's logits, which sampling needs). A request with ``logprobs`` also re-evaluates the last prompt
    token, so the row of it that the library reads was written in this request. Idempotent.
    """
    if getattr(llama.create_completion, "_avi_logits_when_asked", False):
        return
    original = llama.create_completion

    def create_completion(*args, **kwargs):
        wants = kwargs.get("logprobs") is not None
        llama._logits_all = wants  # noqa: SLF001 - the flag Llama.eval passes to llama.cpp's batch
        if wants:
            llama._requires_eval = True  # noqa: SLF001 - no exact-cache shortcut: the last row is recomputed
        return original(*args, **kwargs)

    create_completion._avi_logits_when_asked = True
    llama.create_completion = create_completion
    llama._logits_all = False  # noqa: SLF001


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m avi.backends.llama_server_main")
    p.add_argument("--model", required=True)
    p.add_argument("--alias", default="avi-orchestrator")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--n_ctx", type=int, default=8192)
    p.add_argument("--n_threads", type=int, default=max(1, os.cpu_count() or 1))
    p.add_argument("--parent-pid", type=int, default=0)
    p.add_argument("--state-dir", default=None, help="persist the prompt-prefix KV state here (see "
                                                     "avi.backends.llama_prefix_cache)")
    p.add_argument("--model-key", default="", help="identifies the weights (their sha256) for --state-dir")
    a = p.parse_args(argv)
    _die_with_parent(a.parent_pid)

    import uvicorn
    from llama_cpp import llama_chat_format
    from llama_cpp.server import app as server_app
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    patch_logprobs_rows()
    model_settings = ModelSettings(model=a.model, model_alias=a.alias, n_ctx=a.n_ctx, n_threads=a.n_threads,
                                   n_threads_batch=a.n_threads, n_gpu_layers=0, verbose=False)
    app = server_app.create_app(server_settings=ServerSettings(host=a.host, port=a.port),
                                model_settings=[model_settings])
    llama = server_app._llama_proxy(a.alias)  # noqa: SLF001 - the server keeps its model here
    logits_when_asked(llama)
    template = llama.metadata.get("tokenizer.chat_template")
    if template:
        eos_id = llama.token_eos()
        stop_ids = [eos_id]
        im_end = llama.tokenize(b"<|im_end|>", add_bos=False, special=True)
        if len(im_end) == 1:
            stop_ids.append(im_end[0])
        llama.chat_handler = llama_chat_format.Jinja2ChatFormatter(
            template=repair_chat_template(template),
            eos_token=llama._model.token_get_text(eos_id),  # noqa: SLF001
            bos_token=llama._model.token_get_text(llama.token_bos()) if llama.token_bos() != -1 else "",  # noqa: SLF001
            stop_token_ids=stop_ids,
        ).to_chat_handler()
    if a.state_dir:
        from avi.backends.llama_prefix_cache import PrefixStateCache

        llama.set_cache(PrefixStateCache(llama, a.state_dir, a.model_key or a.model))
    print(f"avi llama server ready to bind {a.host}:{a.port}", file=sys.stderr, flush=True)
    uvicorn.run(app, host=a.host, port=a.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
