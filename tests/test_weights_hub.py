"""hf entries of weights.lock: lock and fetch against a FAKE hub on 127.0.0.1 (tests/fake_hub.py), verify,
check_model_dir (the loaders' refusal), pack/unpack across the air gap, and the ``avi weights`` CLI.

Nothing here contacts the real Hugging Face Hub: ``HF_ENDPOINT`` points at the fake, and the suite's network
guard refuses every non-loopback connection. What is real: huggingface_hub's client code (model_info,
hf_hub_download, snapshot_download), tomlkit, tarfile, the hashing and the CLI.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import avi.weights.checks as weights  # its record and hashing are patched below
from avi.errors import InputError, WeightsError
from avi.weights import UnpinnedWeightsError, check_model_dir, entry_state, load_lock, select_entries, verify

sys.path.insert(0, str(Path(__file__).parent))
from fake_hub import FakeHub  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
REPO_ID = "org/tiny-vlm"
FILES = {"config.json": b'{"model_type": "tiny"}', "model.safetensors": bytes(range(256)) * 40,
         "tokenizer/vocab.txt": b"[PAD]\nhello\n", "README.md": b"# not locked\n", "onnx/model.onnx": b"nope"}
LOCK_TEXT = '''# weights.lock for tests — this comment must survive `avi weights lock`
[[weight]]
name = "tiny-vlm"
role = "vlm (gpu)"
profile = "gpu"
path = "vlm/tiny-vlm"
license = "Apache-2.0"
pinned = false   # avi weights lock sets this
[weight.source]
kind = "hf"
repo = "org/tiny-vlm"
revision = ""
# only what the loader reads
include = ["*.json", "*.safetensors", "tokenizer/*"]
require = ["*.safetensors"]

[[weight]]
name = "tiny-unpinned"
role = "clip (gpu)"
profile = "gpu"
path = "clip/tiny-unpinned"
license = "unverified"
pinned = false
[weight.source]
kind = "hf"
repo = "org/never-locked"
revision = ""

[[weight]]
name = "cpu-file"
role = "ocr (cpu)"
profile = "cpu"
path = "ocr/cpu.onnx"
sha256 = "{cpu_sha}"
size = 9
[weight.source]
kind = "pypi-file"
module = "nonexistent_pkg"
file = "cpu.onnx"
'''
CPU_BYTES = b"cpu bytes"


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


@pytest.fixture
def hub(monkeypatch):
    h = FakeHub()
    monkeypatch.setenv("HF_ENDPOINT", h.url)
    h.commit(REPO_ID, FILES)
    yield h
    h.close()


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A lock, an empty models dir, and the CLI pointed at both (AVI_WEIGHTS_LOCK, AVI_MODELS_DIR)."""
    lock = tmp_path / "weights.lock"
    lock.write_text(LOCK_TEXT.replace("{cpu_sha}", _sha(CPU_BYTES)))
    models = tmp_path / "models"
    models.mkdir()
    (models / "ocr").mkdir()
    (models / "ocr" / "cpu.onnx").write_bytes(CPU_BYTES)
    monkeypatch.setenv("AVI_WEIGHTS_LOCK", str(lock))
    monkeypatch.setenv("AVI_MODELS_DIR", str(models))
    monkeypatch.chdir(tmp_path)
    return lock, models


def cli(capsys, *argv) -> tuple[int, str, str]:
    """``avi ARGV`` in-process: (exit status, stdout, stderr)."""
    from avi.cli import main

    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


@pytest.fixture
def locked(env, hub, capsys):
    """The env with tiny-vlm locked and fetched from the fake hub."""
    rc, out, err = cli(capsys, "weights", "lock", "tiny-vlm")
    assert rc == 0, err
    rc, out, err = cli(capsys, "weights", "fetch", "tiny-vlm")
    assert rc == 0, err
    return env


# ----------------------------------------------------------------- lock


def test_lock_fills_revision_sizes_hashes_and_keeps_comments(env, hub, capsys):
    lock, _ = env
    rc, out, err = cli(capsys, "weights", "lock")  # both hf entries; org/never-locked is not on the hub
    assert rc == 4
    assert "locked  tiny-vlm" in out
    assert err.count("\n") == 1 and "1 entry not locked (1 others were)" in err and "org/never-locked" in err
    text = lock.read_text()
    assert "# weights.lock for tests — this comment must survive `avi weights lock`" in text
    assert "# only what the loader reads" in text and "# avi weights lock sets this" in text
    e = load_lock(lock)["tiny-vlm"]
    assert e.is_pinned and e.pinned is True
    assert e.revision == hub.repos[REPO_ID]["refs"]["main"]
    got = {f.path: (f.size, f.sha256) for f in e.files}
    want = {p: (len(b), _sha(b)) for p, b in FILES.items() if p not in ("README.md", "onnx/model.onnx")}
    assert got == want  # LFS hash from metadata (safetensors) and downloaded+hashed small files alike
    assert load_lock(lock)["cpu-file"].sha256 == _sha(CPU_BYTES)  # pypi entries are left alone
    assert not load_lock(lock)["tiny-unpinned"].is_pinned


def test_lock_unknown_repo_is_one_line_error(env, hub, capsys):
    rc, out, err = cli(capsys, "weights", "lock", "tiny-unpinned")
    assert rc == 4
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "org/never-locked" in lines[0] and "connected machine" in lines[0]
    assert not load_lock(env[0])["tiny-unpinned"].is_pinned


def test_lock_is_idempotent_and_update_moves_to_new_commit(env, hub, capsys):
    lock, _ = env
    assert cli(capsys, "weights", "lock", "tiny-vlm")[0] == 0
    first = lock.read_text()
    rc, out, _ = cli(capsys, "weights", "lock", "tiny-vlm")
    assert rc == 0 and "same" in out and "0 of 1 hf entries changed" in out
    assert lock.read_text() == first
    new = dict(FILES, **{"config.json": b'{"model_type": "tiny", "v": 2}'})
    commit2 = hub.commit(REPO_ID, new)
    assert cli(capsys, "weights", "lock", "tiny-vlm")[0] == 0  # without --update: stays at the pinned commit
    assert load_lock(lock)["tiny-vlm"].revision != commit2
    assert cli(capsys, "weights", "lock", "tiny-vlm", "--update")[0] == 0
    e = load_lock(lock)["tiny-vlm"]
    assert e.revision == commit2
    assert {f.path: f.sha256 for f in e.files}["config.json"] == _sha(new["config.json"])


def test_lock_require_guards_against_repo_without_weights(env, hub):
    from avi.weights.hub import lock_entries

    lock, _ = env
    hub.commit(REPO_ID, {"config.json": b"{}"})
    with pytest.raises(WeightsError, match=r"required pattern '\*\.safetensors'"):
        lock_entries(lock, ["tiny-vlm"], say=lambda s: None)
    assert not load_lock(lock)["tiny-vlm"].is_pinned  # nothing written


# ----------------------------------------------------------------- fetch


def test_fetch_downloads_only_locked_files_and_verifies(locked, hub):
    lock, models = locked
    d = models / "vlm" / "tiny-vlm"
    assert sorted(str(p.relative_to(d)) for p in d.rglob("*") if p.is_file()) == \
        ["config.json", "model.safetensors", "tokenizer/vocab.txt"]
    assert (d / "model.safetensors").read_bytes() == FILES["model.safetensors"]
    assert not (models / ".download").exists()
    fetched = {p for m, p in hub.requests if m == "GET" and "/resolve/" in p}
    assert not any(p.endswith(("README.md", "model.onnx")) for p in fetched)
    assert verify(load_lock(lock)["tiny-vlm"], models, full=True) == d


def test_fetch_keeps_good_files_and_replaces_bad(locked, hub, capsys):
    lock, models = locked
    d = models / "vlm" / "tiny-vlm"
    (d / "config.json").write_bytes(b'{"model_type": "evil"}')
    hub.requests.clear()
    rc, out, err = cli(capsys, "weights", "fetch", "tiny-vlm")
    assert rc == 0, err
    gets = [p for m, p in hub.requests if m == "GET" and "/resolve/" in p]
    assert len(gets) == 1 and gets[0].endswith("/config.json")
    assert (d / "config.json").read_bytes() == FILES["config.json"]


def test_fetch_refuses_tampered_download_and_keeps_existing(locked, hub, capsys):
    lock, models = locked
    d = models / "vlm" / "tiny-vlm"
    (d / "model.safetensors").unlink()
    good_config = (d / "config.json").read_bytes()
    hub.tamper(REPO_ID, "model.safetensors", b"X" * len(FILES["model.safetensors"]))
    rc, out, err = cli(capsys, "weights", "fetch", "tiny-vlm")
    assert rc == 4
    assert "model.safetensors does not match weights.lock" in err and "nothing was replaced" in err
    assert not (d / "model.safetensors").exists()
    assert (d / "config.json").read_bytes() == good_config


def test_fetch_unpinned_entry_says_lock_first(env, hub, capsys):
    rc, out, err = cli(capsys, "weights", "fetch", "tiny-unpinned")
    assert rc == 4 and "avi weights lock tiny-unpinned" in err


# ----------------------------------------------------------------- verify and list


def test_verify_ok_then_tampered_file_named_exit_4(locked, capsys):
    lock, models = locked
    rc, out, err = cli(capsys, "weights", "verify", "tiny-vlm")
    assert rc == 0 and out.startswith("ok    tiny-vlm"), err
    f = models / "vlm" / "tiny-vlm" / "model.safetensors"
    data = bytearray(f.read_bytes())
    data[100] ^= 0xFF
    st = f.stat()
    f.write_bytes(bytes(data))
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size and mtime: only a full verify can tell
    rc, out, err = cli(capsys, "weights", "verify", "tiny-vlm")
    assert rc == 4
    assert "vlm/tiny-vlm/model.safetensors has sha256" in err and "weights.lock says" in err
    assert err.strip().splitlines()[-1].startswith("avi: error: 1 weight entry failed")


def test_verify_missing_file_named(locked, capsys):
    lock, models = locked
    (models / "vlm" / "tiny-vlm" / "tokenizer" / "vocab.txt").unlink()
    rc, out, err = cli(capsys, "weights", "verify", "tiny-vlm")
    assert rc == 4 and "vlm/tiny-vlm/tokenizer/vocab.txt missing" in err


def test_verify_reports_unpinned_not_ok(env, capsys):
    lock, models = env
    d = models / "clip" / "tiny-unpinned"
    d.mkdir(parents=True)
    (d / "model.safetensors").write_bytes(b"anything")
    rc, out, err = cli(capsys, "weights", "verify", "--profile", "gpu")
    assert rc == 4
    assert "UNPINNED tiny-unpinned" in err and "not verified" in err
    assert "ok    tiny-unpinned" not in out
    assert "1 unpinned (not verified)" in err


def test_verify_subprocess_exit_4(locked):
    """The installed console script, as an operator runs it on the air-gapped machine."""
    lock, models = locked
    f = models / "vlm" / "tiny-vlm" / "config.json"
    f.write_bytes(f.read_bytes().replace(b"tiny", b"tinx"))
    r = subprocess.run([str(REPO / ".venv" / "bin" / "avi"), "weights", "verify", "--profile", "gpu"],
                       capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert r.returncode == 4, r.stderr
    assert "config.json has sha256" in r.stderr and "Traceback" not in r.stderr
    assert "UNPINNED tiny-unpinned" not in r.stderr  # absent + unpinned: reported as missing
    assert "FAIL  tiny-unpinned" in r.stderr


def test_list_shows_profile_pinned_and_state(locked, capsys):
    rc, out, err = cli(capsys, "weights", "list")
    assert rc == 0, err
    rows = {line.split()[0]: line.split() for line in out.splitlines()}
    assert set(rows) == {"tiny-vlm", "tiny-unpinned", "cpu-file"}
    assert {"gpu", "pinned", "present", "verified"} <= set(rows["tiny-vlm"])
    assert "unpinned" in rows["tiny-unpinned"] and "missing" in rows["tiny-unpinned"]
    assert "verified" not in rows["tiny-unpinned"]
    rc, out, _ = cli(capsys, "weights", "list", "--profile", "cpu")
    assert [line.split()[0] for line in out.splitlines()] == ["cpu-file"]


def test_select_entries_profiles(env):
    entries = load_lock(env[0])
    assert list(select_entries(entries, "gpu")) == ["tiny-vlm", "tiny-unpinned"]
    assert list(select_entries(entries, "cpu")) == ["cpu-file"]
    assert len(select_entries(entries, "all")) == 3
    with pytest.raises(WeightsError):
        select_entries(entries, "tpu")


# ----------------------------------------------------------------- check_model_dir (the loaders' gate)


def test_check_model_dir(locked, monkeypatch, caplog, tmp_path):
    lock, models = locked
    d = models / "vlm" / "tiny-vlm"
    assert check_model_dir(d, models, lock) == "verified"
    assert check_model_dir(None, models, lock) == "unset"
    own = tmp_path / "my-own-model"
    own.mkdir()
    assert check_model_dir(own, models, lock) == "unlocked"
    # unchanged files are not hashed again (the record in models/.avi-verified.json), even in a new process
    weights._VERIFIED.clear()
    calls = []
    real = weights.sha256_file
    monkeypatch.setattr(weights, "sha256_file", lambda p, *a: calls.append(p) or real(p, *a))
    assert check_model_dir(d, models, lock) == "verified" and calls == []
    assert entry_state(load_lock(lock)["tiny-vlm"], models) == ("present", True)
    # a changed file (new mtime) is hashed and refused, naming the file
    f = d / "config.json"
    f.write_bytes(f.read_bytes().replace(b"tiny", b"tinx"))
    with pytest.raises(WeightsError, match=r"vlm/tiny-vlm/config.json has sha256"):
        check_model_dir(d, models, lock)
    assert entry_state(load_lock(lock)["tiny-vlm"], models) == ("present", False)
    # a wrong size is caught without hashing, whatever the record says
    g = d / "tokenizer" / "vocab.txt"
    st = g.stat()
    g.write_bytes(b"short")
    os.utime(g, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(WeightsError, match=r"tokenizer/vocab.txt is 5 bytes, weights.lock says"):
        check_model_dir(d, models, lock)


def test_check_model_dir_unpinned_warns(env, caplog):
    lock, models = env
    d = models / "clip" / "tiny-unpinned"
    d.mkdir(parents=True)
    (d / "config.json").write_text("{}")
    with caplog.at_level(logging.WARNING, logger="avi.weights"):
        assert check_model_dir(d, models, lock) == "unpinned"
    assert "unpinned in weights.lock: not verified" in caplog.text


def test_backend_refuses_tampered_locked_dir(locked):
    """The detector role (Grounding-DINO dir) refuses to start when its locked directory fails the lock."""
    from avi.backends import Backends
    from avi.config import Settings

    lock, models = locked
    d = models / "vlm" / "tiny-vlm"
    (d / "tokenizer" / "vocab.txt").unlink()
    s = Settings(models_dir=models, weights_lock=lock, detector_model_dir=d)
    with pytest.raises(WeightsError, match="tokenizer/vocab.txt missing"):
        _ = Backends(s).detector


def test_resolve_unpinned_returns_path_with_warning(env, caplog):
    lock, models = env
    d = models / "clip" / "tiny-unpinned"
    d.mkdir(parents=True)
    (d / "x").write_text("x")
    with caplog.at_level(logging.WARNING, logger="avi.weights"):
        assert weights.resolve("tiny-unpinned", models, lock) == d
    assert "not verified" in caplog.text
    with pytest.raises(UnpinnedWeightsError):
        verify(load_lock(lock)["tiny-unpinned"], models)


# ----------------------------------------------------------------- pack / unpack


def test_pack_unpack_round_trip(locked, tmp_path, capsys, monkeypatch):
    lock, models = locked
    tar_path = tmp_path / "carry.tar"
    rc, out, err = cli(capsys, "weights", "pack", "--out", str(tar_path))
    assert rc == 0, err
    assert "skip  tiny-unpinned: not present" in out and "packed tiny-vlm" in out and "packed cpu-file" in out
    with tarfile.open(tar_path) as tar:
        names = sorted(tar.getnames())
        manifest = json.loads(tar.extractfile("MANIFEST.json").read())
        assert tar.extractfile("weights.lock").read() == lock.read_bytes()
    assert names == ["MANIFEST.json", "models/ocr/cpu.onnx", "models/vlm/tiny-vlm/config.json",
                     "models/vlm/tiny-vlm/model.safetensors", "models/vlm/tiny-vlm/tokenizer/vocab.txt",
                     "weights.lock"]
    assert manifest["format"] == "avi-weights-pack/1"
    assert [e["name"] for e in manifest["entries"]] == ["tiny-vlm", "cpu-file"]
    fresh = tmp_path / "airgapped-models"
    monkeypatch.setenv("AVI_MODELS_DIR", str(fresh))
    rc, out, err = cli(capsys, "weights", "unpack", str(tar_path))
    assert rc == 0, err
    assert "ok    tiny-vlm" in out and "ok    cpu-file" in out
    rc, out, err = cli(capsys, "weights", "verify", "tiny-vlm", "cpu-file")
    assert rc == 0, err
    assert not list(fresh.glob(".unpack-*"))


def test_pack_named_unpinned_entry_is_an_error(locked, capsys, tmp_path):
    rc, out, err = cli(capsys, "weights", "pack", "tiny-unpinned", "--out", str(tmp_path / "x.tar"))
    assert rc == 4 and "unpinned" in err
    assert not (tmp_path / "x.tar").exists()


def _rewrite_tar(src: Path, dst: Path, change) -> None:
    """Copy a tarball member by member; ``change(info, data)`` returns the (info, data) to write, or None."""
    with tarfile.open(src) as tin, tarfile.open(dst, "w") as tout:
        for m in tin.getmembers():
            data = tin.extractfile(m).read() if m.isfile() else None
            res = change(m, data)
            if res is None:
                continue
            info, data = res
            if data is not None:
                info.size = len(data)
            tout.addfile(info, io.BytesIO(data) if data is not None else None)


@pytest.fixture
def packed(locked, tmp_path, capsys):
    lock, models = locked
    tar_path = tmp_path / "carry.tar"
    assert cli(capsys, "weights", "pack", "tiny-vlm", "--out", str(tar_path))[0] == 0
    return lock, models, tar_path


def test_unpack_refuses_path_traversal(packed, tmp_path, capsys):
    lock, models, tar_path = packed
    evil = tmp_path / "evil.tar"

    def add_escape(info, data):
        if info.name == "models/vlm/tiny-vlm/config.json":
            info.name = "models/../../escaped.txt"
        return info, data

    _rewrite_tar(tar_path, evil, add_escape)
    target = tmp_path / "fresh"
    rc, out, err = cli(capsys, "weights", "unpack", str(evil), "--models-dir", str(target))
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "models/../../escaped.txt" in lines[0] and "'..'" in lines[0]
    assert not (tmp_path / "escaped.txt").exists() and not target.exists()


def test_unpack_refuses_symlink_member(packed, tmp_path):
    from avi.weights.pack import unpack

    lock, models, tar_path = packed
    evil = tmp_path / "link.tar"

    def add_link(info, data):
        if info.name == "models/vlm/tiny-vlm/config.json":
            info.type, info.linkname, data = tarfile.SYMTYPE, "/etc/passwd", None
            info.size = 0
        return info, data

    _rewrite_tar(tar_path, evil, add_link)
    with pytest.raises(InputError, match="link or device"):
        unpack(evil, tmp_path / "fresh", lock)


def test_unpack_refuses_tampered_file_and_keeps_good_existing(packed, tmp_path, capsys):
    lock, models, tar_path = packed
    bad = tmp_path / "bad.tar"

    def flip(info, data):
        if info.name.endswith("model.safetensors"):
            data = bytes([data[0] ^ 1]) + data[1:]
        return info, data

    _rewrite_tar(tar_path, bad, flip)
    before = (models / "vlm" / "tiny-vlm" / "model.safetensors").read_bytes()
    rc, out, err = cli(capsys, "weights", "unpack", str(bad))  # into the models dir that has the good copy
    assert rc == 4
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert "vlm/tiny-vlm/model.safetensors has sha256" in lines[0] and "nothing was installed" in lines[0]
    assert (models / "vlm" / "tiny-vlm" / "model.safetensors").read_bytes() == before
    assert not list(models.glob(".unpack-*"))


def test_unpack_refuses_file_not_in_local_lock(packed, tmp_path, monkeypatch):
    from avi.weights.pack import unpack

    lock, models, tar_path = packed
    other = tmp_path / "other.lock"
    other.write_text(lock.read_text().replace('path = "tokenizer/vocab.txt"', 'path = "tokenizer/other.txt"'))
    with pytest.raises(WeightsError, match=r"tokenizer/vocab.txt is not in weights.lock.*different weights.lock"):
        unpack(tar_path, tmp_path / "fresh", other)


def test_unpack_refuses_truncated_pack(packed, tmp_path):
    from avi.weights.pack import unpack

    lock, models, tar_path = packed
    short = tmp_path / "short.tar"
    _rewrite_tar(tar_path, short, lambda i, d: None if i.name.endswith("vocab.txt") else (i, d))
    with pytest.raises(InputError, match="missing from it"):
        unpack(short, tmp_path / "fresh", lock)


def test_unpack_not_a_tarball(env, tmp_path, capsys):
    p = tmp_path / "x.tar"
    p.write_bytes(b"not a tar at all" * 100)
    rc, out, err = cli(capsys, "weights", "unpack", str(p))
    assert rc == 2 and "cannot read weights tarball" in err


# ----------------------------------------------------------------- the lock file itself


def test_load_lock_rejects_unsafe_paths_and_false_pins(tmp_path):
    p = tmp_path / "weights.lock"
    p.write_text('[[weight]]\nname = "a"\nrole = "r"\npath = "../outside"\nsha256 = "ab"\nsize = 1\n')
    with pytest.raises(WeightsError, match="unsafe path"):
        load_lock(p)
    p.write_text('[[weight]]\nname = "a"\nrole = "r"\npath = "a"\nprofile = "gpu"\npinned = true\n'
                 '[weight.source]\nkind = "hf"\nrepo = "o/n"\nrevision = "main"\n')
    with pytest.raises(WeightsError, match="pinned = true but"):
        load_lock(p)
    p.write_text('[[weight]]\nname = "a"\nrole = "r"\npath = "a"\nprofile = "tpu"\n')
    with pytest.raises(WeightsError, match="profile must be one of"):
        load_lock(p)
    p.write_text('[[weight]]\nname = "a"\nrole = "r"\npath = "a"\nprofile = "gpu"\npinned = true\n'
                 '[weight.source]\nkind = "hf"\nrepo = "o/n"\nrevision = "' + "a" * 40 + '"\n'
                 '[[weight.files]]\npath = "/etc/passwd"\nsize = 1\nsha256 = "' + "b" * 64 + '"\n')
    with pytest.raises(WeightsError, match="unsafe path"):
        load_lock(p)


def test_real_lock_gpu_entries():
    """The repo's weights.lock: every gpu role has an hf entry; unpinned ones say so."""
    entries = load_lock(REPO / "weights.lock")
    gpu = select_entries(entries, "gpu")
    repos = {e.source["repo"] for e in gpu.values()}
    assert {"Qwen/Qwen3-32B", "Qwen/Qwen3-VL-8B-Instruct", "Qwen/Qwen3-Embedding-4B",
            "IDEA-Research/grounding-dino-base", "PaddlePaddle/PP-OCRv5_server_det",
            "PaddlePaddle/PP-OCRv5_server_rec", "openai/clip-vit-large-patch14",
            "Systran/faster-whisper-large-v3"} <= repos
    for e in gpu.values():
        assert e.kind == "hf" and e.license, e.name
        assert e.is_pinned == (e.pinned is True), e.name
        if not e.is_pinned:
            assert e.revision == "" and not e.files and e.pinned is False, e.name
        assert e.source.get("include"), e.name
