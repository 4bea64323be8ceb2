"""Settings from a TOML config file + AVI_* environment + flags: precedence, errors, the [serve] layout and the
endpoints derived from it, `avi config show`, avi.example.toml."""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest

from avi.config import Settings
from avi.errors import InputError
from avi.serve.layout import default_layout

REPO = Path(__file__).resolve().parent.parent
AVI = str(REPO / ".venv" / "bin" / "avi")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    """No AVI_* variable from the outer environment, and a working directory without ./avi.toml."""
    for key in list(os.environ):
        if key.startswith("AVI_"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_precedence_flag_over_env_over_file_over_default(tmp_path, monkeypatch):
    cfg = _write(tmp_path / "c.toml", 'fps = 3.0\nclip_seconds = 4.0\nmax_iterations = 7\nllm_model = "from-file"\n')
    s = Settings.load(cfg)
    assert (s.fps, s.clip_seconds, s.max_iterations, s.llm_model) == (3.0, 4.0, 7, "from-file")
    assert s.frame_budget == "auto"  # default: 128 x alpha by the video length (avi/budget.py)
    monkeypatch.setenv("AVI_FPS", "4")
    monkeypatch.setenv("AVI_MAX_ITERATIONS", "8")
    s = Settings.load(cfg, max_iterations=9)
    assert (s.fps, s.clip_seconds, s.max_iterations) == (4.0, 4.0, 9)
    assert s.config_path == cfg
    src = s.sources()
    assert src["max_iterations"] == "flag" and src["fps"] == "env AVI_FPS" and src["clip_seconds"] == "file"
    assert "frame_budget" not in src


def test_config_file_search_avi_config_then_local_avi_toml(tmp_path, monkeypatch):
    assert Settings.load().config_path is None
    local = _write(tmp_path / "avi.toml", "fps = 1.0\n")
    assert Settings.load().fps == 1.0 and Settings().fps == 1.0
    other = _write(tmp_path / "other.toml", "fps = 5.0\n")
    monkeypatch.setenv("AVI_CONFIG", str(other))
    assert Settings.load().fps == 5.0 and Settings.load().config_path == other
    assert Settings.load(local).fps == 1.0  # --config wins over AVI_CONFIG


def test_relative_paths_in_the_file_are_relative_to_the_file(tmp_path):
    (tmp_path / "conf").mkdir()
    cfg = _write(tmp_path / "conf" / "avi.toml", 'models_dir = "../weights"\nindex_root = "/abs/indexes"\n')
    s = Settings.load(cfg)
    assert s.models_dir == (tmp_path / "weights").resolve() and s.index_root == Path("/abs/indexes")


@pytest.mark.parametrize("text, expected", [
    ("llm_url = 'x'\n", "config file {f}: unknown key 'llm_url'; did you mean 'llm_base_url'?"),
    ("[llm]\nbase_url = 'x'\n", "config file {f}: unknown key 'llm'"),
    ("fps = \n", "config file {f} is not valid TOML: "),
    ("fps = 'fast'\n", "config file {f}: bad value for 'fps': Input should be a valid number"),
    ("profile = 'tpu'\n", "config file {f}: bad value for 'profile'"),
    ("[serve]\ntool_gpus = [1]\n", "config file {f}: unknown key 'serve.tool_gpus'"),
    ("[[serve.servers]]\nrole = 'vlm'\nmodel = 'm'\nserved_model_name = 'v'\nport = 99999\n",
     "config file {f}: bad value for 'serve.servers[0].port'"),
])
def test_bad_config_is_one_line_naming_file_and_key(tmp_path, text, expected):
    cfg = _write(tmp_path / "bad.toml", text)
    with pytest.raises(InputError) as info:
        Settings.load(cfg)
    msg = str(info.value)
    assert msg.startswith(expected.format(f=cfg)) and "\n" not in msg


def test_missing_config_file(tmp_path, monkeypatch):
    with pytest.raises(InputError, match="config file not found: .*nope.toml"):
        Settings.load(tmp_path / "nope.toml")
    monkeypatch.setenv("AVI_CONFIG", str(tmp_path / "gone.toml"))
    with pytest.raises(InputError, match="gone.toml"):
        Settings.load()


def test_bad_env_value_names_the_variable(monkeypatch):
    monkeypatch.setenv("AVI_FRAME_BUDGET", "many")
    with pytest.raises(InputError, match=r"^\$AVI_FRAME_BUDGET: bad value for 'frame_budget'"):
        Settings.load()


def test_gpu_profile_derives_endpoints_from_the_layout(tmp_path):
    s = Settings.load(profile="gpu")
    assert (s.llm_base_url, s.llm_model) == ("http://127.0.0.1:8000/v1", "qwen3-32b")
    assert (s.vlm_base_url, s.vlm_model) == ("http://127.0.0.1:8001/v1", "qwen3-vl-8b")
    assert (s.embedder_base_url, s.embedder_model) == ("http://127.0.0.1:8002/v1", "qwen3-embedding-4b")
    assert s.sources()["vlm_base_url"] == "derived from [serve]"
    assert s.vlm_media_dir == s.home / "vlm-media" and s.sources()["vlm_media_dir"] == "derived from [serve]"
    # explicit endpoints win; a role with a local model dir keeps it; a custom layout moves the ports
    cfg = _write(tmp_path / "c.toml", f'profile = "gpu"\nllm_base_url = "http://10.0.0.5:9000/v1"\n'
                                      f'embedder_model_dir = "{tmp_path}"\n[serve]\ntools_gpus = []\n'
                                      '[[serve.servers]]\nrole = "vlm"\nmodel = "v"\nserved_model_name = "my-vl"\n'
                                      'port = 9101\n')
    s = Settings.load(cfg)
    assert s.llm_base_url == "http://10.0.0.5:9000/v1" and s.llm_model is None
    assert s.embedder_base_url is None and s.embedder_model_dir == tmp_path
    assert (s.vlm_base_url, s.vlm_model) == ("http://127.0.0.1:9101/v1", "my-vl")
    assert s.serve_layout().servers[0].model == str(s.models_dir / "v")
    assert s.vlm_media_dir is None  # that layout's VLM reads no local files: frames go as base64
    assert Settings.load(profile="gpu", vlm_base_url="http://127.0.0.1:7000/v1").vlm_media_dir is None
    # cpu and auto profiles derive nothing
    for profile in ("cpu", "auto"):
        s = Settings.load(profile=profile)
        assert s.llm_base_url is None and s.vlm_base_url is None and s.embedder_base_url is None
    assert Settings.load().resolved_profile() == "cpu"


def test_env_layout_as_json(monkeypatch):
    monkeypatch.setenv("AVI_SERVE", json.dumps({"tools_gpus": [0], "servers": [
        {"role": "orchestrator", "model": "/m/q", "served_model_name": "q", "port": 8100}]}))
    s = Settings.load(profile="gpu")
    assert s.llm_base_url == "http://127.0.0.1:8100/v1" and s.vlm_base_url is None
    assert s.sources()["serve"] == "env AVI_SERVE"


def test_example_config_documents_the_default_layout():
    s = Settings.load(REPO / "avi.example.toml")
    assert s.profile == "gpu"
    assert s.serve == default_layout()
    text = (REPO / "avi.example.toml").read_text()
    # every [[serve.servers]] field is documented, and every commented-out `# key = value` is a real setting
    server_fields = type(default_layout().servers[0]).model_fields
    for field in server_fields:
        assert field in text, field
    known = set(Settings.model_fields) | set(server_fields) | set(type(default_layout()).model_fields)
    for line in text.splitlines():
        try:
            commented = tomllib.loads(line[2:].split("  #")[0]) if line.startswith("# ") else {}
        except tomllib.TOMLDecodeError:
            continue
        assert set(commented) <= known, line


# ---------------------------------------------------------------- avi config show


def _avi(args, cwd: Path, **env):
    e = {k: v for k, v in os.environ.items() if not k.startswith("AVI_")}
    e.update(env)
    return subprocess.run([AVI, *args], env=e, cwd=cwd, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def test_config_show_toml_round_trips_with_sources(tmp_path):
    _write(tmp_path / "avi.toml", 'profile = "gpu"\nfps = 3.0\n[serve]\ntools_gpus = [6]\n')
    r = _avi(["config", "show", "--models-dir", str(tmp_path / "m")], tmp_path, AVI_FRAME_BUDGET="12")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert f"config file: {(tmp_path / 'avi.toml').resolve()}" in out
    assert 'profile = "gpu"  # file' in out and "fps = 3.0  # file" in out
    assert "frame_budget = 12  # env AVI_FRAME_BUDGET" in out
    assert f'models_dir = "{tmp_path / "m"}"  # flag' in out
    assert 'llm_base_url = "http://127.0.0.1:8000/v1"  # derived from [serve]' in out
    assert "[serve]  # file" in out and "tools_gpus = [6]" in out and out.count("[[serve.servers]]") == 3
    data = tomllib.loads(out)
    shown = _write(tmp_path / "shown.toml", out)
    again = Settings.load(shown)
    assert again.model_dump() == Settings.load(tmp_path / "avi.toml", models_dir=tmp_path / "m",
                                               frame_budget=12).model_dump()
    assert data["serve"]["servers"][1]["data_parallel"] == 5


def test_config_show_json_and_bad_config_error(tmp_path):
    r = _avi(["config", "show", "--json", "--profile", "gpu"], tmp_path)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["config_file"] is None and data["profile"] == "gpu"
    assert data["settings"]["llm_base_url"] == "http://127.0.0.1:8000/v1"
    assert data["sources"]["profile"] == "flag" and data["sources"]["llm_model"] == "derived from [serve]"
    bad = _write(tmp_path / "bad.toml", "llm_url = 'x'\n")
    for argv, env in ((["config", "show", "--config", str(bad)], {}), (["doctor"], {"AVI_CONFIG": str(bad)}),
                      (["weights", "list"], {"AVI_CONFIG": str(bad)})):
        r = _avi(argv, tmp_path, **env)
        assert r.returncode == 2, r
        assert r.stderr.splitlines() == [f"avi: error: config file {bad}: unknown key 'llm_url'; did you mean "
                                         f"'llm_base_url'?"]
