"""``avi serve``: run the profile's servers until Ctrl-C."""

from __future__ import annotations

import time

from avi.cli.common import settings_from_args


def cmd_serve(args) -> int:
    """Keep the profile's servers up until interrupted: on the cpu profile the embedded llama.cpp server, on
    the gpu profile every vLLM server of the ``[serve]`` layout; ``--dry-run`` prints the gpu layout's
    placement table and commands without starting anything."""
    settings = settings_from_args(args)
    if args.dry_run or settings.resolved_profile() == "gpu":
        from avi.serve.run import dry_run_text, serve_gpu

        layout = settings.serve_layout().validate_layout()
        log_dir = settings.home / "logs" / "serve"
        if args.dry_run:
            src = settings.sources().get("serve")
            where = (f"[serve] from {settings.config_path}" if src == "file" else
                     f"[serve] from {src}" if src else "the default 8-GPU layout (no [serve] table configured)")
            print(dry_run_text(layout, log_dir, where))
            return 0
        return serve_gpu(layout, log_dir, out=lambda line: print(line, flush=True),
                         weights=(settings.models_dir, settings.weights_lock))

    from avi.backends.llm_server import LlamaCppServer
    from avi.weights import resolve

    gguf = resolve(settings.llm_gguf, settings.models_dir, settings.weights_lock)
    with LlamaCppServer(gguf, n_ctx=settings.llm_ctx, n_threads=settings.llm_threads,
                        start_timeout_s=settings.llm_start_timeout_s) as server:
        print(f"serving {settings.llm_gguf} at {server.base_url}  (export AVI_LLM_BASE_URL={server.base_url}; "
              f"Ctrl-C stops)", flush=True)
        try:
            while server.proc is not None and server.proc.poll() is None:
                time.sleep(1)
        except KeyboardInterrupt:
            pass
    return 0
