#!/usr/bin/env python3
"""Check the answer README command 1 printed against a person's truth, by the strict rules of ``avi eval jsonl``.

Usage: ``.venv/bin/python .ci/readme_answer.py COMMAND OUTPUT``: COMMAND is README command 1 as
``.ci/readme_command.py`` printed it, OUTPUT a file holding what it printed. The README's
question must be a question of ``bench/questions/real.jsonl`` (same video file name, same text): its truth was
counted by a person in the frames (bench/REAL.md), never by avi. Exit 0 when the ``Answer:`` line is right under
the strict rules (a hedge or a refusal is wrong), 1 otherwise (no answer printed, or a wrong one), with one line
saying why.

This replaced the end-to-end test of the README question on the agent route (tests/test_e2e.py): CI runs that
very command as the user types it, so the check rides on it instead of a second run of the same question.
"""
import re
import shlex
import sys
from pathlib import Path

from avi.eval.jsonl import grade_jsonl, load_jsonl

REPO = Path(__file__).resolve().parent.parent
REAL = REPO / "bench" / "questions" / "real.jsonl"


def main() -> int:
    command, output = sys.argv[1], Path(sys.argv[2])
    argv = shlex.split(command.split("&&", 1)[-1])
    video, question = Path(argv[argv.index("--video") + 1]).name, argv[argv.index("--question") + 1]
    matches = [q for q in load_jsonl(REAL, REAL.parent) if Path(q.video).name == video and q.question == question]
    if len(matches) != 1:
        print(f"[ci] the README's question on {video} is not a question of {REAL.relative_to(REPO)} "
              "(its answer cannot be checked)", file=sys.stderr)
        return 1
    found = re.findall(r"^Answer: (.*\S.*)$", output.read_text(encoding="utf-8", errors="replace"), re.M)
    if not found:
        print("[ci] README command 1 printed no answer", file=sys.stderr)
        return 1
    answer = found[-1]
    grade = grade_jsonl(matches[0], {"status": "ok", "answer": answer})
    if not grade["correct"]:
        print(f"[ci] README command 1 answered {answer!r}; the person's count is {matches[0].gt} "
              f"({matches[0].qid}, strict rules)", file=sys.stderr)
        return 1
    print(f"[ci] README command 1's answer is right ({matches[0].qid}: {matches[0].gt})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
