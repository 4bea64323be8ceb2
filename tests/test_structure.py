"""The shape of the code (issue 16): no import circle between avi's modules, every module says its job, and
modules stay small (a module past the limit must be listed, with its reason)."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

AVI = Path(__file__).resolve().parent.parent / "avi"
MAX_LINES = 500
OVER_LIMIT: set[str] = set()  # modules allowed past MAX_LINES, each with its reason (none today)


def _modules() -> dict[str, Path]:
    out = {}
    for p in AVI.rglob("*.py"):
        name = ".".join(p.relative_to(AVI.parent).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = p
    return out


def _import_graph(mods: dict[str, Path]) -> nx.DiGraph:
    """Module -> module edges for every ``import avi...`` / ``from avi... import`` (function-level ones too).
    ``from pkg import sub`` counts as importing ``pkg.sub`` when ``sub`` is a module, else ``pkg``. Importing
    ``pkg.sub`` also imports ``pkg`` (its ``__init__`` runs first), so it counts as importing every package above
    it, except the importer's own packages (already being imported)."""
    g = nx.DiGraph()
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("avi"):
                subs = [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in mods]
                targets = subs or [node.module]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("avi")]
            parts = [t.split(".") for t in targets]
            targets += [".".join(p[:i]) for p in parts for i in range(2, len(p))]  # the packages above
            for t in targets:
                if t in mods and t != name and not name.startswith(t + "."):  # a submodule reading its package
                    g.add_edge(name, t)
    return g


def test_no_import_circles():
    cycles = list(nx.simple_cycles(_import_graph(_modules())))
    assert cycles == [], "import circles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_every_module_starts_with_a_docstring():
    missing = [n for n, p in _modules().items()
               if p.read_text().strip() and ast.get_docstring(ast.parse(p.read_text())) is None]
    assert missing == []


def test_modules_stay_small():
    big = {n: len(p.read_text().splitlines()) for n, p in _modules().items()}
    over = {n: k for n, k in big.items() if k > MAX_LINES and n not in OVER_LIMIT}
    assert over == {}, f"modules over {MAX_LINES} lines: {over}"


def test_no_module_imports_another_modules_private_names():
    """A name with a leading underscore is its module's own: another module that needs it gets a public name
    (issue 35). Function-level imports count too."""
    found = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("avi"):
                found += [f"{name} imports {node.module}.{a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    assert found == [], "private names imported across modules: " + "; ".join(found)


AGENT_MAX_LINES = 3500


def test_the_agent_composes_small_parts():
    """Issue 35: Algorithm 1 reads in one file because the agent holds collaborators instead of inheriting
    mixins: no class in avi/agent has more than one base, and the package stays under AGENT_MAX_LINES lines."""
    total, mixed = 0, []
    for path in (AVI / "agent").rglob("*.py"):
        text = path.read_text()
        total += len(text.splitlines())
        mixed += [f"{path.name}: {n.name}" for n in ast.walk(ast.parse(text)) if isinstance(n, ast.ClassDef)
                  and len(n.bases) > 1]
    assert mixed == [], f"classes with several bases: {mixed}"
    assert total < AGENT_MAX_LINES, f"avi/agent has {total} lines"


LAYERS = [
    {"avi", "errors", "hashing", "offline", "places", "questions", "prompts", "replies", "tfjs_convert", "untrusted",
     "input_paths"},
    {"weights"}, {"serve"}, {"budget", "config_devices", "config_embedders", "config_agent", "config_file", "config"},
    {"video"}, {"backends"}, {"memory"}, {"index"}, {"tools"}, {"trace", "trace_values"}, {"agent"}, {"pipeline"},
    {"viewer"}, {"videos"}, {"jobs"}, {"eval"}, {"doctor"}, {"cli"},
]
"""The code map's layers (docs/code-map.md), bottom up: a module may import from its own row and the rows before it."""


def test_each_layer_imports_only_from_the_layers_below():
    def unit(module: str) -> str:
        return module.split(".")[1] if "." in module else "avi"

    rank = {u: i for i, layer in enumerate(LAYERS) for u in layer}
    mods = _modules()
    wrong = {f"{a} -> {b}" for a, b in _import_graph(mods).edges if rank[unit(b)] > rank[unit(a)]}
    assert set(map(unit, mods)) <= set(rank), set(map(unit, mods)) - set(rank)
    assert wrong == set()
