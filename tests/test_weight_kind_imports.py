"""Every module a weight kind's fetch, exporter or converter imports in avi's own process is installed by the
extras that scripts/setup.sh installs for the profiles whose entries use that kind (issue 52).

The imports are read from the code paths, not from a list: ``avi.weights.sources._fetch`` dispatches on
``entry.kind``; each kind's branch imports its module (``avi.weights.npm``, ``avi.weights.onnx_export``, ...), whose
imports (module level and inside functions) are followed through avi's own modules. A module that is only handed to
another interpreter by its ``__file__`` (``avi.tfjs_convert``, run by the converter environment that weights.lock's
``[weight.source.convert] requirements`` pin) is not imported in this process and is not followed.

The first command of README's quick start failed on a fresh machine because ``onnx`` (needed by the embedder's ONNX
export through ``torch.onnx``) was only in the ``test`` extra: this test fails for such a module.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, packages_distributions, requires
from pathlib import Path

from packaging.requirements import Requirement

from avi.weights.lock import load_lock

REPO = Path(__file__).resolve().parent.parent
SOURCES = REPO / "avi" / "weights" / "sources.py"
#: the extras scripts/setup.sh installs without --test, per profile (its EXTRAS line; the gpu profile's weights
#: are fetched on a connected machine with the hub extra, models/README.md)
SETUP_EXTRAS = {"cpu": ("cpu", "cpu-weights"), "test": ("cpu", "cpu-weights"), "gpu": ("hub",)}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def setup_extras_from_script() -> tuple[str, ...]:
    """The extras scripts/setup.sh installs without options (its ``EXTRAS="..."`` line)."""
    m = re.search(r'^EXTRAS="([^"]+)"', (REPO / "scripts" / "setup.sh").read_text(), re.M)
    assert m, "scripts/setup.sh has no EXTRAS= line"
    return tuple(m.group(1).split(","))


def install_closure(extras: tuple[str, ...]) -> set[str]:
    """Normalised names of every distribution ``pip install .[extras]`` installs: avi's dependencies and those
    extras from pyproject.toml, then their requirements from the installed metadata, markers evaluated."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    todo = [Requirement(r) for r in project["dependencies"]]
    for extra in extras:
        todo += [Requirement(r) for r in project["optional-dependencies"][extra]]
    seen: set[str] = set()
    while todo:
        req = todo.pop()
        name = _norm(req.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            reqs = requires(req.name) or []
        except PackageNotFoundError:
            continue
        for raw in reqs:
            sub = Requirement(raw)
            extra_env = [{"extra": e} for e in (req.extras or {""})]
            if sub.marker is None or any(sub.marker.evaluate(env) for env in extra_env):
                todo.append(sub)
    return seen


def kind_modules() -> dict[str, list[str]]:
    """``entry.kind`` -> the avi modules its branch of ``_fetch`` imports (none for the PyPI kinds, which run in
    sources.py itself)."""
    tree = ast.parse(SOURCES.read_text())
    fetch = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "_fetch")
    out: dict[str, list[str]] = {}
    for node in ast.walk(fetch):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare) \
                and isinstance(node.test.left, ast.Attribute) and node.test.left.attr == "kind" \
                and isinstance(node.test.comparators[0], ast.Constant):
            mods = [n.module for b in node.body for n in ast.walk(b) if isinstance(n, ast.ImportFrom) and n.module]
            out[node.test.comparators[0].value] = mods
    return out


def module_file(module: str) -> Path | None:
    base = REPO / Path(*module.split("."))
    for p in (base.with_suffix(".py"), base / "__init__.py"):
        if p.is_file():
            return p
    return None


def _only_file_of(tree: ast.AST, name: str) -> bool:
    """Whether ``name`` is used in ``tree`` only as ``name.__file__`` (a script handed to another interpreter)."""
    uses = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name]
    files = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "__file__"
             and isinstance(n.value, ast.Name) and n.value.id == name]
    return bool(uses) and len(uses) == len(files)


def third_party_imports(start: list[str], skip: set[str] = frozenset()) -> dict[str, str]:
    """Top-level third-party modules imported in-process from the avi modules ``start`` (followed through avi's
    modules, not into the avi modules ``skip``: other kinds' branches) -> the avi file that imports it."""
    out: dict[str, str] = {}
    seen: set[str] = set(skip)
    todo = list(start)
    while todo:
        mod = todo.pop()
        path = module_file(mod)
        if mod in seen or path is None:
            continue
        seen.add(mod)
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [(a.name, a.asname or a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [(node.module, None)] + [(f"{node.module}.{a.name}", a.asname or a.name) for a in node.names]
            else:
                continue
            for name, bound in names:
                top = name.split(".")[0]
                if top == "avi":
                    if bound and _only_file_of(tree, bound):
                        continue
                    todo.append(name)
                elif top not in sys.stdlib_module_names and top != "__future__":
                    out.setdefault(top, str(path.relative_to(REPO)))
    return out


def test_setup_installs_the_extras_this_test_checks():
    assert setup_extras_from_script() == SETUP_EXTRAS["cpu"]


def test_walk_finds_each_converter_and_skips_what_another_interpreter_runs():
    kinds = kind_modules()
    assert "avi.weights.onnx_export" in kinds["onnx-export"] and "avi.weights.npm" in kinds["npm-tfjs"]
    found = third_party_imports(kinds["onnx-export"])
    assert {"onnx", "torch", "transformers"} <= set(found)
    assert "tensorflow" not in third_party_imports(kinds["npm-tfjs"])  # avi.tfjs_convert: the converter venv's


def test_every_weight_kind_imports_only_what_the_profile_installs():
    entries = load_lock(REPO / "weights.lock").values()
    by_module = packages_distributions()
    kinds = kind_modules()
    missing = []
    for profile, extras in SETUP_EXTRAS.items():
        closure = install_closure(extras)
        used = sorted({e.kind for e in entries if e.profile == profile})
        for kind in used:
            mods = ["avi.weights.sources", *kinds.get(kind, [])]
            others = {m for k, ms in kinds.items() if k != kind for m in ms} - set(mods)
            for top, where in sorted(third_party_imports(mods, others).items()):
                dists = {_norm(d) for d in by_module.get(top, [top])}
                if not dists & closure:
                    missing.append(f"{profile}/{kind}: {where} imports {top} ({', '.join(sorted(dists))}), "
                                   f"not installed by avi[{','.join(extras)}]")
    assert not missing, "\n".join(missing)
