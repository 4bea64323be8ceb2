"""Air-gap guards: make every library we use refuse to reach a model hub or phone home.

Called by the CLI before any backend is imported; tests call it too.
"""

from __future__ import annotations

import os

_OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "ANONYMIZED_TELEMETRY": "False",  # chromadb
    "DO_NOT_TRACK": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "PADDLE_PDX_DISABLE_MODEL_SOURCE_CHECK": "True",  # PaddleOCR 3.x checks its model hosts at start-up
}


def enforce_offline_env() -> None:
    """Set the offline/telemetry-off environment variables (existing values win)."""
    for key, value in _OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
