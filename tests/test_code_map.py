"""The code map (docs/code-map.md) names what exists and names every package; the README stays a short user's
document whose links lead somewhere (issue 54, item 4).

The code map's table, section "## Code map": the first column names modules and packages (the first one a path
from the repository root, `avi/...`; bare names after it are beside it), the second says the row's job, where a
backticked lowercase name (`loop`, `rules/`) is a module or sub-package of the row's package.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
AVI = REPO / "avi"
CODE_MAP = REPO / "docs" / "code-map.md"
README = REPO / "README.md"
MAX_README_LINES = 250
MAX_BLOCK_CHARS = 600

TICKED = re.compile(r"`([^`]+)`")
MODULE_NAME = re.compile(r"[a-z_][a-z0-9_]*/?")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
REPO_PATH = re.compile(r"(?:avi|scripts|tests|bench|prompts|docs|\.ci)/[\w./*-]*")


def _is_package(path: Path) -> bool:
    """A folder of avi that holds Python: an ``__init__.py`` or any ``.py`` file (namespace packages included)."""
    return path.is_dir() and any(path.glob("*.py"))


def _resolve(base: Path, name: str) -> Path | None:
    """``name`` (``loop``, ``loop.py``, ``rules/``) as a module or package under ``base``, or None."""
    if name.endswith("/"):
        return base / name.rstrip("/") if _is_package(base / name.rstrip("/")) else None
    if name.endswith(".py"):
        return base / name if (base / name).is_file() else None
    if (base / f"{name}.py").is_file():
        return base / f"{name}.py"
    return base / name if _is_package(base / name) else None


def _fenced_blocks_removed(text: str) -> list[str]:
    """The lines of a Markdown text with every fenced code block left out."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            out.append(line)
    return out


def _table_rows(section: str) -> list[list[str]]:
    """The body rows of the Markdown tables in ``section``, as stripped cells (header and rule rows left out)."""
    rows, header_next = [], True
    for line in section.splitlines():
        if not line.startswith("|"):
            header_next = True
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header_next:  # the header row of a new table
            header_next = False
            continue
        if all(re.fullmatch(r":?-+:?", c) for c in cells):
            continue
        rows.append(cells)
    return rows


def code_map_rows() -> list[tuple[list[str], str]]:
    """Each row of the code map: the names of its first column and the text of its second."""
    text = CODE_MAP.read_text(encoding="utf-8")
    section = text.split("\n## Code map\n", 1)[1].split("\n## ", 1)[0]
    return [(TICKED.findall(cells[0]), cells[1]) for cells in _table_rows(section)]


def named_paths() -> tuple[set[Path], list[str]]:
    """Every module and package the code map names (resolved), and the names that resolve to nothing."""
    found, missing = set(), []
    for names, job in code_map_rows():
        assert names and names[0].startswith("avi/"), f"a code-map row must start with an avi/ path: {names}"
        first = REPO / names[0].rstrip("/")
        beside = first.parent
        for i, name in enumerate(names):
            path = _resolve(REPO, name) if i == 0 else _resolve(beside, name)
            (found.add(path) if path else missing.append(name))
        package = first if names[0].endswith("/") else beside
        for name in TICKED.findall(job):
            if MODULE_NAME.fullmatch(name):
                path = _resolve(package, name)
                (found.add(path) if path else missing.append(f"{name} (in the row of {names[0]})"))
    return found, missing


def test_every_path_the_code_map_names_exists():
    found, missing = named_paths()
    assert found
    assert missing == [], f"the code map (docs/code-map.md) names what does not exist: {missing}"


def test_every_avi_path_on_the_code_map_page_exists():
    """The concept table and the notes name files too (`avi/tools/*.py` is a pattern that must match)."""
    text = CODE_MAP.read_text(encoding="utf-8")
    missing = [p for p in set(TICKED.findall(text)) if p.startswith("avi/")
               and not (list(REPO.glob(p)) if "*" in p else (REPO / p).exists())]
    assert missing == [], f"docs/code-map.md names paths that do not exist: {sorted(missing)}"


def test_every_package_and_top_level_module_is_on_the_code_map():
    found, _ = named_paths()
    packages = {p for p in AVI.rglob("*") if _is_package(p) and "__pycache__" not in p.parts}
    modules = {p for p in AVI.glob("*.py") if p.name != "__init__.py"}
    absent = sorted(str(p.relative_to(REPO)) for p in (packages | modules) - found)
    assert absent == [], f"not on the code map (docs/code-map.md): {absent}"


def _paragraphs(text: str) -> list[str]:
    """The prose paragraphs and list items of a Markdown text, tables and fenced code left out, each on one line."""
    out, block = [], []
    for line in [*_fenced_blocks_removed(text), ""]:
        starts_item = re.match(r"\s*(?:[-*]|\d+\.)\s", line)
        if not line.strip() or line.startswith("|") or line.startswith("#") or starts_item:
            if block:
                out.append(" ".join(block))
            block = [line.strip()] if starts_item else []
            continue
        block.append(line.strip())
    return out


def test_readme_is_short():
    text = README.read_text(encoding="utf-8")
    lines = len(text.splitlines())
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines (at most {MAX_README_LINES})"
    long_paragraphs = [p[:80] + f"... ({len(p)})" for p in _paragraphs(text) if len(p) > MAX_BLOCK_CHARS]
    assert long_paragraphs == [], f"README paragraphs over {MAX_BLOCK_CHARS} characters: {long_paragraphs}"
    cells = [c for row in _table_rows("\n".join(_fenced_blocks_removed(text))) for c in row]
    long_cells = [c[:80] + f"... ({len(c)})" for c in cells if len(c) > MAX_BLOCK_CHARS]
    assert long_cells == [], f"README table cells over {MAX_BLOCK_CHARS} characters: {long_cells}"


def test_the_paragraph_rules_see_paragraphs_items_and_cells():
    text = "# T\n\none\ntwo\n\n- a\n  b\n- c\n\n```\nx\n\ny\n```\n| h |\n|---|\n| cell |\n"
    assert _paragraphs(text) == ["one two", "- a b", "- c"]
    assert _table_rows(text) == [["cell"]]


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _broken_links(page: Path) -> list[str]:
    """The relative links of ``page`` whose file, or heading anchor in that file, does not exist."""
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):  # http:, mailto: ...
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", "\n".join(_fenced_blocks_removed(dest.read_text())), re.M)
            if anchor not in {_slug(h) for h in headings}:
                broken.append(target)
    return broken


def test_links_of_readme_and_docs_lead_somewhere():
    pages = [README, *sorted((REPO / "docs").glob("*.md"))]
    broken = {p.name: b for p in pages if (b := _broken_links(p))}
    assert broken == {}, f"links that lead nowhere: {broken}"


def test_readme_links_every_docs_page():
    linked = {(README.parent / t.partition("#")[0]).resolve() for t in LINK.findall(README.read_text())}
    unlinked = [p.name for p in sorted((REPO / "docs").glob("*.md")) if p.resolve() not in linked]
    assert unlinked == [], f"docs pages the README does not link: {unlinked}"


def test_repository_paths_in_readme_and_docs_exist():
    """Backticked paths such as `avi/index/lazy.py` or `scripts/bench_latency.py` in README and docs/ exist
    (`*` patterns must match something)."""
    missing = {}
    for page in [README, *sorted((REPO / "docs").glob("*.md"))]:
        for tick in TICKED.findall(page.read_text(encoding="utf-8")):
            if m := REPO_PATH.match(tick):
                p = m.group(0).rstrip(".,;:")
                if not (list(REPO.glob(p)) if "*" in p else (REPO / p).exists()):
                    missing.setdefault(page.name, []).append(p)
    assert missing == {}, f"paths named in README or docs/ that do not exist: {missing}"
