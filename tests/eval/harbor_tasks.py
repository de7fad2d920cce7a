"""Harbor task directories written from Harbor's documented format, for the tests."""

from __future__ import annotations

import textwrap
from pathlib import Path


def write_task(root: Path, name: str, *, toml: str = "", instruction: str = "Do it.\n",
               test: str | None = None, solve: str | None = None,
               environment: dict[str, str] | None = None) -> Path:
    """A task folder: task.toml, instruction.md, environment/, tests/test.sh and, when
    given, solution/solve.sh."""
    task = root / name
    (task / "tests").mkdir(parents=True)
    (task / "task.toml").write_text(textwrap.dedent(toml))
    (task / "instruction.md").write_text(instruction)
    (task / "environment").mkdir()
    for rel, text in (environment or {}).items():
        (task / "environment" / rel).write_text(text)
    (task / "tests" / "test.sh").write_text(test if test is not None else (
        "#!/bin/bash\necho 0 > /logs/verifier/reward.txt\n"))
    if solve is not None:
        (task / "solution").mkdir()
        (task / "solution" / "solve.sh").write_text(solve)
    return task
