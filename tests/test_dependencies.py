"""Every third-party package avi imports is declared in pyproject.toml, and requires-python is what the code needs."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Modules imported by avi that no install extra provides, each with the reason.
NOT_DECLARED = {
    "tensorflow": "avi/tfjs_convert.py runs in the throwaway converter venv setup builds (models/README.md)",
    "google": "protobuf, same converter venv",
    "paddleocr": "PaddleOCR 3.x is installed by hand on gpu nodes; setup does not install paddle (docs/tools.md)",
    "yaml": "PyYAML, only in avi/backends/paddle_ocr.py, installed with paddleocr",
    "groundingdino": "the optional groundingdino-py adapter (needs transformers 4.x, docs/tools.md)",
    "trackers": "Roboflow's trackers (ByteTrack, avi/index/tracks.py): scripts/setup.sh installs it with --no-deps, as it "
                "declares opencv-python beside our opencv-python-headless; what its tracker needs is in the cpu extra",
}
# Import names whose distribution is not installed in every test venv.
DISTRIBUTION = {"open_clip": "open-clip-torch", "qwen_vl_utils": "qwen-vl-utils", "ray": "ray",
                "huggingface_hub": "huggingface-hub", "transformers": "transformers", "torch": "torch",
                "torchvision": "torchvision"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared() -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"]) + [r for extra in project["optional-dependencies"].values() for r in extra]
    return {_norm(re.match(r"[A-Za-z0-9_.\-]+", r).group(0)) for r in reqs}


def _imported() -> dict[str, str]:
    """Top-level third-party module -> one file of avi/ importing it."""
    out: dict[str, str] = {}
    for path in sorted((REPO / "avi").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top != "avi" and top not in sys.stdlib_module_names:
                    out.setdefault(top, str(path.relative_to(REPO)))
    return out


def test_every_imported_package_is_declared():
    declared, installed = _declared(), packages_distributions()
    missing = []
    for module, where in _imported().items():
        if module in NOT_DECLARED:
            continue
        dists = {_norm(d) for d in installed.get(module, [])} | ({_norm(DISTRIBUTION[module])}
                                                                 if module in DISTRIBUTION else set())
        if not dists & declared:
            missing.append(f"{module} ({where}; distributions {sorted(dists) or 'unknown'})")
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"


def test_the_undeclared_list_is_not_stale():
    assert set(NOT_DECLARED) <= set(_imported()), set(NOT_DECLARED) - set(_imported())


def test_requires_python_admits_what_the_code_needs():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    low = tuple(int(x) for x in re.match(r">=\s*(\d+)\.(\d+)", project["requires-python"]).groups())
    uses_tomllib = any(re.search(r"^\s*import tomllib\b", p.read_text(), re.M) for p in (REPO / "avi").rglob("*.py"))
    if uses_tomllib:  # stdlib since 3.11, imported without a fallback
        assert low >= (3, 11), project["requires-python"]
    assert sys.version_info[:2] >= low
