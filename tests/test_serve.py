"""`avi serve` on the gpu profile: layout, validation, --dry-run, scripts/serve-gpu.sh, and the real launch path
(start, health check, logs, clean shutdown) with a FAKE vllm executable (tests/fake_vllm.py) on PATH."""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from fake_vllm import install_fake_vllm

from avi.errors import AviError, InputError
from avi.serve.layout import ServeLayout, ServerSpec, default_layout, server_env, vllm_command
from avi.serve.run import ServerGroup, lists_model, log_tail

REPO = Path(__file__).resolve().parent.parent
AVI = str(REPO / ".venv" / "bin" / "avi")
SCRIPT = REPO / "scripts" / "serve-gpu.sh"


def _env(tmp_path: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AVI_") and not k.startswith("FAKE_VLLM")}
    env.update(AVI_HOME=str(tmp_path / "home"), **extra)
    return env


def _avi(args: list[str], tmp_path: Path, timeout: float = 60, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([AVI, *args], env=_env(tmp_path, **env), cwd=tmp_path, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def _free_ports(n: int) -> list[int]:
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _one_line(r: subprocess.CompletedProcess) -> str:
    assert r.returncode != 0, r
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


# ---------------------------------------------------------------- layout and commands


def test_default_layout_is_the_8_gpu_node():
    layout = default_layout().validate_layout()
    by_role = {s.role: s for s in layout.servers}
    assert by_role["orchestrator"].gpus == [0, 1] and by_role["orchestrator"].tensor_parallel == 2
    assert by_role["vlm"].gpus == [2, 3, 4, 5, 6] and by_role["vlm"].data_parallel == 5
    assert by_role["embedder"].gpus == [7] == layout.tools_gpus
    assert [s.port for s in layout.servers] == [8000, 8001, 8002]
    assert layout.gpu_count() == 8
    cmd = vllm_command(by_role["embedder"])
    assert cmd[cmd.index("--runner") + 1] == "pooling" and "--task" not in cmd
    assert cmd[cmd.index("--gpu-memory-utilization") + 1] == "0.45"
    resolved = layout.resolved(Path("/m"))
    assert resolved.server("vlm").model == "/m/vlm/Qwen3-VL-8B-Instruct"
    assert resolved.server("vlm").allowed_local_media_path == "vlm-media"  # no home given: left as it is
    assert layout.resolved(Path("/m"), Path("/h")).server("vlm").allowed_local_media_path == "/h/vlm-media"


def test_vllm_command_parallelism_flags_and_python_form():
    spec = ServerSpec(role="orchestrator", model="/m/big", served_model_name="big", port=8000, gpus=list(range(8)),
                      tensor_parallel=8, pipeline_parallel=2, distributed_executor_backend="ray")
    ServeLayout(servers=[spec], tools_gpus=[]).validate_layout()  # ray: gpus are per node, PP = nodes
    cmd = vllm_command(spec)
    assert cmd[:3] == ["vllm", "serve", "/m/big"]
    for flag, value in (("--tensor-parallel-size", "8"), ("--pipeline-parallel-size", "2"),
                        ("--distributed-executor-backend", "ray"), ("--host", "127.0.0.1"), ("--port", "8000")):
        assert cmd[cmd.index(flag) + 1] == value
    assert "--enable-auto-tool-choice" in cmd and cmd[cmd.index("--tool-call-parser") + 1] == "hermes"
    py = vllm_command(spec, python="/venv/bin/python")
    assert py[:5] == ["/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m/big"]
    env = server_env(spec)
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7" and env["HF_HUB_OFFLINE"] == "1"


@pytest.mark.parametrize("servers, tools, expected", [
    ([dict(role="orchestrator", port=8000, gpus=[0, 1], tensor_parallel=2), dict(role="vlm", port=8000)], [],
     "port 8000 is used by both orchestrator and vlm"),
    ([dict(role="vlm", port=8001, gpus=[2, 3, 4], data_parallel=2)], [],
     "vlm needs tensor_parallel 1 × data_parallel 2 × pipeline_parallel 1 = 2 GPUs but gpus lists 3"),
    ([dict(role="orchestrator", port=8000, gpus=[0], tensor_parallel=2)], [], "= 2 GPUs but gpus lists 1"),
    ([dict(role="vlm", port=8001, gpus=[3]), dict(role="embedder", port=8002, gpus=[3])], [],
     "GPU 3 is shared by vlm (0.90) and embedder (0.90)"),
    ([dict(role="embedder", port=8002, gpus=[7])], [7], "GPU 7 is shared by embedder (0.90) and the CV tools (0.35)"),
    ([dict(role="vlm", port=8001), dict(role="vlm", port=8003)], [], "two servers for role vlm"),
])
def test_layout_validation_errors(servers, tools, expected):
    specs = [ServerSpec(model="m", served_model_name=f"s{i}", **kw) for i, kw in enumerate(servers)]
    with pytest.raises(InputError, match=re.escape(expected)):
        ServeLayout(servers=specs, tools_gpus=tools).validate_layout()


def test_shared_gpu_fits_with_lower_memory_fractions():
    specs = [ServerSpec(role="vlm", model="m", served_model_name="v", port=1, gpus=[0], gpu_memory_utilization=0.5),
             ServerSpec(role="embedder", model="m", served_model_name="e", port=2, gpus=[0],
                        gpu_memory_utilization=0.3)]
    ServeLayout(servers=specs, tools_gpus=[0], tools_memory_fraction=0.2).validate_layout()


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "::1"])
def test_loopback_hosts_are_allowed(host):
    spec = ServerSpec(role="vlm", model="m", served_model_name="v", port=8001, host=host)
    ServeLayout(servers=[spec], tools_gpus=[]).validate_layout()
    assert spec.loopback and vllm_command(spec).count("--host") == 1


@pytest.mark.parametrize("kw", [dict(host="0.0.0.0"), dict(host="::"), dict(host="192.168.1.20"),
                                dict(extra_args=["--host", "0.0.0.0"]), dict(extra_args=["--host=10.0.0.5"])])
def test_a_host_that_is_not_loopback_needs_allow_remote(kw):
    """A [serve] setting could make vLLM listen on every interface while the table said 127.0.0.1 (issue 39)."""
    spec = ServerSpec(role="orchestrator", model="m", served_model_name="o", port=8000, **kw)
    with pytest.raises(InputError, match="the orchestrator server would listen on .*allow_remote = true"):
        ServeLayout(servers=[spec], tools_gpus=[]).validate_layout()
    layout = ServeLayout(servers=[spec], tools_gpus=[], allow_remote=True).validate_layout()
    cmd = vllm_command(spec)
    assert cmd.count("--host") == 1 and cmd[cmd.index("--host") + 1] == spec.host != "127.0.0.1"
    assert not any(a.startswith("--host") for a in spec.extra_args)
    assert spec.address in layout.placement_table()
    assert dict(layout.exports())["AVI_LLM_BASE_URL"].startswith("http://")


@pytest.mark.parametrize("extra", [["--hos", "0.0.0.0"], ["--ho=0.0.0.0"], ["--h", "0.0.0.0"],
                                   ["--max-num-seqs", "8", "--host", "127.0.0.1", "--hos=0.0.0.0"],
                                   ["--config", "vllm.yaml", "--ho", "0.0.0.0", "--max-num-seqs", "8"]])
def test_an_abbreviated_host_in_extra_args_is_the_servers_host(extra):
    """Issue 55, item 9: vLLM's argparse takes any unambiguous prefix of --host; so does avi's reading of
    extra_args, and avi's own --host/--port come last on the command line: no spelling binds 0.0.0.0 behind a
    table that says 127.0.0.1."""
    spec = ServerSpec(role="orchestrator", model="m", served_model_name="o", port=8000, extra_args=extra)
    assert spec.host == "0.0.0.0" and not spec.loopback
    assert not any(a.startswith("--h") for a in spec.extra_args)
    with pytest.raises(InputError, match="would listen on 0.0.0.0:8000.*allow_remote = true"):
        ServeLayout(servers=[spec], tools_gpus=[]).validate_layout()
    cmd = vllm_command(spec)
    assert cmd[-4:] == ["--host", "0.0.0.0", "--port", "8000"]
    with pytest.raises(ValueError, match="expected one argument"):
        ServerSpec(role="vlm", model="m", served_model_name="v", port=8001, extra_args=["--max-num-seqs", "8", "--ho"])


def test_avis_own_host_and_port_come_last():
    """Whatever extra_args hold, the last --host/--port of the command are avi's (argparse: the last one wins)."""
    import argparse

    spec = ServerSpec(role="vlm", model="m", served_model_name="v", port=8001, extra_args=["--max-num-seqs", "8"])
    parser = argparse.ArgumentParser(allow_abbrev=True)
    parser.add_argument("--host")
    parser.add_argument("--port")
    got, _ = parser.parse_known_args(vllm_command(spec)[3:])
    assert (got.host, got.port) == ("127.0.0.1", "8001")


def test_extra_args_port_and_host_become_the_servers_own():
    spec = ServerSpec(role="vlm", model="m", served_model_name="v", port=8001,
                      extra_args=["--max-num-seqs", "8", "--port=9001", "--host", "127.0.0.5"])
    assert (spec.host, spec.port, spec.extra_args) == ("127.0.0.5", 9001, ["--max-num-seqs", "8"])
    cmd = vllm_command(spec)
    assert cmd.count("--port") == 1 and cmd[cmd.index("--port") + 1] == "9001"
    assert spec.base_url == "http://127.0.0.5:9001/v1"
    wild = ServerSpec(role="vlm", model="m", served_model_name="v", port=8001, host="::")
    assert wild.base_url == "http://127.0.0.1:8001/v1" and wild.address == "[::]:8001"
    with pytest.raises(ValueError, match="not a port number"):
        ServerSpec(role="vlm", model="m", served_model_name="v", port=8001, extra_args=["--port", "http"])


def test_dry_run_refuses_a_remote_host_and_shows_an_allowed_one(tmp_path):
    cfg = tmp_path / "avi.toml"
    cfg.write_text('[serve]\ntools_gpus = []\n[[serve.servers]]\nrole = "orchestrator"\nmodel = "/abs/q"\n'
                   'served_model_name = "q"\nport = 8000\nextra_args = ["--host", "0.0.0.0"]\n')
    r = _avi(["serve", "--dry-run", "--config", str(cfg)], tmp_path)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert "would listen on 0.0.0.0:8000" in r.stderr and "allow_remote = true" in r.stderr
    cfg.write_text(cfg.read_text().replace("tools_gpus = []", "tools_gpus = []\nallow_remote = true"))
    r = _avi(["serve", "--dry-run", "--config", str(cfg)], tmp_path)
    assert r.returncode == 0, r.stderr
    row = next(line for line in r.stdout.splitlines() if line.startswith("any") and "orchestrator" in line)
    assert row.split()[-1] == "0.0.0.0:8000"
    cmd = next(shlex.split(line) for line in r.stdout.splitlines() if " serve /abs/q" in line)
    assert cmd.count("--host") == 1 and cmd[cmd.index("--host") + 1] == "0.0.0.0"
    assert "export AVI_LLM_BASE_URL=http://127.0.0.1:8000/v1" in r.stdout


# ---------------------------------------------------------------- dry run and the shell script


def _dry_run_commands(stdout: str) -> list[list[str]]:
    return [shlex.split(line) for line in stdout.splitlines() if line.startswith("CUDA_VISIBLE_DEVICES=")]


def test_dry_run_default_layout_without_vllm_or_gpus(tmp_path):
    r = _avi(["serve", "--dry-run", "--models-dir", "/models"], tmp_path)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "the default 8-GPU layout (no [serve] table configured); 8 GPUs" in out
    assert f"{tmp_path / 'home' / 'logs' / 'serve'}/<role>.log" in out
    table = {line.split()[0] + " " + line.split()[1]: line for line in out.splitlines()
             if re.match(r"^\d\s", line)}
    assert "TP 2" in table["0 orchestrator"] and "TP 2" in table["1 orchestrator"]
    assert all("DP 5" in table[f"{g} vlm"] for g in range(2, 7))
    assert "0.45" in table["7 embedder"] and "7 CV" in table
    cmds = _dry_run_commands(out)
    assert [c[0] for c in cmds] == ["CUDA_VISIBLE_DEVICES=0,1", "CUDA_VISIBLE_DEVICES=2,3,4,5,6",
                                    "CUDA_VISIBLE_DEVICES=7"]
    assert cmds[0][1:4] == ["vllm", "serve", "/models/llm/Qwen3-32B"]
    assert cmds[1][cmds[1].index("--limit-mm-per-prompt") + 1] == '{"image": 64, "video": 0}'
    media = tmp_path / "home" / "vlm-media"  # the VLM reads avi's frames as files there; avi is told where
    assert cmds[1][cmds[1].index("--allowed-local-media-path") + 1] == str(media)
    assert "--allowed-local-media-path" not in cmds[0] + cmds[2]
    assert f"export AVI_VLM_MEDIA_DIR={media}" in out
    assert "export AVI_LLM_BASE_URL=http://127.0.0.1:8000/v1" in out
    assert "export AVI_EMBEDDER_MODEL=qwen3-embedding-4b" in out and "export CUDA_VISIBLE_DEVICES=7" in out


def test_serve_script_matches_dry_run():
    text = SCRIPT.read_text().replace("\\\n", " ")
    script = []
    for line in text.splitlines():
        if line.startswith("start ") and "()" not in line:
            argv = shlex.split(line)
            script.append(["CUDA_VISIBLE_DEVICES=" + argv[2]]
                          + [a.replace("$MODELS", "/models").replace("$MEDIA", "/home/vlm-media") for a in argv[3:]])
    layout = default_layout().resolved(Path("/models"), Path("/home"))
    from avi.serve.layout import command_line

    assert script == [shlex.split(command_line(s)) for s in layout.servers]
    # the offline switches and the exports match too
    exports = re.search(r"^export (HF_HUB_OFFLINE=.*)$", text, re.M).group(1).split()
    assert dict(e.split("=") for e in exports) == {k: v for k, v in server_env(layout.servers[0]).items()
                                                   if k != "CUDA_VISIBLE_DEVICES"}
    for key, value in layout.exports():
        if key == "AVI_VLM_MEDIA_DIR":  # the script's path depends on $AVI_HOME, so it is echoed, not quoted
            assert value == "/home/vlm-media" and 'echo "export AVI_VLM_MEDIA_DIR=$MEDIA"\n' in text
            continue
        assert f"export {key}={value}\n" in text
    for s in layout.servers:
        assert f"wait_ready {s.role} " in text and f" {s.port} {s.served_model_name}\n" in text
    assert subprocess.run(["bash", "-n", str(SCRIPT)]).returncode == 0


def test_dry_run_with_configured_layout_and_bad_layout(tmp_path):
    ports = _free_ports(1)
    cfg = tmp_path / "avi.toml"
    cfg.write_text(f'[serve]\ntools_gpus = []\n[[serve.servers]]\nrole = "orchestrator"\nmodel = "/abs/q"\n'
                   f'served_model_name = "q"\nport = {ports[0]}\ngpus = [0, 1, 2, 3]\ntensor_parallel = 4\n')
    r = _avi(["serve", "--dry-run"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"[serve] from {cfg}" in r.stdout
    assert _dry_run_commands(r.stdout)[0][:4] == ["CUDA_VISIBLE_DEVICES=0,1,2,3", "vllm", "serve", "/abs/q"]
    cfg.write_text(cfg.read_text().replace("tensor_parallel = 4", "tensor_parallel = 2"))
    line = _one_line(_avi(["serve", "--dry-run"], tmp_path))
    assert "orchestrator needs tensor_parallel 2" in line and "gpus lists 4" in line


# ---------------------------------------------------------------- the launch path, with a fake vllm


def _fake_setup(tmp_path: Path, roles=("orchestrator", "vlm", "embedder")) -> tuple[Path, dict, list[int]]:
    install_fake_vllm(tmp_path / "bin")
    (tmp_path / "pids").mkdir()
    ports = _free_ports(len(roles))
    lines = ["profile = \"gpu\"", f"models_dir = \"{tmp_path / 'models'}\"", "[serve]", "tools_gpus = [3]",
             "start_timeout_s = 30"]
    for i, (role, port) in enumerate(zip(roles, ports)):
        (tmp_path / "models" / role).mkdir(parents=True)
        lines += ["[[serve.servers]]", f'role = "{role}"', f'model = "{role}"', f'served_model_name = "fake-{role}"',
                  f"port = {port}", f"gpus = [{i}]", "gpu_memory_utilization = 0.5"]
        if role == "vlm":
            lines.append('allowed_local_media_path = "frames"')  # relative: under avi's home
    (tmp_path / "avi.toml").write_text("\n".join(lines) + "\n")
    env = _env(tmp_path, PATH=f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
               FAKE_VLLM_PIDS=str(tmp_path / "pids"))
    return tmp_path / "avi.toml", env, ports


def _pids(tmp_path: Path) -> dict[str, int]:
    return {p.stem: int(p.read_text()) for p in (tmp_path / "pids").glob("*.pid")}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie child of a dead parent is gone for our purposes
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_serve_starts_checks_health_and_stops_cleanly(tmp_path):
    _, env, ports = _fake_setup(tmp_path)
    proc = subprocess.Popen([AVI, "serve"], env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, stdin=subprocess.DEVNULL)
    out = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            out.append(line)
            if line.startswith("serving;"):
                break
        text = "".join(out)
        assert "serving; Ctrl-C or SIGTERM stops every server" in text, (text, proc.stderr.read())
        for role, port in zip(("orchestrator", "vlm", "embedder"), ports):
            assert re.search(rf"^ready  {role}\s+fake-{role}\s+http://127.0.0.1:{port}/v1", text, re.M), text
            assert lists_model(ServerSpec(role=role, model="-", served_model_name=f"fake-{role}", port=port))
        assert f"export AVI_LLM_BASE_URL=http://127.0.0.1:{ports[0]}/v1" in text
        assert "export AVI_VLM_MODEL=fake-vlm" in text and "export CUDA_VISIBLE_DEVICES=3" in text
        media = tmp_path / "home" / "frames"
        assert media.is_dir() and f"export AVI_VLM_MEDIA_DIR={media}" in text  # created before vLLM starts
        pids = _pids(tmp_path)
        assert sorted(pids) == ["fake-embedder", "fake-orchestrator", "fake-vlm"]
        proc.send_signal(signal.SIGTERM)
        rest, err = proc.communicate(timeout=40)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "stopped 3 server(s)" in rest
    assert not any(_alive(p) for p in pids.values())
    logs = tmp_path / "home" / "logs" / "serve"
    for i, role in enumerate(("orchestrator", "vlm", "embedder")):
        log = (logs / f"{role}.log").read_text()
        assert log.startswith(f"# avi serve: CUDA_VISIBLE_DEVICES={i} vllm serve {tmp_path / 'models' / role} ")
        assert f"fake vllm env: CUDA_VISIBLE_DEVICES={i} HF_HUB_OFFLINE=1" in log
        assert "--gpu-memory-utilization" in log and "fake vllm: SIGTERM, shutting down" in log


def test_serve_failure_names_the_server_and_its_log_tail(tmp_path):
    _, env, _ = _fake_setup(tmp_path)
    env["FAKE_VLLM_FAIL"] = "fake-vlm"
    r = subprocess.run([AVI, "serve"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    line = _one_line(r)
    assert r.returncode == 1
    assert "vlm server exited with status 1 before it was ready" in line
    assert "ValueError: fake vllm cannot load" in line and "vlm.log" in line
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in _pids(tmp_path).values()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in _pids(tmp_path).values())


def test_serve_without_vllm_and_with_missing_model_dir(tmp_path):
    _, env, _ = _fake_setup(tmp_path)
    (tmp_path / "bin" / "vllm").unlink()
    env["PATH"] = "/usr/bin:/bin"
    line = _one_line(subprocess.run([AVI, "serve"], env=env, cwd=tmp_path, capture_output=True, text=True,
                                    timeout=60, stdin=subprocess.DEVNULL))
    assert "cannot start the orchestrator server (vllm:" in line and "install vLLM" in line
    (tmp_path / "models" / "vlm").rmdir()
    line = _one_line(subprocess.run([AVI, "serve"], env=env, cwd=tmp_path, capture_output=True, text=True,
                                    timeout=60, stdin=subprocess.DEVNULL))
    assert f"vlm server: model directory {tmp_path / 'models' / 'vlm'} not found" in line


def test_group_kills_a_server_that_ignores_sigterm_and_times_out(tmp_path, monkeypatch):
    install_fake_vllm(tmp_path / "bin")
    (tmp_path / "pids").mkdir()
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_VLLM_PIDS", str(tmp_path / "pids"))
    monkeypatch.setenv("FAKE_VLLM_IGNORE_TERM", "stubborn")
    port, = _free_ports(1)
    spec = ServerSpec(role="orchestrator", model=str(tmp_path), served_model_name="stubborn", port=port)
    group = ServerGroup(ServeLayout(servers=[spec], tools_gpus=[]), tmp_path / "logs", stop_timeout_s=0.5,
                        poll_s=0.1)
    with group:
        group.wait_ready(timeout_s=30)
        proc = group.running[0].proc
    assert proc.returncode == -signal.SIGKILL
    # a server that never lists its model: a timeout naming it and its log's tail
    monkeypatch.setenv("FAKE_VLLM_DELAY_S", "30")
    with ServerGroup(ServeLayout(servers=[spec], tools_gpus=[]), tmp_path / "logs", stop_timeout_s=0.5,
                     poll_s=0.1) as group:
        with pytest.raises(AviError, match=r"orchestrator server did not list model 'stubborn' .* within 1 s "
                                           r".*fake vllm env: CUDA_VISIBLE_DEVICES= HF_HUB_OFFLINE=1"):
            group.wait_ready(timeout_s=1)


def test_log_tail_is_one_line(tmp_path):
    log = tmp_path / "x.log"
    log.write_text("a\n\n  b   c \n" + "\n".join(f"line {i}" for i in range(20)) + "\n")
    assert log_tail(log, lines=3) == "line 17 | line 18 | line 19"
    assert log_tail(tmp_path / "missing.log") == "(no log)"

