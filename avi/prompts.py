"""Prompt files (``prompts/*.md``) and their rendering.

Prompts are ``string.Template`` files (``$name`` placeholders), so JSON braces
in them need no escaping. Their structure follows the AVI paper's system
prompt (Fig. 5: role, current stage, core protocol, stage instruction, tool
descriptions, video length) in our own words.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from string import Template

from avi.errors import AviError


class PromptLibrary:
    """Loads and renders the prompt files of one directory.

    Args:
        directory: folder holding ``<name>.md`` files.
    """

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self._cache: dict[str, str] = {}

    def text(self, name: str) -> str:
        """Raw text of ``<name>.md``.

        Raises:
            AviError: the file does not exist.
        """
        if name not in self._cache:
            path = self.directory / f"{name}.md"
            try:
                self._cache[name] = path.read_text().strip()
            except FileNotFoundError:
                raise AviError(f"prompt file missing: {path}") from None
        return self._cache[name]

    def render(self, name: str, **values: object) -> str:
        """``<name>.md`` with every ``$placeholder`` filled.

        Raises:
            AviError: a placeholder has no value.
        """
        try:
            return Template(self.text(name)).substitute({k: str(v) for k, v in values.items()}).strip()
        except KeyError as exc:
            raise AviError(f"prompt {name}.md needs a value for {exc}") from None

    def fingerprint(self) -> str:
        """sha256 over all prompt files (names and contents), for traces and manifests."""
        h = hashlib.sha256()
        for p in sorted(self.directory.glob("*.md")):
            h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
        return h.hexdigest()
