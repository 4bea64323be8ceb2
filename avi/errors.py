"""User-facing errors.

Everything a user can cause (bad paths, non-video files, empty questions, an
unreachable LLM, missing weights) is raised as :class:`AviError`; the CLI prints
its message as one line on stderr and exits non-zero, never with a traceback.
"""


class AviError(Exception):
    """An error with a message fit to show the user as one line.

    Attributes:
        exit_code: process exit status the CLI uses (2 = bad input, 1 = other).
    """

    exit_code = 1

    def __init__(self, message: str, *, exit_code: int | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class InputError(AviError):
    """Bad input from the user: missing file, not a video, empty question."""

    exit_code = 2


class LLMUnavailableError(AviError):
    """The orchestrator LLM cannot be reached or started."""

    exit_code = 3


class WeightsError(AviError):
    """Local weights are missing or do not match weights.lock."""

    exit_code = 4
