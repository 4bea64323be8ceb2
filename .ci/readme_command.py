#!/usr/bin/env python3
"""Print quick-start command N (1 or 2) of README.md exactly as the README prints it.

The quick start is the first ```bash block under the heading "## Quick start"; its commands are the non-comment
lines, in order. .ci/run runs what this prints, so CI runs what a user copies (issue 52).
"""
import re
import sys
from pathlib import Path

readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
section = readme.split("\n## Quick start", 1)
if len(section) != 2:
    sys.exit("readme_command: README.md has no '## Quick start' heading")
block = re.search(r"```bash\n(.*?)```", section[1], re.S)
if block is None:
    sys.exit("readme_command: the quick start has no ```bash block")
commands = [ln for ln in block.group(1).splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
n = int(sys.argv[1])
if len(commands) != 2 or not 1 <= n <= 2:
    sys.exit(f"readme_command: the quick start has {len(commands)} commands, expected exactly 2")
print(commands[n - 1])
